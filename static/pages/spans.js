/* Fill the missing spans (issue 41): click characters to hide them; characters next to each other form
   one span (so two spans always have a kept character between them, as T5 needs). T5 reads the line
   with a sentinel ⟨k⟩ where each span was and writes every span back, one character at a time, from
   POST /api/spans (on this server, or on this device: static/families/t5.js).
   Positions count characters as the server does (code points: an emoji is one).
   URL: text, spans (start,end,start,end,… each [start, end)), seed (of "hide a random 15 %").
   Its pieces: the answer and the random draw (spans_cards.js); what this T5 gets right on new lines
   (its card) and "What BERT fills here" in the same spans (spans_compare.js, POST /api/mask-fill). */
import { el, clear, $, debounce, rovingKeys } from "../lib/dom.js";
import { visibleChar, charName, clamp, len, cut, chars as textChars } from "../lib/text.js";
import { clearError, fieldMessage, report } from "../lib/errors.js";
import { info, latest } from "../lib/api.js";
import { urlState } from "../lib/state.js";
import { ask, badge, warmUp } from "../lib/compute.js";
import { onDevice, needs } from "../lib/engine.js";
import { drawAnswer, randomSpans, runsOf } from "./spans_cards.js";
import { drawBert, truthNote } from "./spans_compare.js";

const ROUTE = "/api/spans";
const BERT_ROUTE = "/api/mask-fill"; // BERT told each span's length: one [MASK] per hidden character
const MAX_MASKS = 32; // what /api/mask-fill takes at once (app/schemas MAX_MASKS)
const FAMILY = needs(ROUTE)[0]; // the family that writes spans back (T5)
const SENTINELS = 32; // T5's sentinels: at most this many spans (app/contract/families.py T5_SENTINELS)
const DEFAULT_TEXT = "To be, or not to be, that is the question.";
const state = urlState({ text: DEFAULT_TEXT, spans: [10, 13, 33, 36], seed: 0 });
const v = state.values;
let context = null; // T5's context, from its card: the line, two tokens per span and two more must fit
let missing = false; // this model set has no T5
let card = null; // T5's card: what it gets right on lines it never read
let bertOn = false; // the student asked what BERT fills: it follows every new answer
let shown = null; // T5's answer on the page: {text, spans}
let focusIndex = 0; // the one character of the strip in the Tab order (roving tabindex)
let anchor = null; // the last character clicked, for shift-click
const answers = latest(); // the latest answer wins
const bertAnswers = latest();

const textBox = $("#sp-text");
const seedBox = $("#sp-seed");
const strip = $("#sp-chars");
const results = $("#sp-results");
const status = $("#sp-status");
const FIELDS = {
  text: { control: textBox, say: (e) => (/long|tokens/.test(e.detail || "") ? "The line is too long for T5 with these spans: " +
    "hide fewer spans or shorten the line." : null) },
  spans: { control: strip, say: () => "Those spans cannot be hidden: click characters of the line again." },
};

/* ---------- the hidden characters, as positions and as spans ---------- */
function positionsOf(flat) {
  const out = new Set();
  for (let k = 0; k + 1 < flat.length; k += 2) for (let p = flat[k]; p < flat[k + 1]; p++) out.add(p);
  return out;
}
let hidden = positionsOf(v.spans);
const spans = () => runsOf([...hidden].sort((a, b) => a - b));

/* The most spans this line can have: T5's sentinels, and its context (the line + 2 per span + 2). */
function maxSpans() {
  return context === null ? SENTINELS : clamp(Math.floor((context - 2 - len(v.text)) / 2), 0, SENTINELS);
}

function store(next) {
  const n = len(v.text);
  hidden = new Set([...next].filter((p) => Number.isInteger(p) && p >= 0 && p < n));
  let runs = spans();
  if (runs.length > maxSpans()) { // a link with too many: the first ones
    runs = runs.slice(0, maxSpans());
    hidden = positionsOf(runs.flat());
  }
  state.set({ spans: runs.flat() });
  focusIndex = clamp(focusIndex, 0, Math.max(0, n - 1));
}

function tooMany(count) {
  const max = maxSpans();
  return count <= max ? "" : max < SENTINELS
    ? "At most " + max + " spans fit T5 with this line (each span adds a sentinel and an end): join two spans or show one again."
    : "At most " + SENTINELS + " spans: T5 has " + SENTINELS + " sentinels. Join two spans or show one again.";
}

/* ---------- the clickable line: one Tab stop, arrows move (roving tabindex) ---------- */
function charButton(c, i, spanOf) {
  const k = spanOf.get(i);
  return el("button", {
    type: "button",
    class: "ch" + (c === " " ? " is-space" : ""),
    "aria-pressed": k === undefined ? "false" : "true",
    "aria-label": "Character " + i + ": " + charName(c) + (k === undefined ? "" : ", hidden in span " + k),
    tabindex: i === focusIndex ? "0" : "-1",
    dataset: { index: String(i) },
  }, [
    el("span", { class: "ch-glyph", "aria-hidden": "true", text: visibleChar(c) }),
    el("span", { class: "ch-tag", "aria-hidden": "true", text: k === undefined ? String(i) : "⟨" + k + "⟩" }),
  ]);
}

function renderChars() {
  const runs = spans();
  const spanOf = new Map();
  runs.forEach(([s, e], k) => { for (let p = s; p < e; p++) spanOf.set(p, k); });
  clear(strip);
  textChars(v.text).forEach((c, i) => strip.appendChild(charButton(c, i, spanOf)));
  $("#sp-count").textContent = hidden.size + " character" + (hidden.size === 1 ? "" : "s") + " in " + runs.length +
    " span" + (runs.length === 1 ? "" : "s") + " (at most " + maxSpans() + ")";
}

function change(next, focus) {
  const problem = tooMany(runsOf([...next].sort((a, b) => a - b)).length);
  fieldMessage(strip, problem, "error");
  if (problem) return;
  store(next);
  renderChars();
  if (focus !== undefined) strip.querySelector("[data-index='" + focus + "']").focus();
  fillSoon();
}

strip.addEventListener("click", (event) => {
  const button = event.target.closest("button.ch");
  if (!button) return;
  const i = Number(button.dataset.index);
  const next = new Set(hidden);
  const hide = !hidden.has(i);
  const [from, to] = event.shiftKey && anchor !== null ? [Math.min(anchor, i), Math.max(anchor, i)] : [i, i];
  for (let p = from; p <= to; p++) (hide ? next.add(p) : next.delete(p)); // shift-click: the whole stretch like this one
  anchor = i;
  focusIndex = i;
  change(next, i);
});

rovingKeys(strip, (i) => { focusIndex = i; }); // one Tab stop, arrows move (lib/dom.js)

/* ---------- T5's answer ---------- */
function clearResults(message) {
  answers.cancel();
  clear(results);
  status.textContent = message;
}

function showMissing() {
  missing = true;
  $("#sp-none").hidden = false;
  clearResults("This model set has no T5 to write the spans back: see the note at the top.");
}

async function fill() {
  if (missing) return;
  if (!v.text) return clearResults("No line yet.");
  const runs = spans();
  if (!runs.length) return clearResults("Nothing is hidden yet: click characters above, or hide a random 15 %.");
  const current = answers.begin();
  status.textContent = "T5 is writing the spans back…";
  try {
    const data = await ask(ROUTE, { text: v.text, spans: runs }, onDevice(ROUTE), { quiet: true }); // the server, or this device
    if (!current()) return;
    clearError();
    fieldMessage(textBox, "", "error");
    fieldMessage(strip, "", "error");
    drawAnswer(results, data);
    shown = { text: v.text, spans: data.spans };
    addCompare();
    status.textContent = data.spans.length + " span" + (data.spans.length === 1 ? "" : "s") +
      " written back. T5 saw the whole line around every sentinel, and the spans it had written before.";
  } catch (err) {
    if (!current() || err.name === "AbortError") return;
    if (err.status === 409 && err.parameter === "model") return showMissing();
    clear(results);
    report(err, FIELDS);
    status.textContent = "Nothing written back: see the message above.";
  }
}
const fillSoon = debounce(fill, 200);

/* ---------- the truth about this T5, and BERT in the same spans ---------- */
function addCompare() {
  const button = el("button", { type: "button", id: "sp-bert", class: "btn secondary", text: "What BERT fills here" });
  const out = el("div", { id: "sp-bert-out", "aria-live": "polite" });
  $("#sp-score").after(truthNote(card), el("div", { class: "row sp-bert-row" }, button), out);
  button.addEventListener("click", () => { bertOn = true; fillBert(); });
  if (bertOn) fillBert();
}

async function fillBert() {
  const out = $("#sp-bert-out");
  if (!out || !shown) return;
  const answer = shown; // the spans T5 answered, so both fill the same ones
  const positions = answer.spans.flatMap((sp) => Array.from({ length: sp.end - sp.start }, (_, i) => sp.start + i));
  if (positions.length > MAX_MASKS) {
    clear(out);
    out.appendChild(el("p", { class: "note", text: "BERT fills at most " + MAX_MASKS + " hidden characters at once; " +
      positions.length + " are hidden. Show some again to compare." }));
    return;
  }
  const current = bertAnswers.begin();
  out.textContent = "BERT is filling the same spans…";
  try {
    const data = await ask(BERT_ROUTE, { text: answer.text, positions, top_k: 1 }, onDevice(BERT_ROUTE), { quiet: true });
    if (!current()) return;
    drawBert(out, data, answer);
  } catch (err) {
    if (!current() || err.name === "AbortError") return;
    clear(out);
    out.appendChild(el("p", { class: "note", text: err.status === 409 && err.parameter === "model"
      ? "This model set has no BERT to compare with." : "BERT could not fill these spans: " + err.message }));
  }
}

/* ---------- the line ---------- */
function fitText(text, source) {
  const max = context === null ? null : context - 4; // room for one span
  if (max === null || len(text) <= max) {
    fieldMessage(textBox, "", "notice");
    return text;
  }
  fieldMessage(textBox, "Cut to " + max + " characters: T5 reads at most " + max + " with one span hidden (the " + source +
    " had " + len(text) + ").", "notice");
  return cut(text, max);
}

function syncControls() {
  textBox.value = v.text;
  $("#sp-text-count").textContent = String(len(v.text));
  seedBox.value = String(v.seed);
}

function textChanged() {
  store(hidden);
  renderChars();
  fieldMessage(textBox, v.text ? "" : "The line is empty: type one or choose an example.", "error");
  fill();
}

const onText = debounce(() => {
  v.text = textBox.value;
  textChanged();
}, 300);

textBox.addEventListener("input", () => {
  const fitted = fitText(textBox.value, "text you typed or pasted");
  if (fitted !== textBox.value) textBox.value = fitted;
  $("#sp-text-count").textContent = String(len(textBox.value));
  if (!textBox.value) clearResults("No line yet.");
  onText();
});

function hideRandom() {
  change(positionsOf(randomSpans(len(v.text), v.seed, maxSpans()).flat()));
}

$("#sp-example").addEventListener("change", (event) => {
  if (!event.target.value) return;
  state.set({ text: fitText(event.target.value, "example") });
  event.target.value = "";
  hidden = new Set();
  syncControls();
  store(hidden);
  renderChars();
  hideRandom(); // a new line comes with a random 15 % hidden
});

seedBox.addEventListener("input", () => {
  const seed = parseInt(seedBox.value, 10);
  if (!Number.isFinite(seed) || seed < 0 || seed > 4294967295) {
    if (seedBox.value !== "") fieldMessage(seedBox, "The seed must be a whole number from 0 to 4,294,967,295.", "error");
    return;
  }
  fieldMessage(seedBox, "", "error");
  state.set({ seed });
});

$("#sp-random").addEventListener("click", hideRandom);

$("#sp-next").addEventListener("click", () => {
  state.set({ seed: v.seed >= 4294967295 ? 0 : v.seed + 1 });
  syncControls();
  hideRandom();
});

$("#sp-clear").addEventListener("click", () => change(new Set()));

$("#sp-reset").addEventListener("click", () => {
  state.reset();
  hidden = positionsOf(v.spans);
  clearError();
  fieldMessage(strip, "", "error");
  syncControls();
  textChanged();
});

/* ---------- start ---------- */
store(hidden);
syncControls();
renderChars();
badge(status); // where the answers are computed: this server or this device
info().then((info) => {
  card = info.cards[FAMILY];
  if (!card) return showMissing(); // this set has no T5: say so, ask nothing
  warmUp(needs(ROUTE)); // a static copy loads T5 now; a server only with --models-on-phones (lib/compute.js)
  if (card.config && Number.isFinite(card.config.context)) context = card.config.context;
}).catch(() => {}).finally(() => {
  const fitted = fitText(v.text, "link's line");
  if (fitted !== v.text) {
    v.text = fitted;
    syncControls();
  }
  store(hidden);
  renderChars();
  if (!v.text) fieldMessage(textBox, "The line is empty: type one or choose an example.", "error");
  fill();
});
