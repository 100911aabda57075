/* Page chrome shared by every applet: projector mode (projector=1) and the links that carry it,
   hide=<control names>, the model-set picker, the switch for single-key shortcuts, and slider
   value texts. Extends PP (common.js). */
"use strict";

(function () {
  const { el, $, models, chosenModel } = PP;

  /* ---------- projector mode and hide= ---------- */
  function isProjector() {
    return new URLSearchParams(location.search).get("projector") === "1";
  }

  /* Links to other pages carry the shared state: projector mode and the chosen model set. */
  function applyProjector(on) {
    document.documentElement.classList.toggle("projector", on);
    const button = $("#projector-toggle");
    if (button) button.setAttribute("aria-pressed", on ? "true" : "false");
    const model = chosenModel();
    for (const link of document.querySelectorAll("a[href^='/']:not([data-own-state])")) {
      const url = new URL(link.getAttribute("href"), location.origin);
      if (url.pathname.startsWith("/api/") || url.pathname.startsWith("/static/")) continue;
      if (on) url.searchParams.set("projector", "1");
      else url.searchParams.delete("projector");
      if (model) url.searchParams.set("model", model);
      else url.searchParams.delete("model");
      link.setAttribute("href", url.pathname + url.search + url.hash);
    }
  }

  function toggleProjector() {
    const p = new URLSearchParams(location.search);
    const on = p.get("projector") !== "1";
    if (on) p.set("projector", "1");
    else p.delete("projector");
    const query = p.toString();
    history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
    applyProjector(on);
    PP.urlChanged();
  }

  function hiddenControls() {
    const raw = new URLSearchParams(location.search).get("hide") || "";
    return raw.split(",").map((s) => s.trim()).filter(Boolean);
  }

  function applyHide() {
    const hide = new Set(hiddenControls());
    const names = [];
    for (const node of document.querySelectorAll("[data-control]")) {
      names.push(node.dataset.control);
      if (hide.has(node.dataset.control)) node.hidden = true;
    }
    const list = $("#control-names");
    if (list && names.length) list.textContent = names.join(", ");
  }

  /* A <select> in the header once the server lists more than one set. Choosing reloads the page
     with `model` in the URL (omitted for the default), so the link reproduces the choice. */
  function drawModelPicker() {
    models().then((data) => {
      // "not loaded" sets load on first use; a set that failed to load is not offered
      // a fine-tuned classifier is not a GPT or BERT: it answers on /finetune only
      const sets = (data.sets || []).filter((s) => (s.status !== "failed" || s.id === chosenModel())
        && (s.families || ["gpt"]).some((f) => f === "gpt" || f === "bert"));
      if (sets.length <= 1 || $("#model-picker")) return;
      const current = chosenModel() || data.default;
      const select = el("select", { id: "model-picker", "aria-describedby": "model-picker-note" }, sets.map((s) =>
        el("option", { value: s.id, selected: s.id === current ? true : null,
          text: (s.name || s.id) + (s.families ? " (" + s.families.join(" + ").toUpperCase() + ")" : "") })));
      select.addEventListener("change", () => {
        const p = new URLSearchParams(location.search);
        if (select.value === data.default) p.delete("model");
        else p.set("model", select.value);
        const query = p.toString();
        location.assign(location.pathname + (query ? "?" + query : ""));
      });
      const box = el("div", { class: "model-pick" }, [
        el("label", { for: "model-picker", text: "Model" }), select,
        el("span", { id: "model-picker-note", class: "sr-only", text: "Changing the model reloads the page." }),
      ]);
      const toggle = $("#projector-toggle");
      if (toggle) toggle.parentNode.insertBefore(box, toggle);
      applyProjector(isProjector());
    }).catch(() => {});
  }

  /* ---------- single-key shortcuts can be switched off (WCAG 2.1.4), remembered per browser ---------- */
  const SHORTCUTS_KEY = "pp-shortcuts";
  function shortcutsOn() {
    try {
      return localStorage.getItem(SHORTCUTS_KEY) !== "off";
    } catch (err) {
      return true;
    }
  }

  /* Every .key-hints paragraph gets the switch: one checkbox per page, all sharing the setting. */
  function drawShortcutSwitches() {
    document.querySelectorAll(".key-hints").forEach((hints, i) => {
      const id = "shortcuts-" + i;
      const box = el("input", { type: "checkbox", id, class: "shortcuts-switch", checked: shortcutsOn() ? true : null });
      box.addEventListener("change", () => {
        try {
          localStorage.setItem(SHORTCUTS_KEY, box.checked ? "on" : "off");
        } catch (err) { /* private mode: the switch still works for this page */ }
        document.documentElement.classList.toggle("no-shortcuts", !box.checked);
        for (const other of document.querySelectorAll(".shortcuts-switch")) other.checked = box.checked;
        switchedOff = !box.checked;
      });
      hints.appendChild(el("span", { class: "shortcuts-toggle" }, [box, el("label", { for: id, text: "single-key shortcuts on" })]));
    });
    document.documentElement.classList.toggle("no-shortcuts", !shortcutsOn());
  }
  let switchedOff = false;
  const shortcutsEnabled = () => !switchedOff && shortcutsOn();

  /* aria-valuetext: a slider announces "0.80" as its label says it ("0.80", "off", "15 %"). */
  function valueText(slider, text) {
    if (slider) slider.setAttribute("aria-valuetext", text);
  }

  function init() {
    applyProjector(isProjector());
    applyHide();
    drawShortcutSwitches();
    drawModelPicker();
    const button = $("#projector-toggle");
    if (button) button.addEventListener("click", toggleProjector);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();

  PP.isProjector = isProjector;
  PP.hiddenControls = hiddenControls;
  PP.shortcutsEnabled = shortcutsEnabled;
  PP.valueText = valueText;
})();
