/* The Objectives page, part 1: the two other families' cards, T5 (span corruption) and PLM (permuted
   order), for part 1's sentence and seed. No model and no request: each card is the recipe the
   project's trainer uses, drawn here with the page's own random stream (uniform and shuffled,
   static/lib/engine_core.js), so the same seed always gives the same picture. It is an example of the
   recipe, not training's own draw (training draws with torch). objectives.js calls drawMore(text, seed)
   whenever the sentence or the seed changes.
   T5: training/t5.py span_counts and draw_spans (15 % hidden in spans of 3 on average, kept and
   hidden runs alternating, every way of cutting them equally likely); PLM: the last predictedCount(n)
   places of the order shuffled(n, seed), as app/tasks/plm.py and the attention page use. */
import { el, clear, $ } from "../lib/dom.js";
import { visibleChar, charName, chars as textChars } from "../lib/text.js";
import { uniform, shuffled } from "../lib/engine_core.js";
import { predictedCount } from "../families/plm.js";

export const T5_NOISE = 0.15; // training/t5.py NOISE: the share of characters hidden
export const T5_MEAN_SPAN = 3; // training/t5.py MEAN_SPAN: characters per span, on average
const T5_SENTINELS = 32; // app/contract/families.py T5_SENTINELS
const KEPT_DRAWS = 0x10000, HIDDEN_DRAWS = 0x20000; // where in the seed's stream each cut draws

/* Python's round(): halves to the even neighbour. */
function roundEven(x) {
  const f = Math.floor(x);
  return x - f > 0.5 || (x - f === 0.5 && f % 2 === 1) ? f + 1 : f;
}

/* [hidden characters, spans] of a line of n characters (training/t5.py span_counts). */
export function spanCounts(n) {
  const hidden = Math.max(1, roundEven(n * T5_NOISE));
  const spans = Math.max(1, Math.min(roundEven(hidden / T5_MEAN_SPAN), hidden, n - hidden, T5_SENTINELS));
  return [hidden, spans];
}

/* `total` cut into `parts` runs of at least 1 (0 only when total is 0), every cut equally likely:
   parts - 1 different cut points out of 1 .. total - 1, picked by a partial Fisher-Yates shuffle. */
function cuts(total, parts, seed, base) {
  const points = Array.from({ length: Math.max(0, total - 1) }, (_, i) => i + 1);
  for (let k = 0; k < parts - 1; k++) {
    const j = k + Math.floor(uniform(seed, base + k) * (points.length - k));
    [points[k], points[j]] = [points[j], points[k]];
  }
  const at = points.slice(0, Math.max(0, parts - 1)).sort((a, b) => a - b);
  return [...at, total].map((p, k) => p - (k ? at[k - 1] : 0));
}

/* The hidden spans [start, end) of a line of n characters: a kept run, a span, a kept run, a span, …
   (training/t5.py draw_spans: so the line ends with a span, and two spans never touch). */
export function drawSpans(n, seed) {
  const [hidden, count] = spanCounts(n);
  const kept = cuts(n - hidden, count, seed, KEPT_DRAWS), runs = cuts(hidden, count, seed, HIDDEN_DRAWS);
  const out = [];
  let at = 0;
  for (let k = 0; k < count; k++) {
    at += kept[k];
    out.push([at, at + runs[k]]);
    at += runs[k];
  }
  return out;
}

function tok(text, cls, note, title, data) {
  return el("span", { class: ("tok " + cls).trim(), title, dataset: data }, [
    el("span", { text }), el("span", { class: "tok-note", text: note || "\u00a0" })]);
}

const sentinel = (k) => "⟨" + k + "⟩";

function drawT5(chars, seed) {
  const read = clear($("#o-t5-read")), write = clear($("#o-t5-write"));
  const n = chars.length;
  if (!n) return;
  const spans = drawSpans(n, seed);
  let at = 0;
  const keep = (from, to) => {
    for (let i = from; i < to; i++) {
      read.append(tok(visibleChar(chars[i]), "", "", charName(chars[i]) + " at " + i + ": read, no loss",
        { kind: "char", char: chars[i], pos: String(i) }));
    }
  };
  spans.forEach(([start, end], k) => {
    keep(at, start);
    const hidden = chars.slice(start, end);
    read.append(tok(sentinel(k), "is-sentinel", "span " + k, "sentinel " + k + ": stands for the " + hidden.length +
      " hidden character" + (hidden.length > 1 ? "s" : "") + " at " + start + (end - start > 1 ? "–" + (end - 1) : ""),
      { kind: "sentinel", span: String(k) }));
    write.append(tok(sentinel(k), "is-sentinel carries-loss", "", "T5 writes sentinel " + k + " first: which span comes next (loss)",
      { kind: "sentinel", span: String(k) }));
    hidden.forEach((c, j) => write.append(tok(visibleChar(c), "carries-loss", "",
      "hidden " + charName(c) + " from " + (start + j) + ": written after " + sentinel(k) + " (loss)",
      { kind: "char", char: c, pos: String(start + j), span: String(k) })));
    at = end;
  });
  keep(at, n);
  write.append(tok("[SEP]", "is-sep carries-loss", "end", "[SEP]: T5 says it has written every span (loss)", { kind: "sep" }));
  const written = write.children.length, hiddenCount = written - spans.length - 1;
  $("#o-t5-loss").textContent = "T5 loss = mean over the " + written + " written tokens of −log p(token | the line with its " +
    "placeholders, and what was written before it)";
  $("#o-t5-count").textContent = hiddenCount + " of " + n + " characters hidden in " + spans.length + " span" +
    (spans.length > 1 ? "s" : "") + "; T5 reads " + read.children.length + " tokens (characters and sentinels) and writes " + written +
    " (sentinels, characters and [SEP]).";
}

function drawPLM(chars, seed) {
  const box = clear($("#o-plm-toks"));
  const n = chars.length;
  if (!n) return;
  const order = shuffled(n, seed), k = predictedCount(n);
  const place = new Array(n);
  order.forEach((pos, r) => { place[pos] = r; });
  chars.forEach((c, i) => {
    const r = place[i], guessed = r >= n - k;
    box.append(tok(visibleChar(c), guessed ? "carries-loss" : "", "#" + (r + 1),
      charName(c) + " at " + i + " is number " + (r + 1) + " of " + n + " in the order: " + (guessed
        ? "guessed from the " + r + " characters earlier in the order (loss)" : "a clue only, no loss"),
      { char: c, pos: String(i), rank: String(r) }));
  });
  $("#o-plm-loss").textContent = "PLM loss = mean over the last 15 % of the order (" + k + " of " + n + " characters) of " +
    "−log p(character | the characters earlier in the order)";
  const last = order.slice(n - k).map((p) => charName(chars[p]) + " at " + p);
  $("#o-plm-count").textContent = "Guessed, in this order: " + last.join(", ") + ". " + (n > k ? "Numbers " + (n - k + 1) +
    " to " + n + " of the order carry loss; numbers 1 to " + (n - k) + " are the clues they may look at." : "With one character there are no clues.");
}

export function drawMore(text, seed) {
  if (!$("#o-t5-read") || !$("#o-plm-toks")) return;
  const chars = textChars(text), s = Math.max(0, Math.floor(Number(seed) || 0));
  drawT5(chars, s);
  drawPLM(chars, s);
}
