/* Page chrome shared by every page, started by base.html: projector mode (projector=1) and the
   links that carry it and the model set, hide=<control names>, the model-set picker, the switch for
   single-key shortcuts, the share panel (share.js), a phone's first screen (phone.js: the controls
   before a long intro; the phone's menu is menu.js, a classic script that runs before the page is drawn).
   shortcutsEnabled()       false once the user switched single-key shortcuts off (WCAG 2.1.4)
   valueText(slider, text)  aria-valuetext: a slider announces its value as its label says it */
import { el, $ } from "./dom.js";
import { models } from "./api.js";
import { modelId, isProjector, hiddenControls, setParams } from "./state.js";
import { drawSharePanel } from "./share.js";
import { fitScreen } from "./fit.js";
import { controlsFirst } from "./phone.js";

/* ---------- projector mode and hide= ---------- */
/* Links to other pages carry the shared state: projector mode and the chosen model set. */
let fitting = false;
function applyProjector(on) {
  document.documentElement.classList.toggle("projector", on);
  if (on && !fitting && document.querySelector("main")) { fitting = true; fitScreen(document.querySelector("main")); } // a slide never scrolls
  const button = $("#projector-toggle");
  if (button) button.setAttribute("aria-pressed", on ? "true" : "false");
  const model = modelId();
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
  const on = !isProjector();
  setParams({ projector: on ? "1" : null });
  applyProjector(on);
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
   with `model` in the URL (omitted for the default), so the link reproduces the choice: a click or
   tap at once, the keyboard on Enter or on leaving the box (arrow keys alone do not reload). */
function drawModelPicker() {
  models().then((data) => {
    // "not loaded" sets load on first use; a set that failed to load is not offered
    // a fine-tuned classifier is not a GPT or BERT: it answers on /finetune only
    const pretrained = new Set((data.families || []).map((f) => f.name)); // the server's model families
    const sets = (data.sets || []).filter((s) => (s.status !== "failed" || s.id === modelId())
      && (!s.families || s.families.some((f) => pretrained.has(f))));
    if (sets.length <= 1 || $("#model-picker")) return;
    const current = modelId() || data.default;
    const select = el("select", { id: "model-picker", "aria-describedby": "model-picker-note" }, sets.map((s) =>
      el("option", { value: s.id, selected: s.id === current ? true : null,
        text: (s.name || s.id) + (s.families ? " (" + s.families.join(" + ").toUpperCase() + ")" : "") })));
    // A choice is committed by a click or tap at once; with the keyboard, arrows only move through the
    // list (browsers fire "change" on every arrow key) and Enter or leaving the box commits it.
    let browsing = false;
    const commit = () => {
      browsing = false;
      if (select.value === current) return;
      const p = new URLSearchParams(location.search);
      if (select.value === data.default) p.delete("model");
      else p.set("model", select.value);
      const query = p.toString();
      location.assign(location.pathname + (query ? "?" + query : ""));
    };
    select.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); commit(); }
      else if (e.key === "Escape") { select.value = current; browsing = false; }
      else if (e.key === " " || e.key === "F4" || e.altKey) browsing = false; // opens the list: its choice commits
      else if (e.key !== "Tab") browsing = true;
    });
    select.addEventListener("pointerdown", () => { browsing = false; });
    select.addEventListener("change", () => { if (!browsing) commit(); });
    select.addEventListener("blur", () => { if (browsing) commit(); });
    const box = el("div", { class: "model-pick" }, [
      el("label", { for: "model-picker", text: "Model" }), select,
      el("span", { id: "model-picker-note", class: "sr-only",
        text: "Choosing a model reloads the page; with the keyboard, press Enter to choose." }),
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
let switchedOff = false;
export const shortcutsEnabled = () => !switchedOff && shortcutsOn();

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

export function valueText(slider, text) {
  if (slider) slider.setAttribute("aria-valuetext", text);
}

/* Module scripts run once the document is parsed: the page is there. embed=1: the page is a class's
   applet stage inside the class page's frame (lib/class_applet.js): no site header, navigation or footer. */
document.documentElement.classList.toggle("embedded", new URLSearchParams(location.search).get("embed") === "1");
applyProjector(isProjector());
applyHide();
controlsFirst();
drawShortcutSwitches();
drawModelPicker();
drawSharePanel();
const projectorButton = $("#projector-toggle");
if (projectorButton) projectorButton.addEventListener("click", toggleProjector);
