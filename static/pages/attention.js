/* The mask is the worldview: the attention masks of every family with a mask (GPT causal, BERT
   bidirectional, T5 prefix, PLM permuted: static/families/<name>.js `mask`) for a short text, as
   grids side by side (allowed cells filled and marked ●). Which model a set uses for each comes from
   its cards' "attention" field (GET /api/models). Below (attention_weights.js), the real attention
   weights from POST /api/attention for the same text, [PAD] slots and order.
   URL: text, row (followed position), pad ([PAD] slots shown), seed (PLM's order), layer, head, vals. */
import { el, clear, $, typingTarget } from "../lib/dom.js";
import { charName, clamp, len, cut } from "../lib/text.js";
import { fieldMessage } from "../lib/errors.js";
import { info, families } from "../lib/api.js";
import { urlState } from "../lib/state.js";
import { valueText } from "../lib/chrome.js";
import { know, label, PIECES } from "../families/index.js";
import { MASKED, masked, grid, queryTitles } from "./attention_draw.js";
import { weights } from "./attention_weights.js";

const MAX = 24;
const MAX_SEED = 2 ** 32 - 1;
const state = urlState({ text: "to be or not", row: 3, pad: 2, seed: 0 });
const v = state.values;
const cards = {}; // family -> its card's attention ("…" until the cards arrive)

const textBox = $("#a-text");
const rowSlider = $("#a-row");
const padSlider = $("#a-pad");
const seedBox = $("#a-seed");

function sanitize() {
  v.text = cut(v.text, MAX);
  v.pad = clamp(Math.round(v.pad) || 0, 0, 4);
  v.seed = clamp(Math.round(v.seed) || 0, 0, MAX_SEED);
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
  seedBox.value = String(v.seed);
  $("#a-pad-out").textContent = String(v.pad);
  const c = [...v.text][v.row];
  $("#a-row-out").textContent = n ? v.row + " (" + charName(c) + ")" : "–";
  valueText(rowSlider, n ? "position " + v.row + ", the character " + charName(c) : "no text");
  valueText(padSlider, v.pad === 0 ? "no [PAD] slots (off)" : v.pad + " [PAD] slot" + (v.pad === 1 ? "" : "s"));
}

/* A card per mask: each family's one line of code and its rule in words. */
function lines() {
  const box = clear($("#a-lines"));
  for (const name of MASKED) {
    const m = PIECES[name].mask;
    box.append(el("div", { class: "card" }, [
      el("h3", {}, [label(name) + " · " + m.kind + " ", el("span", { class: "note", id: "a-" + name + "-card",
        text: "(model card: attention = " + (cards[name] || "…") + ")" })]),
      el("code", { class: "code-line", text: m.code }),
      el("p", { text: m.words }),
    ]));
  }
}

/* One wrapper per family for its grid (#a-<name>-grid), made once. */
function containers(box, id) {
  return MASKED.map((name) => {
    let node = document.getElementById(id(name));
    if (!node) box.append(node = el("div", { class: "grid-scroll", id: id(name) }));
    return node;
  });
}

function render() {
  const chars = [...v.text];
  const n = chars.length;
  const boxes = containers($("#a-grids"), (name) => "a-" + name + "-grid");
  for (const id of ["#a-grids", "#aw-grids"]) {
    $(id).classList.toggle("wide-text", n > 16); // two rows on a projector
    // as many columns as there are masks (static/projector.css), whatever families there are
    $(id).style.setProperty("--masks", String(MASKED.length));
    $(id).style.setProperty("--half-masks", String(Math.ceil(MASKED.length / 2)));
  }
  const seen = [];
  MASKED.forEach((name, k) => {
    const m = PIECES[name].mask;
    if (!n) { clear(boxes[k]); return; }
    const layout = masked(name, chars, v);
    const focus = layout.row(v.row);
    grid(boxes[k], [label(name) + " · " + m.kind, el("span", { class: "shape", text: " (" + m.shape + ")" })], layout.seq,
      layout.allowed, focus, queryTitles(layout, chars));
    let count = 0;
    for (let j = 0; j < layout.seq.length; j++) if (layout.allowed(focus, j)) count++;
    seen.push(label(name) + " " + count + " of its " + layout.seq.length);
    if (layout.order) {
      boxes[k].append(el("p", { class: "note", text: "Order (seed " + v.seed + "): " +
        layout.order.map((i) => charName(chars[i])).join(" → ") + "; the last " + layout.targets.length + " are guessed." }));
    }
  });
  const summary = $("#a-summary");
  if (!n) {
    summary.textContent = "Type some text to see its masks.";
    return;
  }
  summary.textContent = "Character " + charName(chars[v.row]) + " at position " + v.row + " may look at: " +
    seen.join(", ") + " places (the highlighted rows).";
}

let real = null; // the real weights (attention_weights.js): reload on a new text, [PAD] or order; redraw on a new row

function changed(patch) {
  state.set(patch);
  sanitize();
  state.write();
  syncControls();
  render();
  if (real) ("row" in patch ? real.draw() : real.reload());
}

/* Counted in characters as the models count them (code points, so an emoji is one); a longer
   text is cut, and the page says so beside the box. */
textBox.addEventListener("input", () => {
  const n = len(textBox.value);
  fieldMessage(textBox, n > MAX ? "Cut to " + MAX + " characters (the grids stay readable up to " + MAX + ")." : "", "notice");
  changed({ text: textBox.value });
});
rowSlider.addEventListener("input", () => changed({ row: Number(rowSlider.value) }));
padSlider.addEventListener("input", () => changed({ pad: Number(padSlider.value) }));
seedBox.addEventListener("change", () => changed({ seed: Number(seedBox.value) }));
const shuffle = () => changed({ seed: (v.seed + 1) % (MAX_SEED + 1) });
$("#a-shuffle").addEventListener("click", shuffle);
$("#a-reset").addEventListener("click", () => {
  state.reset();
  syncControls();
  render();
  real.reload();
});
document.addEventListener("keydown", (e) => {
  if (typingTarget(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === "o" || e.key === "O") shuffle();
});

sanitize();
state.write();
syncControls();
lines();
render();
families().then((list) => { know(list); lines(); render(); }).catch(() => {});
info().then((data) => {
  for (const name of MASKED) cards[name] = data.cards[name] ? data.cards[name].attention : "not in this model set";
  lines();
  render();
}).catch(() => {});

real = weights(() => v);
