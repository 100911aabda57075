/* Mask-Fill Explorer: click characters to mask them; BERT's top-k guesses come from
   POST /api/mask-fill, and its training corruption (rate and 80/10/10 split from the BERT card) from
   POST /api/mask-fill/corrupt. "Guess first" hides the masked characters until every guess is typed,
   then reveals the truth, BERT's ranking and you vs BERT.
   Positions count characters as the server does (code points: an emoji is one).
   URL: text, pos (comma-separated indices), k, rate (percent), seed, guess (1 = guess first).
   Its pieces: the answer cards (mask_fill_cards.js), the guess boxes (mask_fill_guess.js) and part 3,
   the training corruption (mask_fill_corrupt.js). */
import { el, clear, $, debounce, rovingKeys } from "../lib/dom.js";
import { visibleChar, charName, thousands, clamp, len, cut, chars as textChars } from "../lib/text.js";
import { clearError, fieldMessage, clearFieldErrors } from "../lib/errors.js";
import { api, info, latest } from "../lib/api.js";
import { urlState } from "../lib/state.js";
import { valueText } from "../lib/chrome.js";
import { linkHas } from "../lib/corpus.js";
import { ask, badge, warmUp } from "../lib/compute.js";
import { onDevice, needs } from "../lib/engine.js";
import { maskCard, scoreLine, unknownNote } from "./mask_fill_cards.js";
import { drawGuesses, revealState } from "./mask_fill_guess.js";
import { clearCorrupt, corrupt as corruptNow, showRecipe } from "./mask_fill_corrupt.js";

const corrupt = () => corruptNow(v, FIELDS);
const corruptSoon = debounce(corrupt, 200);

const DEFAULT_TEXT = "To be, or not to be, that is the question.";
const state = urlState({ text: DEFAULT_TEXT, pos: [17, 18], k: 5, rate: 15, seed: 0, guess: false });
const v = state.values;
let maxLen = null; // BERT's context - 2, from the card
let maxMasks = null; // from /api/models limits
let maxSeed = Infinity; // from /api/models limits; the server checks it anyway
let vocabSize = null;
const fills = latest(); // the latest answer wins
let focusIndex = 0; // the one character of the strip in the Tab order (roving tabindex)
let guesses = {}; // position -> typed character (guess-first mode)
let revealed = false;
let own = null; // a training run's set: its sentence, blanks and example lines, from its own held-out text (lib/corpus.js)

const textBox = $("#mf-text");
const kSlider = $("#mf-k");
const rateSlider = $("#mf-rate");
const seedBox = $("#mf-seed");
const strip = $("#mf-chars");
const chars = () => textChars(v.text);
const FIELDS = {
  text: { control: textBox, say: (e) => (/empty/.test(e.detail || "") ? "The sentence is empty: type one or choose an example."
    : /long/.test(e.detail || "") ? "The sentence is too long: BERT reads at most " + maxLen + " characters." : null) },
  positions: { control: strip, say: () => "Those characters cannot be masked: click characters of the sentence again." },
  top_k: { control: kSlider, say: () => "Choose between 1 and " + (vocabSize || 20) + " predictions." },
  mask_rate: { control: rateSlider, say: () => "The mask rate must be between 1 % and 100 %." },
  seed: { control: seedBox, say: () => "The seed must be a whole number from 0 to " + thousands(maxSeed) + "." },
};

function sanitize() {
  v.k = clamp(Math.round(v.k), 1, 20);
  v.rate = clamp(Math.round(v.rate), 1, 100);
  v.seed = clamp(Math.round(v.seed) || 0, 0, maxSeed);
  const n = len(v.text);
  const seen = new Set();
  v.pos = v.pos.filter((p) => p >= 0 && p < n && !seen.has(p) && seen.add(p)).sort((a, b) => a - b);
  if (maxMasks !== null) v.pos = v.pos.slice(0, maxMasks);
  focusIndex = clamp(focusIndex, 0, Math.max(0, n - 1));
}

function showValues() {
  $("#mf-k-out").textContent = String(v.k);
  $("#mf-rate-out").textContent = v.rate + " %";
  valueText(kSlider, v.k + (v.k === 1 ? " prediction" : " predictions") + " per mask");
  valueText(rateSlider, v.rate + " percent of the characters selected");
}

function syncControls() {
  textBox.value = v.text;
  $("#mf-text-count").textContent = String(len(v.text));
  kSlider.value = String(v.k);
  rateSlider.value = String(v.rate);
  seedBox.value = String(v.seed);
  $("#mf-guess").checked = v.guess;
  showValues();
  showMode();
}

/* A sentence longer than BERT reads is cut, and the page says so next to the box. */
function fitText(text, source) {
  const n = len(text);
  if (maxLen === null || n <= maxLen) {
    fieldMessage(textBox, "", "notice");
    return text;
  }
  fieldMessage(textBox, "Cut to " + maxLen + " characters: BERT reads at most " + maxLen + " (the " + source +
    " had " + n + ").", "notice");
  return cut(text, maxLen);
}

/* ---------- the clickable sentence: one Tab stop, arrows move (roving tabindex) ---------- */
function hiddenNow(i) {
  return v.guess && !revealed && v.pos.includes(i);
}

function charButton(c, i) {
  const masked = v.pos.includes(i);
  const hide = hiddenNow(i);
  return el("button", {
    type: "button",
    class: "ch" + (c === " " ? " is-space" : "") + (hide ? " is-hidden" : ""),
    "aria-pressed": masked ? "true" : "false",
    "aria-label": "Character " + i + ": " + (hide ? "hidden, guess it" : charName(c)),
    tabindex: i === focusIndex ? "0" : "-1",
    dataset: { index: String(i) },
  }, [
    el("span", { class: "ch-glyph", "aria-hidden": "true", text: hide ? "?" : visibleChar(c) }),
    el("span", { class: "ch-tag", "aria-hidden": "true", text: masked ? "MASK" : String(i) }),
  ]);
}

function renderChars() {
  clear(strip);
  chars().forEach((c, i) => strip.appendChild(charButton(c, i)));
  $("#mf-mask-count").textContent = v.pos.length + (maxMasks ? " of at most " + maxMasks : "");
}

function toggle(button) {
  const i = Number(button.dataset.index);
  const masked = v.pos.includes(i);
  fieldMessage(strip, "", "error");
  if (!masked && maxMasks !== null && v.pos.length >= maxMasks) {
    fieldMessage(strip, "At most " + maxMasks + " characters can be masked at once: unmask one first.", "error");
    return;
  }
  const pos = masked ? v.pos.filter((p) => p !== i) : v.pos.concat([i]).sort((a, b) => a - b);
  state.set({ pos });
  focusIndex = i;
  if (revealed) resetGuesses(); // a new round after a reveal
  else for (const p of Object.keys(guesses)) if (!pos.includes(Number(p))) delete guesses[p]; // keep the other guesses
  showMode();
  renderChars();
  drawGuessInputs(); // in guess-first mode every mask gets its field at once
  strip.querySelector("[data-index='" + i + "']").focus();
  fillSoon();
}

strip.addEventListener("click", (event) => {
  const button = event.target.closest("button.ch");
  if (button) toggle(button);
});

rovingKeys(strip, (i) => { focusIndex = i; }); // one Tab stop, arrows move (lib/dom.js)

/* ---------- guess first ---------- */
function resetGuesses() {
  guesses = {};
  revealed = false;
}

function showMode() {
  const hiding = v.guess && !revealed;
  document.body.classList.toggle("guessing", hiding);
  $("#mf-text-wrap").hidden = hiding;
  $("#mf-text-hidden").hidden = !hiding;
  $("#mf-guess-box").hidden = !v.guess;
  $("#mf-corrupt-section").hidden = hiding;
}

/* The guess boxes (pages/mask_fill_guess.js): `guesses` is this page's, filled as the student types. */
const drawGuessInputs = () => drawGuesses(v, guesses, revealed);
const updateRevealButton = () => revealState(v, guesses, revealed);

$("#mf-guess").addEventListener("change", (event) => {
  state.set({ guess: event.target.checked });
  resetGuesses();
  showMode();
  renderChars();
  drawGuessInputs();
  fill();
});

$("#mf-reveal").addEventListener("click", () => {
  revealed = true;
  showMode();
  renderChars();
  updateRevealButton();
  fill();
  corrupt();
});

$("#mf-again").addEventListener("click", () => {
  resetGuesses();
  showMode();
  renderChars();
  drawGuessInputs();
  fill();
});

/* ---------- predictions ---------- */
function clearPredictions(message) {
  fills.cancel();
  clear($("#mf-results"));
  $("#mf-status").textContent = message;
}

async function fill() {
  const status = $("#mf-status");
  if (!v.text) {
    clearPredictions("No sentence yet.");
    return;
  }
  const hasMarkers = v.text.includes("[MASK]");
  if (!v.pos.length && !hasMarkers) {
    clearPredictions("No character is masked yet: click one above.");
    return;
  }
  if (v.guess && !revealed) {
    clearPredictions("BERT's guesses stay hidden until you reveal yours.");
    return;
  }
  const current = fills.begin();
  status.textContent = "Asking BERT…";
  const guessing = v.guess && revealed;
  try {
    const body = { text: v.text, positions: v.pos.length ? v.pos : null, top_k: guessing && vocabSize ? vocabSize : v.k };
    const data = await ask("/api/mask-fill", body, onDevice("/api/mask-fill"), { fields: FIELDS }); // the server, or this device
    if (!current()) return;
    clearError();
    fieldMessage(textBox, "", "error");
    const results = clear($("#mf-results"));
    if (guessing) results.appendChild(scoreLine(data.masks, guesses));
    for (const mask of data.masks) results.appendChild(maskCard(mask, guessing ? guesses[mask.position] : null, v.k));
    const note = unknownNote(data.unknown_chars);
    if (note) results.appendChild(note);
    status.textContent = data.masks.length + " mask" + (data.masks.length === 1 ? "" : "s") +
      " filled. BERT sees the characters on both sides of every mask.";
  } catch (err) {
    if (current()) {
      clear($("#mf-results"));
      status.textContent = "No predictions: see the message above.";
    }
  }
}
const fillSoon = debounce(fill, 150);

/* ---------- controls ---------- */
function textChanged() {
  resetGuesses();
  sanitize();
  state.write();
  renderChars();
  drawGuessInputs();
  if (!v.text) {
    fieldMessage(textBox, "The sentence is empty: type one or choose an example.", "error");
    clearPredictions("No sentence yet.");
    clearCorrupt("No sentence to corrupt.");
    return;
  }
  fieldMessage(textBox, "", "error");
  fill();
  corrupt();
}

const onText = debounce(() => {
  v.text = textBox.value;
  textChanged();
}, 300);

textBox.addEventListener("input", () => {
  const fitted = fitText(textBox.value, "text you typed or pasted");
  if (fitted !== textBox.value) textBox.value = fitted;
  $("#mf-text-count").textContent = String(len(textBox.value));
  if (!textBox.value) { // empty: clear what was shown for the old sentence at once, not after the pause
    clearPredictions("No sentence yet.");
    clearCorrupt("No sentence to corrupt.");
  }
  onText();
});

$("#mf-example").addEventListener("change", (event) => {
  if (!event.target.value) return;
  state.set({ text: fitText(event.target.value, "example"), pos: [] });
  event.target.value = "";
  syncControls();
  textChanged();
});

kSlider.addEventListener("input", () => {
  state.set({ k: Number(kSlider.value) });
  showValues();
  fillSoon();
});

rateSlider.addEventListener("input", () => {
  state.set({ rate: Number(rateSlider.value) });
  showValues();
  corruptSoon();
});

seedBox.addEventListener("input", () => {
  const seed = parseInt(seedBox.value, 10);
  if (!Number.isFinite(seed) || seed < 0 || seed > maxSeed) {
    if (seedBox.value !== "") fieldMessage(seedBox, FIELDS.seed.say(), "error");
    return;
  }
  fieldMessage(seedBox, "", "error");
  state.set({ seed });
  corruptSoon();
});

$("#mf-resample").addEventListener("click", () => {
  state.set({ seed: v.seed >= maxSeed ? 0 : v.seed + 1 });
  seedBox.value = String(v.seed);
  corrupt();
});

$("#mf-clear").addEventListener("click", () => {
  state.set({ pos: [] });
  resetGuesses();
  renderChars();
  drawGuessInputs();
  fill();
});

$("#mf-reset").addEventListener("click", () => {
  state.reset();
  if (own) state.set({ text: own.sentence, pos: own.mask });
  resetGuesses();
  clearError();
  clearFieldErrors();
  sanitize();
  syncControls();
  renderChars();
  drawGuessInputs();
  fill();
  corrupt();
});

/* A run's set: the examples menu lists lines of its own held-out text, and the default sentence
   (a link without `text`) is one of them, with a word blanked, instead of Shakespeare's. */
function useOwnExamples(examples) {
  if (!examples) return;
  own = examples;
  const menu = $("#mf-example");
  menu.replaceChildren(el("option", { value: "", text: "Choose a line of its own text…" }),
    ...examples.lines.map((line) => el("option", { text: line })));
  if (!linkHas("text") && v.text === DEFAULT_TEXT) {
    v.text = examples.sentence;
    v.pos = examples.mask.slice();
    syncControls();
  }
}

/* ---------- start ---------- */
sanitize();
syncControls();
renderChars();
drawGuessInputs();
badge($("#mf-status")); // where the answers are computed: this server or this device
warmUp(needs("/api/mask-fill")); // a static copy loads BERT now; a server only with --models-on-phones (lib/compute.js)
info().then((info) => {
  const bert = info.cards.bert;
  if (Number.isFinite(info.limits.max_masks)) maxMasks = info.limits.max_masks;
  if (Number.isFinite(info.limits.max_seed)) {
    maxSeed = info.limits.max_seed;
    seedBox.max = String(maxSeed);
  }
  vocabSize = info.vocab.chars.length;
  useOwnExamples(info.examples);
  if (bert && bert.config) {
    maxLen = bert.config.context - 2;
    $("#mf-help-len").textContent = " BERT reads at most " + maxLen + " characters.";
    showRecipe(bert, (rate) => { v.rate = rate; syncControls(); });
  }
}).catch(() => {}).finally(() => {
  const fitted = fitText(v.text, "link's sentence");
  if (fitted !== v.text) {
    v.text = fitted;
    syncControls();
  }
  sanitize();
  state.write();
  renderChars();
  drawGuessInputs();
  if (!v.text) fieldMessage(textBox, "The sentence is empty: type one or choose an example.", "error");
  fill();
  corrupt();
});
