/* The Generation Walkthrough's distribution chart: GPT's next-character distribution three ways
   (raw softmax, after temperature, after top-k / top-p), as tabbed panels or side by side, with each
   panel's entropy and a table of every character. pages/generate.js asks; this draws.
   showDists(view)   which panel shows;  wireTabs(onChange)  the tabs' clicks and arrow keys
   drawDists(data, sampled, knobs, rows) */
import { el, clear, $ } from "../lib/dom.js";
import { charName, pct, num } from "../lib/text.js";
import { bars, table } from "../lib/charts.js";
import { withTerms } from "../lib/glossary.js";

/* The tabs: one panel at a time ("raw", "tempered", "final"), or "all" three side by side. */
export function showDists(view) {
  for (const tab of document.querySelectorAll("#g-tabs [role='tab']")) {
    const on = tab.dataset.view === view;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    tab.tabIndex = on ? 0 : -1;
  }
  for (const panel of document.querySelectorAll("#g-dists .dist-panel")) {
    panel.hidden = view !== "all" && panel.dataset.dist !== view;
  }
  $("#g-dists").classList.toggle("one", view !== "all");
}

/* A tab chosen by click or by ←/→ on the focused tab: onChange(its view). */
export function wireTabs(onChange) {
  $("#g-tabs").addEventListener("click", (event) => {
    const tab = event.target.closest("[role='tab']");
    if (tab) onChange(tab.dataset.view);
  });
  $("#g-tabs").addEventListener("keydown", (event) => {
    const tabs = [...document.querySelectorAll("#g-tabs [role='tab']")];
    const i = tabs.indexOf(event.target);
    const move = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (i < 0 || !move) return;
    event.preventDefault();
    event.stopPropagation();
    const next = tabs[(i + move + tabs.length) % tabs.length];
    onChange(next.dataset.view);
    next.focus();
  });
}

/* The three panels (raw, after temperature, after top-k / top-p) of the top `rows` characters, the
   sampled one added when it is not among them, and the table of all. knobs: temperature, top_k, top_p. */
export function drawDists(data, sampled, knobs, rows) {
  const v = knobs;
  const order = data.chars.map((_, i) => i).sort((a, b) => data.raw[b] - data.raw[a]);
  let shown = order.slice(0, rows);
  if (sampled !== undefined && !shown.includes(sampled)) shown = shown.concat([sampled]);
  const panels = [
    ["raw", "1. Raw softmax", "the model's own probabilities"],
    ["tempered", v.temperature === 0 ? "2. Temperature 0 (greedy)" : "2. After temperature " + num(v.temperature, 2),
      v.temperature === 0 ? "greedy: the top character only" : "softmax(logits ÷ " + num(v.temperature, 2) + ")"],
    ["final", "3. After top-k / top-p", "k " + (v.top_k || "off") + " · p " + (v.top_p >= 1 ? "off" : num(v.top_p, 2)) +
      " · renormalised · sampled from"],
  ];
  const box = clear($("#g-dists"));
  for (const [field, title, sub] of panels) {
    const chart = el("div", { class: "chart" });
    box.appendChild(el("section", { class: "card dist-panel", id: "g-panel-" + field, role: "tabpanel",
      "aria-labelledby": "g-tab-" + field, dataset: { dist: field } }, [
      el("h3", {}, withTerms(title)),
      el("p", { class: "sub" }, withTerms(sub)),
      el("p", { class: "entropy" }, withTerms("entropy H = ").concat(
        [el("strong", { class: "entropy-value", text: num(data.entropy[field], 3) })], withTerms(" nats"))),
      chart,
    ]));
    const bar = shown.map((i) => {
      const marks = [];
      if (field === "final" && !data.kept[i]) marks.push("cut");
      if (i === sampled) marks.push("sampled");
      return { char: data.chars[i], prob: data[field][i], marks };
    });
    bars(chart, bar, { label: title, table: false });
    const hidden = data.chars.length - shown.length;
    if (hidden > 0) chart.appendChild(el("p", { class: "note", text: "+ " + hidden + " less likely characters (see the table)" }));
  }
  const tableBox = clear($("#g-dist-table"));
  tableBox.appendChild(table("All " + data.chars.length + " characters, most likely first",
    ["Character", "Raw", "After temperature", "Final", "Kept"],
    order.map((i) => [charName(data.chars[i]), pct(data.raw[i], 2), pct(data.tempered[i], 2), pct(data.final[i], 2),
      (data.kept[i] ? "kept" : "cut") + (i === sampled ? ", sampled" : "")])));
  if (data.unknown_chars && data.unknown_chars.length) {
    tableBox.appendChild(el("p", { class: "note", text: "Not in the vocabulary (read as [UNK]): " +
      data.unknown_chars.map((u) => charName(u.char)).join(", ") }));
  }
}
