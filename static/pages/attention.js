/* The mask is the worldview: the causal (GPT) and bidirectional (BERT) attention masks for a short text,
   as tables (allowed cells filled and marked ●). Which model uses which comes from the model cards'
   "attention" field (GET /api/models). Below, the real attention weights from POST /api/attention
   for the same text and [PAD] slots, as heatmaps over the same grid, per layer and head or their
   mean, with a table of the followed row. The device computes them when the server is busy or away,
   and in the static copy (lib/compute.js, lib/engine_attention.js: the inspection graphs download
   when this page opens, not before).
   URL: text, row (followed position), pad ([PAD] slots shown), layer, head (-1 = mean), vals. */
import { el, clear, $, debounce, typingTarget } from "../lib/dom.js";
import { visibleChar, charName, pct, num, clamp, len, cut } from "../lib/text.js";
import { clearError, fieldMessage } from "../lib/errors.js";
import { info, latest } from "../lib/api.js";
import { ask, badge, isStatic, lastWhere, warmUp } from "../lib/compute.js";
import { onDevice, INSPECTION } from "../lib/engine_attention.js";
import { urlState, isProjector } from "../lib/state.js";
import { slides } from "../lib/slides.js";
import { valueText } from "../lib/chrome.js";
import { table } from "../lib/charts.js";
import { withTerms } from "../lib/glossary.js";

const MAX = 24;
const state = urlState({ text: "to be or not", row: 3, pad: 2 });
const v = state.values;
const attention = { gpt: "…", bert: "…" };
const SHORT = { "[CLS]": "[C]", "[SEP]": "[S]", "[PAD]": "[P]" };

const textBox = $("#a-text");
const rowSlider = $("#a-row");
const padSlider = $("#a-pad");

function sanitize() {
  v.text = cut(v.text, MAX);
  v.pad = clamp(Math.round(v.pad) || 0, 0, 4);
  const n = len(v.text);
  v.row = clamp(Math.round(v.row) || 0, 0, Math.max(0, n - 1));
}

function syncControls() {
  textBox.value = v.text;
  const n = len(v.text);
  rowSlider.max = String(Math.max(0, n - 1));
  rowSlider.value = String(v.row);
  rowSlider.disabled = n === 0;
  padSlider.value = String(v.pad);
  $("#a-pad-out").textContent = String(v.pad);
  const c = [...v.text][v.row];
  $("#a-row-out").textContent = n ? v.row + " (" + charName(c) + ")" : "–";
  valueText(rowSlider, n ? "position " + v.row + ", the character " + charName(c) : "no text");
  valueText(padSlider, v.pad === 0 ? "no [PAD] slots (off)" : v.pad + " [PAD] slot" + (v.pad === 1 ? "" : "s"));
}

function label(token) {
  return SHORT[token] || visibleChar(token);
}

function longName(token) {
  return SHORT[token] ? token : charName(token);
}

/* On a projector nothing scrolls: a grid's cells shrink to fit its column (--cell, read by
   static/projector.css), measured whenever the column changes size (a slide shown, a resize). */
const fitted = new WeakMap(); // container -> its table's column count
const sizer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
  for (const { target } of entries) cells(target);
});

function cells(container) {
  const cols = fitted.get(container);
  if (cols && container.clientWidth) container.style.setProperty("--cell", Math.max(6, Math.floor(container.clientWidth / cols)) + "px");
}

function fit(container, cols) {
  if (!isProjector()) return;
  if (!fitted.has(container) && sizer) sizer.observe(container);
  fitted.set(container, cols);
  cells(container);
}

/* tokens: what the model reads; allowed(i, j): may query i attend to key j; focus: highlighted row */
function grid(container, title, tokens, allowed, focus) {
  const n = tokens.length;
  let count = 0;
  const body = tokens.map((q, i) => {
    const cells = tokens.map((k, j) => {
      const ok = allowed(i, j);
      if (ok) count++;
      return el("td", { class: ok ? "allowed" : "blocked", title: longName(q) + " → " + longName(k) + (ok ? ": allowed" : ": blocked") }, [
        el("span", { "aria-hidden": "true", text: ok ? "●" : "·" }),
        el("span", { class: "sr-only", text: ok ? "sees" : "blocked" }),
      ]);
    });
    return el("tr", { class: i === focus ? "focus-row" : null }, [
      el("th", { scope: "row", title: longName(q) + " at " + i, text: label(q) })].concat(cells));
  });
  const table = el("table", { class: "mask-grid" }, [
    el("caption", {}, [title, el("br"), el("span", { class: "axis-note", text: count + " of " + n * n + " cells allowed · rows look at columns" })]),
    el("thead", {}, el("tr", {}, [el("th", { scope: "col" }, el("span", { class: "axis-note", text: "q\\k" }))]
      .concat(tokens.map((k, j) => el("th", { scope: "col", title: longName(k) + " at " + j, text: label(k) }))))),
    el("tbody", {}, body),
  ]);
  clear(container).appendChild(table);
  fit(container, n + 1);
  return count;
}

function render() {
  const chars = [...v.text];
  const n = chars.length;
  grid($("#a-gpt-grid"), "GPT · attention: " + attention.gpt + " (lower triangle)", chars, (i, j) => j <= i, v.row);
  const bertTokens = ["[CLS]"].concat(chars, ["[SEP]"], Array(v.pad).fill("[PAD]"));
  grid($("#a-bert-grid"), "BERT · attention: " + attention.bert + " (every non-[PAD] column)", bertTokens,
    (i, j) => bertTokens[j] !== "[PAD]", v.row + 1);
  const summary = $("#a-summary");
  if (!n) {
    summary.textContent = "Type some text to see its masks.";
    return;
  }
  const c = chars[v.row];
  const seen = chars.slice(0, v.row + 1).map(visibleChar).join("");
  summary.textContent = "Character " + charName(c) + " at position " + v.row + ": GPT may look at " + (v.row + 1) +
    " character" + (v.row ? "s" : "") + " (“" + seen + "”), never ahead. BERT may look at all " + n +
    " characters plus [CLS] and [SEP]" + (v.pad ? "; only the " + v.pad + " [PAD] slot" + (v.pad > 1 ? "s are" : " is") + " hidden." : ".") +
    " [C] = [CLS], [S] = [SEP], [P] = [PAD].";
}

/* Counted in characters as the models count them (code points, so an emoji is one); a longer
   text is cut, and the page says so beside the box. */
textBox.addEventListener("input", () => {
  const n = len(textBox.value);
  fieldMessage(textBox, n > MAX ? "Cut to " + MAX + " characters (the grids stay readable up to " + MAX + ")." : "", "notice");
  state.set({ text: textBox.value });
  sanitize();
  state.write();
  syncControls();
  render();
});
rowSlider.addEventListener("input", () => {
  state.set({ row: Number(rowSlider.value) });
  syncControls();
  render();
});
padSlider.addEventListener("input", () => {
  state.set({ pad: Number(padSlider.value) });
  syncControls();
  render();
});
$("#a-reset").addEventListener("click", () => {
  state.reset();
  syncControls();
  render();
});

sanitize();
state.write();
syncControls();
render();
info().then((info) => {
  attention.gpt = info.cards.gpt ? info.cards.gpt.attention : "not in this model set";
  attention.bert = info.cards.bert ? info.cards.bert.attention : "not in this model set";
  $("#a-gpt-card").textContent = "(model card: attention = " + attention.gpt + ")";
  $("#a-bert-card").textContent = "(model card: attention = " + attention.bert + ")";
  render();
}).catch(() => {});

/* ---------- the real weights ---------- */
const weights = urlState({ layer: -1, head: -1, vals: false });
const pick = weights.values; // layer, head, vals
let data = null;
const loads = latest(); // the latest answer wins

const layerSel = $("#aw-layer");
const headSel = $("#aw-head");

/* the server sends the chosen layer/head (or their mean) for each model: (query, key) */
const matrix = (m) => m.weights;

function colour(w) {
  // white -> navy (#0b2e5c); sqrt so small weights still show
  const t = Math.sqrt(Math.max(0, Math.min(1, w)));
  const c = (a, b) => Math.round(a + (b - a) * t);
  return "rgb(" + c(255, 11) + "," + c(255, 46) + "," + c(255, 92) + ")";
}

function heatmap(container, title, tokens, w, allowed, focus) {
  const rows = tokens.map((q, i) => el("tr", { class: i === focus ? "focus-row" : null }, [
    el("th", { scope: "row", title: longName(q) + " at " + i, text: label(q) }),
  ].concat(tokens.map((k, j) => {
    if (!allowed(i, j)) {
      return el("td", { class: "blocked", title: longName(q) + " → " + longName(k) + ": blocked (weight " + num(w[i][j], 4) + ")" },
        el("span", { class: "sr-only", text: "blocked" }));
    }
    const td = el("td", { title: longName(q) + " → " + longName(k) + ": " + pct(w[i][j], 1) },
      el("span", { class: "v", text: Math.round(w[i][j] * 100) }));
    td.style.background = colour(w[i][j]);
    if (w[i][j] > 0.45) td.style.color = "#fff";
    return td;
  }))));
  const table = el("table", { class: "heat" + (pick.vals ? " show-values" : ""), "aria-label": title }, [
    el("caption", { text: title }),
    el("thead", {}, el("tr", {}, [el("th", { scope: "col", text: "q\\k" })].concat(
      tokens.map((k, j) => el("th", { scope: "col", title: longName(k) + " at " + j, text: label(k) }))))),
    el("tbody", {}, rows),
  ]);
  clear(container).appendChild(table);
  fit(container, tokens.length + 1);
}

function which() {
  const l = pick.layer < 0 ? "mean of all layers" : "layer " + (pick.layer + 1);
  const h = pick.head < 0 ? "mean of the heads" : "head " + (pick.head + 1);
  return l + ", " + h;
}

function draw() {
  if (!data) return;
  const focus = Number(rowSlider.value) || 0;
  const g = data.gpt, b = data.bert;
  const gw = matrix(g), bw = matrix(b);
  heatmap($("#aw-gpt"), "GPT · " + which(), g.tokens, gw, (i, j) => j <= i, focus);
  heatmap($("#aw-bert"), "BERT · " + which(), b.tokens, bw, (i, j) => b.tokens[j] !== "[PAD]", focus + 1);
  $("#aw-status").textContent = "Live from the selected models, for the text above.";
  const check = clear($("#aw-check-text"));
  const agree = (x) => (typeof x === "number" ? x.toExponential(1) : "(not recorded)");
  const logits = lastWhere() === "device"
    ? "when this copy of the playground was made, their logits on a test sentence agreed with the served models' logits to "
    : "their logits agree with the served models' logits to ";
  for (const part of withTerms(logits +
    agree(g.served_logits_max_abs_diff) + " (GPT) and " + agree(b.served_logits_max_abs_diff) +
    " (BERT); every row sums to 1 within " + Math.max(g.row_sum_max_error, b.row_sum_max_error).toExponential(1) +
    "; the largest weight on a blocked cell is " + Math.max(g.blocked_max, b.blocked_max) + ".")) {
    check.append(part);
  }
  const t = clear($("#aw-table"));
  const q = g.tokens[focus];
  if (q === undefined) return;
  const keys = b.tokens.map((k, j) => [j, k]);
  t.appendChild(table("Weights of the followed character " + charName(q) + " (position " + focus + "), " + which(),
    ["Key", "GPT", "BERT"], keys.map(([j, k]) => {
      const gi = j - 1; // BERT's key j is text position j - 1 ([CLS] first)
      const gv = gi >= 0 && gi < g.tokens.length ? (gi <= focus ? pct(gw[focus][gi], 1) : "blocked") : "–";
      const bv = k === "[PAD]" ? "blocked" : pct(bw[focus + 1][j], 1);
      return [longName(k) + " (" + j + ")", gv, bv];
    })));
}

function fillSelect(sel, n, word, current) {
  clear(sel);
  sel.appendChild(el("option", { value: "-1", text: word === "layer" ? "mean of all layers" : "mean of the heads" }));
  for (let i = 0; i < n; i++) sel.appendChild(el("option", { value: String(i), text: word + " " + (i + 1) }));
  sel.value = String(current);
}

async function load() {
  const text = cut(textBox.value, MAX);
  if (!text) {
    data = null;
    clear($("#aw-gpt"));
    clear($("#aw-bert"));
    $("#aw-status").textContent = "Type some text above to see the weights.";
    return;
  }
  const current = loads.begin();
  const body = { text, pad: Number(padSlider.value) || 0, layer: Math.round(pick.layer), head: Math.round(pick.head) };
  try {
    const r = await ask("/api/attention", body, onDevice.attention); // the server, or this device
    if (!current()) return;
    clearError();
    data = r;
    fillSelect(layerSel, r.gpt.n_layer, "layer", pick.layer);
    fillSelect(headSel, r.gpt.n_head, "head", pick.head);
    weights.write();
    draw();
  } catch (err) {
    // A shared link's layer or head beyond this model set's size: show the mean instead.
    if (current() && (err.parameter === "layer" || err.parameter === "head") && pick[err.parameter] !== -1) {
      weights.set({ [err.parameter]: -1 });
      clearError();
      load();
    } /* anything else is shown in the error box */
  }
}

const reload = debounce(load, 250);
textBox.addEventListener("input", reload);
padSlider.addEventListener("input", reload);
rowSlider.addEventListener("input", draw);
$("#a-reset").addEventListener("click", () => setTimeout(load, 0));
layerSel.addEventListener("change", () => { weights.set({ layer: Number(layerSel.value) }); load(); });
headSel.addEventListener("change", () => { weights.set({ head: Number(headSel.value) }); load(); });
const vals = $("#aw-values");
vals.checked = Boolean(pick.vals);
vals.addEventListener("change", () => { weights.set({ vals: vals.checked }); draw(); });
document.addEventListener("keydown", (e) => {
  if (!data || typingTarget(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
  const step = (sel, key, n, d) => {
    const next = ((pick[key] + 1 + d + n + 1) % (n + 1)) - 1; // cycles mean, 1, 2, ..., n
    weights.set({ [key]: next });
    sel.value = String(next);
    load();
  };
  if (e.key === "[" || e.key === "]") step(layerSel, "layer", data.gpt.n_layer, e.key === "]" ? 1 : -1);
  else if (e.key === "-" || e.key === "=") step(headSel, "head", data.gpt.n_head, e.key === "=" ? 1 : -1);
});
badge($("#aw-status")); // where the weights are computed: this server or this device
if (isStatic()) warmUp(INSPECTION); // the static copy: the inspection graphs download now
load();
if (isProjector()) slides(document.querySelectorAll("main > section.panel:has(.grid-2 .grid-scroll, .grid-2 .heat-wrap)")); // one grid pair at a time, ←/→
