/* What the loss sees: POST /api/objectives/corrupt (one corruption, BERT's recovery, the MLM and CLM
   losses, ELECTRA's labels), POST /api/objectives/recovery (recovery by action over many draws of
   held-out text), the XLNet permutation grid (the rule, drawn here) and the GPT vs BERT table from
   the model cards (GET /api/models). URL: text, scheme, rate, span, seed, draws, ptext, order. Bounds: limits from GET /api/models.
   Keys (outside text boxes): N new draw, R run the recovery split, S shuffle the order. */
import { el, clear, $, debounce, typingTarget } from "../lib/dom.js";
import { visibleChar, charName, pct, num, thousands, clamp, len, cut, chars as textChars } from "../lib/text.js";
import { clearError } from "../lib/errors.js";
import { api, info, latest } from "../lib/api.js";
import { isStatic } from "../lib/compute.js";
import { urlState, isProjector } from "../lib/state.js";
import { slides } from "../lib/slides.js";
import { bars, table } from "../lib/charts.js";
import { withTerms } from "../lib/glossary.js";
import { drawMore } from "./objectives_more.js"; // part 1's T5 and PLM cards, drawn here from the sentence and seed

const state = urlState({
  text: "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer",
  scheme: "char", rate: 15, span: 3, seed: 0, draws: 40, ptext: "to be or", order: [],
});
const v = state.values;
const ACTION = { mask: "[MASK]", random: "random", unchanged: "unchanged" };
const SCHEME = { char: "per character", span: "spans", word: "whole words" };
let room = 126;
const draws = latest(); // the latest answer wins

// what the server accepts (GET /api/models limits); until it answers, the server's checks stand alone
const bound = { rate: 100, span: Infinity, seed: Infinity, draws: Infinity };

/* ---------- 1 + 2: one corruption ---------- */
function sanitize() {
  if (!SCHEME[v.scheme]) v.scheme = "char";
  v.rate = clamp(Math.round(v.rate) || 15, 5, bound.rate);
  v.span = clamp(Number(v.span) || 3, 1, bound.span);
  v.seed = clamp(Math.round(v.seed) || 0, 0, bound.seed);
  v.draws = clamp(Math.round(v.draws / 10) * 10 || 40, 10, bound.draws);
  v.ptext = cut(v.ptext, 12);
}

function syncControls() {
  $("#o-text").value = v.text;
  $("#o-count").textContent = String(len(v.text));
  for (const r of document.querySelectorAll('input[name="o-scheme"]')) r.checked = r.value === v.scheme;
  $("#o-rate").value = String(v.rate);
  $("#o-rate-out").textContent = v.rate + " %";
  $("#o-span").value = String(v.span);
  $("#o-span-out").textContent = String(v.span);
  $("#o-span").disabled = v.scheme !== "span";
  $("#o-seed").value = String(v.seed);
  $("#o-draws").value = String(v.draws);
  $("#o-draws-out").textContent = String(v.draws);
  $("#o-ptext").value = v.ptext;
  drawMore(v.text, v.seed);
  $("#o-scheme-note").textContent = v.scheme === "char"
    ? "Per character is how the shipped BERT was trained (training/data.py)."
    : "The shipped BERT was trained per character. Hiding " + SCHEME[v.scheme] + " also hides a character's neighbours, " +
      "so recovery drops for any model. Training on " + SCHEME[v.scheme] + " was measured too (see the note under the " +
      "recovery chart): " + (v.scheme === "span" ? "it did not make spans easier to recover" : "it made whole words easier, single characters harder") +
      ". 80/10/10 applies to each " + (v.scheme === "span" ? "span" : "word") + " as a whole.";
}

function tok(char, cls, note, title) {
  return el("span", { class: "tok " + cls, title }, [
    el("span", { text: char.length > 1 ? char : visibleChar(char) }),
    el("span", { class: "tok-note", text: note || "\u00a0" })]);
}

function showCorruption(r) {
  const sel = new Map(r.selected.map((s) => [s.position, s]));
  const gpt = clear($("#o-gpt-toks"));
  r.tokens.forEach((t, i) => gpt.appendChild(tok(t, i > 0 ? "carries-loss" : "", "",
    i > 0 ? "loss: −log p(" + charName(t) + " | the " + i + " before it)" : "the first character has nothing to its left")));
  const bert = clear($("#o-bert-toks"));
  r.corrupted.forEach((t, i) => {
    const s = sel.get(i);
    bert.appendChild(tok(t, s ? "is-" + s.action + " carries-loss" : "", s ? (s.correct ? "✓" : "✗") : "",
      s ? ACTION[s.action] + " at " + i + ": original " + charName(s.original) + ", BERT guessed " + charName(s.prediction) +
        " (" + pct(s.prob) + ")" : "no loss here"));
  });
  clear($("#o-clm")).append(...withTerms("CLM loss = mean over " + r.clm.positions + " positions of −log p(next | left) = " +
    (r.clm.loss === null ? "–" : num(r.clm.loss, 3) + " nats")));
  clear($("#o-mlm")).append(...withTerms("MLM loss = mean over " + r.mlm.positions + " selected positions of −log p(original | corrupted) = " +
    (r.mlm.loss === null ? "– (nothing selected)" : num(r.mlm.loss, 3) + " nats")));
  const n = r.tokens.length;
  $("#o-summary").textContent = "GPT's loss counts at " + r.clm.positions + " of " + n + " positions; BERT's at " +
    r.selected.length + " (" + pct(r.rate, 0) + " of the characters, " + SCHEME[r.scheme] + ")" +
    (r.accuracy === null ? "." : ", and it recovers " + pct(r.accuracy, 0) + " of them.");
  clear($("#o-table")).appendChild(table("Selected positions: what BERT saw and guessed",
    ["Position", "Original", "Action", "Shown", "BERT's guess", "P(original)", "Recovered"],
    r.selected.map((s) => [String(s.position), charName(s.original), ACTION[s.action], s.shown.length > 1 ? s.shown : charName(s.shown),
      charName(s.prediction), pct(s.p_original, 1), s.correct ? "yes" : "no"])));
  // ELECTRA (static/pages/electra.js): the generator fills every selected position, the discriminator judges all
  document.dispatchEvent(new CustomEvent("objectives:corrupted", { detail: {
    text: v.text, positions: r.selected.map((s) => s.position), seed: v.seed } }));
}

const NEEDS_SERVER = "This part needs the playground's server (python -m app): this copy has none, so only the ELECTRA strip of your own sentence (part 2) works here.";

async function corrupt() {
  if (!len(v.text)) return;
  if (isStatic()) { // the corruption draws are the server's (app/tasks/corruption.py)
    $("#o-summary").textContent = NEEDS_SERVER;
    return;
  }
  const current = draws.begin();
  try {
    const r = await api("/api/objectives/corrupt", { body: ({
      text: v.text, scheme: v.scheme, mask_rate: v.rate / 100, mean_span: v.span, seed: v.seed }) });
    if (!current()) return;
    clearError();
    showCorruption(r);
  } catch (err) { /* shown in the error box */ }
}

/* ---------- 3: recovery by action ---------- */
function recoveryRows(r) {
  return ["mask", "random", "unchanged"].map((a) => {
    const s = r.by_action[a];
    return { char: a, label: ACTION[a], prob: s.accuracy === null ? 0 : s.accuracy,
      note: thousands(s.recovered) + " / " + thousands(s.positions) };
  });
}

async function runRecovery() {
  if (isStatic()) {
    $("#o-rec-status").textContent = NEEDS_SERVER;
    return;
  }
  $("#o-rec-status").textContent = "Running " + v.draws + " corruptions (" + SCHEME[v.scheme] + ") on held-out text…";
  try {
    const r = await api("/api/objectives/recovery", { body: ({
      scheme: v.scheme, mask_rate: v.rate / 100, mean_span: v.span, draws: v.draws, seed: v.seed }) });
    clearError();
    $("#o-rec-status").textContent = SCHEME[r.scheme] + ", " + r.draws + " draws, " + thousands(r.positions) +
      " scored positions (" + pct(r.selected_rate, 1) + " selected): BERT recovers " + pct(r.accuracy, 1) +
      " overall. Held-out text: " + r.source + ".";
    bars($("#o-rec"), recoveryRows(r), { wide: true, label: "recovery by action", caption: "Top-1 recovery by what the position showed" });
  } catch (err) {
    $("#o-rec-status").textContent = "";
  }
}

async function runAll() {
  if (isStatic()) {
    $("#o-rec-status").textContent = NEEDS_SERVER;
    return;
  }
  $("#o-rec-status").textContent = "Running the three corruptions, " + v.draws + " draws each…";
  const rows = [];
  try {
    for (const scheme of ["char", "span", "word"]) {
      const r = await api("/api/objectives/recovery", { body: ({
        scheme, mask_rate: v.rate / 100, mean_span: v.span, draws: v.draws, seed: v.seed }) });
      const acc = (a) => (r.by_action[a].accuracy === null ? "–" : pct(r.by_action[a].accuracy, 1));
      rows.push([SCHEME[scheme], pct(r.accuracy, 1), acc("mask"), acc("random"), acc("unchanged"), thousands(r.positions)]);
    }
    clearError();
    $("#o-rec-status").textContent = "Same draws and seed for each corruption; " + v.rate + " % selected.";
    clear($("#o-rec-all")).appendChild(table("BERT's recovery under each corruption", ["Corruption", "Overall", "[MASK]", "Random", "Unchanged", "Positions"], rows, true));
  } catch (err) {
    $("#o-rec-status").textContent = "";
  }
}

/* ---------- 4: permutation grid ---------- */
function validOrder(n) {
  const o = v.order.filter((x) => Number.isInteger(x) && x >= 0 && x < n);
  return new Set(o).size === n && o.length === n ? o : [...Array(n).keys()];
}

function drawPerm() {
  const chars = textChars(v.ptext);
  const n = chars.length;
  const order = validOrder(n);
  const rank = new Array(n);
  order.forEach((p, k) => { rank[p] = k; });
  const box = clear($("#o-order"));
  order.forEach((p, k) => box.appendChild(el("button", {
    type: "button", class: "tok", title: "predicted " + (k + 1) + (k === 0 ? "st" : k === 1 ? "nd" : k === 2 ? "rd" : "th") + ": " + charName(chars[p]) + " at " + p,
    onclick: () => { if (k > 0) { const o = order.slice(); [o[k - 1], o[k]] = [o[k], o[k - 1]]; state.set({ order: o }); drawPerm(); } },
  }, [el("span", { text: visibleChar(chars[p]) }), el("span", { class: "tok-note", text: "#" + (k + 1) + " · pos " + p })])));
  const rows = chars.map((q, i) => el("tr", {}, [el("th", { scope: "row", title: charName(q) + " at " + i + ", predicted #" + (rank[i] + 1), text: visibleChar(q) + " #" + (rank[i] + 1) })]
    .concat(chars.map((k, j) => {
      const ok = rank[j] < rank[i];
      const td = el("td", { class: ok ? "" : "blocked", title: charName(q) + " → " + charName(k) + (ok ? ": may look" : ": blocked") },
        el("span", { class: "sr-only", text: ok ? "sees" : "blocked" }));
      if (ok) td.style.background = "#1f5fa8";
      return td;
    }))));
  const leftToRight = order.every((p, k) => p === k);
  clear($("#o-perm")).appendChild(el("table", { class: "heat", "aria-label": "permutation mask" }, [
    el("caption", { text: "Who may look at whom in this order" + (leftToRight ? " (left to right: GPT's causal mask, without the diagonal)" : "") }),
    el("thead", {}, el("tr", {}, [el("th", { scope: "col", text: "q\\k" })].concat(chars.map((c, j) => el("th", { scope: "col", text: visibleChar(c) + " " + j }))))),
    el("tbody", {}, rows)]));
}

function shuffle() {
  const n = len(v.ptext);
  const o = [...Array(n).keys()];
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [o[i], o[j]] = [o[j], o[i]];
  }
  state.set({ order: o });
  drawPerm();
}

/* ---------- 6: comparison table from the cards ---------- */
function cardsTable(models) {
  const g = models.cards.gpt, b = models.cards.bert;
  if (!g || !b) return;
  const gv = g.evaluation && g.evaluation.validation, bv = b.evaluation && b.evaluation.validation;
  const rate = b.training && b.training.mask_rate;
  const rows = [
    ["Objective", g.objective, b.objective],
    ["Attention", g.attention + " (each character sees itself and the left)", b.attention + " (every non-[PAD] character)"],
    ["Positions that carry loss", "every position: " + thousands(g.config.context) + " per training window (it reads " +
      thousands(g.config.context + 1) + " characters and is scored on each one after the first)",
      (rate ? pct(rate, 0) : "the selected") + " of the characters (MLM) + one NSP label per pair"],
    ["Context (characters)", thousands(g.config.context), thousands(b.config.context)],
    ["Parameters", thousands(g.parameters), thousands(b.parameters)],
    ["Held-out metric (validation plays)", gv ? num(gv.nats_per_char, 3) + " nats per character (perplexity " + num(gv.perplexity, 2) + ")" : "–",
      bv ? "masked top-1 " + pct(bv.masked_top1, 1) + ", top-5 " + pct(bv.masked_top5, 1) + (bv.nsp_accuracy !== undefined ? "; NSP " + pct(bv.nsp_accuracy, 1) : "") : "–"],
    ["Trained for", g.training ? thousands(g.training.steps) + " steps, " + thousands(g.training.tokens) + " characters" : "–",
      b.training ? thousands(b.training.steps) + " steps, " + thousands(b.training.tokens) + " characters" : "–"],
    ["Good for", "writing: continuing text one character at a time (Generation page)",
      "reading: filling blanks, labelling characters or sentences ([CLS]), judging pairs (Mask-Fill, NSP)"],
  ];
  const t = el("table", { class: "num-table cmp-table" }, [
    el("caption", { text: "From the model cards of the selected set (GET /api/models)" }),
    el("thead", {}, el("tr", {}, ["", "GPT", "BERT"].map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, rows.map((r) => el("tr", {}, [el("th", { scope: "row", text: r[0] }), el("td", {}, withTerms(r[1])), el("td", {}, withTerms(r[2]))]))),
  ]);
  clear($("#o-cards")).appendChild(el("div", { class: "heat-wrap" }, t));
}

/* ---------- wiring ---------- */
const later = debounce(corrupt, 300);
$("#o-text").addEventListener("input", (e) => { state.set({ text: e.target.value }); syncControls(); later(); });
for (const r of document.querySelectorAll('input[name="o-scheme"]')) {
  r.addEventListener("change", () => { state.set({ scheme: r.value }); syncControls(); corrupt(); });
}
$("#o-rate").addEventListener("input", (e) => { state.set({ rate: Number(e.target.value) }); syncControls(); later(); });
$("#o-span").addEventListener("input", (e) => { state.set({ span: Number(e.target.value) }); syncControls(); later(); });
$("#o-seed").addEventListener("change", (e) => { state.set({ seed: Number(e.target.value) }); sanitize(); syncControls(); corrupt(); });
$("#o-draws").addEventListener("input", (e) => { state.set({ draws: Number(e.target.value) }); syncControls(); });
function newDraw() { state.set({ seed: v.seed >= bound.seed ? 0 : v.seed + 1 }); syncControls(); corrupt(); }
$("#o-draw").addEventListener("click", newDraw);
$("#o-run").addEventListener("click", runRecovery);
$("#o-run-all").addEventListener("click", runAll);
$("#o-ptext").addEventListener("input", (e) => { state.set({ ptext: e.target.value, order: [] }); sanitize(); drawPerm(); });
$("#o-shuffle").addEventListener("click", shuffle);
$("#o-left").addEventListener("click", () => { state.set({ order: [] }); drawPerm(); });
document.addEventListener("keydown", (e) => {
  if (typingTarget(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
  const k = e.key.toLowerCase();
  if (k === "n") newDraw();
  else if (k === "r") runRecovery();
  else if (k === "s") shuffle();
});

sanitize();
syncControls();
drawPerm();
info().then((set) => {
  const lim = set.limits;
  if (Number.isFinite(lim.max_lesson_mask_rate)) bound.rate = Math.round(lim.max_lesson_mask_rate * 100);
  if (Number.isFinite(lim.max_mean_span)) bound.span = lim.max_mean_span;
  if (Number.isFinite(lim.max_seed)) bound.seed = lim.max_seed;
  if (Number.isFinite(lim.max_draws)) bound.draws = lim.max_draws;
  for (const [id, max] of [["#o-rate", bound.rate], ["#o-span", bound.span], ["#o-seed", bound.seed], ["#o-draws", bound.draws]]) $(id).max = String(max);
  const cards = set.cards;
  if (cards.bert && cards.bert.config) {
    room = cards.bert.config.context - 2;
    $("#o-room").textContent = String(room);
    $("#o-text").maxLength = room;
  }
  cardsTable({ cards });
}).catch(() => {}).finally(() => {
  sanitize();
  state.write();
  syncControls();
  corrupt();
});
if (isProjector()) slides(document.querySelectorAll("main > section.panel")); // one strip at a time, ←/→
