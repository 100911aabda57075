/* NSP Quiz: GET /api/nsp/quiz for a held-out pair, POST /api/nsp/quiz/{id}/answer for the truth and
   BERT's P(IsNext), POST /api/nsp/predict for your own pair. BERT's score on the whole bank comes
   from its model card (cards.bert.quiz, measured by `python -m training quiz` exactly as the server
   answers). URL: q (question index; in a class set, the position in the set), set (a class set:
   comma-separated question ids in the order to answer them), a and b (your own pair).
   Scores live in sessionStorage: one running score for the open quiz, one per class set. In the
   static copy the same three answers come from this device (lib/engine_lessons.js: BERT's NSP head
   and the quiz bank shipped beside the models). The pair on screen: nsp_pair.js; the scores: nsp_score.js. */
import { el, clear, $, debounce, typingTarget } from "../lib/dom.js";
import { charName, pct, thousands, len } from "../lib/text.js";
import { clearError, fieldMessage, sentence } from "../lib/errors.js";
import { api, info, latest } from "../lib/api.js";
import { urlState, modelId } from "../lib/state.js";
import { shortcutsEnabled } from "../lib/chrome.js";
import { isStatic, badge, warmUp, computeHere } from "../lib/compute.js";
import { onDevice, needs } from "../lib/engine.js";
import { playName, probChart, renderSequence, setTitles } from "./nsp_pair.js";
import { answered as storedAnswer, record, reset, score } from "./nsp_score.js";

/* The server's answer, or this device's in the static copy (which has no server). */
async function ask(path, opts) {
  if (!isStatic()) return api(path, opts);
  return computeHere(() => onDevice(path)((opts && opts.body) || {}, opts));
}

const MAX_SET = 200;
const state = urlState({
  q: -1,
  set: "",
  a: "To be, or not to be, that is the question:",
  b: "Whether 'tis nobler in the mind to suffer",
});
const v = state.values;
let question = null; // {id, index, a, b, count}
let answered = false;
let bankSize = null;
let context = 128;
const loads = latest(); // the latest answer wins

/* A message in plain words right after `anchor` (the control that caused it), scrolled into view. */
const fieldError = (anchor, message) => fieldMessage(anchor, message, "error", "after");

/* What went wrong, as a sentence; `own` is the sentence for errors about this control's input. */
function plain(err, own) {
  const detail = err.detail || "";
  if (err.status === 503 && err.parameter !== "model" && /not installed|no NSP quiz/.test(detail)) {
    return "This model set has no NSP quiz on this server.";
  }
  return sentence(err, own);
}

/* ---------- class set ---------- */
function parseSet(raw) {
  const ids = String(raw || "").split(",").map((s) => s.trim()).filter(Boolean);
  return ids.filter((id) => /^[A-Za-z0-9_-]{1,32}$/.test(id)).slice(0, MAX_SET);
}
let setIds = parseSet(v.set);
const inSet = () => setIds.length > 0;

function setLink(ids) {
  const p = new URLSearchParams();
  const model = modelId();
  if (model) p.set("model", model);
  p.set("set", ids.join(","));
  return location.origin + location.pathname + "?" + p.toString().replace(/%2C/g, ",");
}

function showScore() {
  const s = score(setIds);
  $("#n-score-you").textContent = s.you + " / " + s.n;
  $("#n-score-model").textContent = s.model + " / " + s.n;
  const note = $("#n-set-note");
  note.hidden = !inSet();
  $("#n-set-leave").hidden = !inSet();
  $("#n-set-link-row").hidden = !inSet();
  if (!inSet()) return;
  $("#n-set-link").value = setLink(setIds);
  const total = setIds.length;
  note.textContent = s.n < total
    ? "Class set: " + total + " questions in a fixed order. Answered " + s.n + " of " + total + "."
    : "Class set finished: you " + s.you + " / " + total + ", BERT " + s.model + " / " + total + ".";
}

/* Answer buttons stay readable after answering (aria-disabled, not disabled) so the chosen one
   keeps its mark next to the segments. */
function setAnswerButtons(mode, chosen) {
  for (const [id, guess] of [["#n-isnext", "IsNext"], ["#n-notnext", "NotNext"]]) {
    const button = $(id);
    button.disabled = mode === "off";
    button.setAttribute("aria-disabled", mode === "open" ? "false" : "true");
    button.setAttribute("aria-pressed", chosen === guess ? "true" : "false");
    const tag = button.querySelector(".chosen-tag");
    if (tag) tag.remove();
    if (chosen === guess) button.appendChild(el("span", { class: "chosen-tag", text: "your answer" }));
  }
}

/* ---------- quiz ---------- */
function wantedIndex() {
  if (!inSet()) return v.q;
  const m = /(\d+)$/.exec(setIds[v.q]);
  return m ? parseInt(m[1], 10) : NaN;
}

async function loadQuestion() {
  const current = loads.begin();
  answered = false;
  question = null;
  setAnswerButtons("off");
  clear($("#n-result"));
  fieldError($("#n-seq"), "");
  fieldError($("#n-answer-row"), "");
  const index = wantedIndex();
  try {
    if (inSet() && !Number.isFinite(index)) throw Object.assign(new Error("bad id"), { status: 404, setId: setIds[v.q] });
    const params = index >= 0 ? { index: String(index) } : undefined;
    const data = await ask("/api/nsp/quiz", { params, quiet: true });
    if (!current()) return;
    if (inSet() && data.id !== setIds[v.q]) throw Object.assign(new Error("moved"), { status: 404, setId: setIds[v.q] });
    clearError();
    question = data;
    bankSize = data.count;
    if (!inSet() && v.q < 0) state.set({ q: data.index });
    $("#n-qid").textContent = inSet()
      ? (v.q + 1) + " of " + setIds.length + " in the class set (" + data.id + ")"
      : data.id + " (" + (data.index + 1) + " of " + data.count + ")";
    renderSequence($("#n-seq"), data.a, data.b);
    const before = storedAnswer(setIds, data.id);
    if (before) {
      await answer(before.guess, true); // already answered in this set: show it again, score unchanged
    } else {
      setAnswerButtons("open");
    }
  } catch (err) {
    if (!current()) return;
    $("#n-qid").textContent = "unavailable";
    const has = bankSize ? " (it has " + bankSize + " questions)" : "";
    const missing = err.setId !== undefined || (err.status === 422 && err.parameter === "index");
    let own = null;
    if (missing && inSet()) {
      own = "Question " + setIds[v.q] + " of this class set is not in this server's quiz" + has + ". Ask for a new class-set link.";
    } else if (missing) {
      own = "There is no question " + (index + 1) + " in this server's quiz" + has + ". Press “Next question” to start from the first.";
    }
    fieldError($("#n-seq"), plain(err, own));
  }
}

async function answer(guess, replay) {
  if (!question || answered) return;
  answered = true;
  const item = question;
  setAnswerButtons("wait", guess);
  try {
    const r = await ask("/api/nsp/quiz/" + encodeURIComponent(item.id) + "/answer", { body: { guess }, quiet: true });
    if (question !== item) return;
    clearError();
    fieldError($("#n-answer-row"), "");
    if (!replay) {
      record(setIds, r, guess);
      showScore();
    }
    setAnswerButtons("done", guess);
    renderSequence($("#n-seq"), item.a, item.b, [r.source_a, r.source_b]);
    const box = clear($("#n-result"));
    box.appendChild(el("p", {}, [replay ? "You answered " : "You said ", el("strong", { class: "your-guess", text: guess }), ": ",
      el("span", { class: r.correct ? "ok" : "nok", text: r.correct ? "correct" : "wrong" })]));
    box.appendChild(el("p", {}, ["Truth: ", el("strong", { class: "truth", text: r.truth }),
      " (A is from " + playName(r.source_a) + ", B is from " + playName(r.source_b) + ")."]));
    box.appendChild(el("p", {}, ["BERT: P(IsNext) = ", el("strong", { class: "p-is-next", dataset: { prob: String(r.p_is_next) }, text: pct(r.p_is_next) }),
      " → " + r.model_guess + " ", el("span", { class: r.model_correct ? "ok" : "nok", text: r.model_correct ? "correct" : "wrong" })]));
    const chart = el("div", { class: "chart" });
    box.appendChild(chart);
    probChart(chart, r.p_is_next, "BERT's answer for " + r.id);
    if (!replay) $("#n-next").focus({ preventScroll: true }); // the segments stay where they are
  } catch (err) {
    if (question !== item) return;
    answered = false;
    setAnswerButtons("open");
    fieldError($("#n-answer-row"), plain(err, err.status === 404
      ? "This question is no longer in the server's quiz. Go to the next question." : null));
  }
}

function next() {
  if (inSet()) state.set({ q: (v.q + 1) % setIds.length });
  else if (v.q >= 0) state.set({ q: (v.q + 1) % (question ? question.count : bankSize || 1) });
  loadQuestion();
}

function enterSet(ids) {
  setIds = ids;
  state.set({ set: ids.join(","), q: ids.length ? 0 : -1 });
  showScore();
  loadQuestion();
}

async function makeSet() {
  const input = $("#n-set-count");
  fieldError(input, "");
  try {
    if (!bankSize) bankSize = (await ask("/api/nsp/quiz", { params: { index: "0" }, quiet: true })).count;
  } catch (err) {
    fieldError(input, plain(err));
    return;
  }
  const most = Math.min(bankSize, MAX_SET);
  const n = Number(input.value);
  if (!Number.isInteger(n) || n < 1 || n > most) {
    fieldError(input, input.value.trim() === "" ? "Type how many questions the class set should have (1 to " + most + ")."
      : "Choose a whole number of questions from 1 to " + most + ".");
    return;
  }
  // A random choice of questions in a random order; the link then fixes both.
  const pool = Array.from({ length: bankSize }, (_, i) => i);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(Math.random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  const ids = pool.slice(0, n).map((i) => "q" + String(i).padStart(3, "0"));
  reset(ids); // a new set starts with no answers
  enterSet(ids);
  $("#n-set-copied").textContent = "";
}

async function copyLink() {
  const input = $("#n-set-link");
  const status = $("#n-set-copied");
  try {
    await navigator.clipboard.writeText(input.value);
    status.textContent = "Link copied: share it with the class.";
  } catch (err) {
    // No clipboard API (a plain-http LAN address is not a "secure context"): select the text instead.
    input.focus();
    input.select();
    let done = false;
    try { done = document.execCommand("copy"); } catch (e) { done = false; }
    status.textContent = done ? "Link copied: share it with the class." : "The link is selected: copy it with Ctrl+C (⌘C on a Mac).";
  }
}

/* ---------- BERT's score on this bank, from its model card ---------- */
function showModelScore(card) {
  const box = clear($("#n-model-score"));
  const quiz = card && card.quiz;
  setTitles(quiz && quiz.titles);
  const evaluation = (card && card.evaluation) || {};
  const scored = ["test", "validation"].filter((s) => evaluation[s] && Number.isFinite(evaluation[s].nsp_accuracy));
  const plays = (s) => (evaluation[s].documents || []).map(playName).join(", ");
  const pairs = scored.length
    ? " On " + thousands(evaluation[scored[0]].nsp_pairs) + " held-out pairs cut the way training cuts them (whole lines, " +
      "half of them true continuations), it scores " + scored.map((s) => pct(evaluation[s].nsp_accuracy) + " on the " + s +
      " plays" + (plays(s) ? " (" + plays(s) + ")" : "")).join(" and ") + "." : "";
  if (!quiz || !quiz.items) {
    box.textContent = "BERT's score on this quiz is not in its model card (rebuild it with python -m training quiz)." + pairs;
    return;
  }
  const verdict = quiz.accuracy < 0.6
    ? "That is close to guessing: a coin toss gets about half right."
    : "A coin toss would get about half right.";
  box.appendChild(el("strong", { id: "n-model-accuracy", dataset: { correct: String(quiz.correct), items: String(quiz.items) },
    text: "BERT on this quiz: " + quiz.correct + " / " + quiz.items + " right (" + pct(quiz.accuracy) + ")." }));
  box.appendChild(document.createTextNode(" " + verdict + " It says IsNext " + quiz.is_next_said + " times; " +
    quiz.is_next_items + " answers really are IsNext." + pairs + " Can you beat it?"));
}

/* ---------- your own pair ---------- */
function showBudget() {
  const a = $("#n-a").value;
  const b = $("#n-b").value;
  $("#n-a-count").textContent = String(len(a));
  $("#n-b-count").textContent = String(len(b));
  const left = context - 3 - len(a) - len(b);
  $("#n-budget").textContent = left >= 0
    ? "BERT reads at most " + context + " tokens: " + left + " characters left for A + B."
    : "Too long by " + -left + " characters: BERT reads at most " + context + " tokens including [CLS] and two [SEP].";
}

/* The problem with the pair, as [control, sentence], or null. The server checks the same. */
function pairProblem(a, b) {
  if (!a) return [$("#n-a"), "Segment A is empty. Type the first segment."];
  if (!b) return [$("#n-b"), "Segment B is empty. Type the segment that might follow A."];
  const room = context - 3;
  const total = len(a) + len(b);
  if (total > room) {
    const which = len(a) >= room ? $("#n-a") : $("#n-b");
    return [which, "A and B together are " + total + " characters; BERT reads at most " + room +
      " (its " + context + " tokens minus [CLS] and two [SEP]). Shorten them by " + (total - room) + "."];
  }
  return null;
}

async function predict() {
  const box = clear($("#n-own-result"));
  fieldError($("#n-a"), "");
  fieldError($("#n-b"), "");
  fieldError($("#n-predict-row"), "");
  const problem = pairProblem(v.a, v.b);
  if (problem) {
    fieldError(problem[0], problem[1]);
    return;
  }
  try {
    const r = await ask("/api/nsp/predict", { body: { a: v.a, b: v.b }, quiet: true });
    clearError();
    const seq = el("div", { class: "nsp-seq" });
    renderSequence(seq, v.a, v.b);
    box.appendChild(seq);
    box.appendChild(el("p", { class: "verdict" }, ["BERT: P(IsNext) = ",
      el("strong", { class: "p-is-next", dataset: { prob: String(r.p_is_next) }, text: pct(r.p_is_next) }),
      " → ", el("strong", { text: r.prediction })]));
    const chart = el("div", { class: "chart" });
    box.appendChild(chart);
    probChart(chart, r.p_is_next, "BERT's answer for your pair");
    if (r.unknown_chars && r.unknown_chars.length) {
      box.appendChild(el("p", { class: "note", text: "Not in the vocabulary (read as [UNK]): " +
        r.unknown_chars.map((u) => charName(u.char)).join(", ") }));
    }
  } catch (err) {
    const control = err.parameter === "a" ? $("#n-a") : err.parameter === "b" ? $("#n-b") : $("#n-predict-row");
    const own = err.parameter === "a" || err.parameter === "b" ? (pairProblem(v.a, v.b) || [null, null])[1] : null;
    fieldError(control, plain(err, own));
  }
}

const onPair = debounce(() => state.set({ a: $("#n-a").value, b: $("#n-b").value }), 250);
for (const id of ["#n-a", "#n-b"]) {
  $(id).addEventListener("input", () => {
    showBudget();
    fieldError($(id), "");
    onPair();
  });
}

$("#n-isnext").addEventListener("click", () => answer("IsNext"));
$("#n-notnext").addEventListener("click", () => answer("NotNext"));
$("#n-next").addEventListener("click", next);
$("#n-set-make").addEventListener("click", makeSet);
$("#n-set-leave").addEventListener("click", () => enterSet([]));
$("#n-set-copy").addEventListener("click", copyLink);
$("#n-set-count").addEventListener("input", () => fieldError($("#n-set-count"), ""));
$("#n-predict").addEventListener("click", () => {
  state.set({ a: $("#n-a").value, b: $("#n-b").value });
  predict();
});
$("#n-reset").addEventListener("click", () => {
  reset(setIds);
  if (inSet()) state.set({ q: 0 });
  showScore();
  clearError();
  loadQuestion();
});

document.addEventListener("keydown", (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey || typingTarget(event.target)) return;
  if (!shortcutsEnabled()) return; // switched off (WCAG 2.1.4; chrome.js)
  const key = event.key.toLowerCase();
  if (key === "i") answer("IsNext");
  else if (key === "n") answer("NotNext");
  else if (event.key === "ArrowRight") next();
  else return;
  event.preventDefault();
});

/* ---------- start ---------- */
v.q = Number.isFinite(v.q) ? Math.max(-1, Math.round(v.q)) : -1;
if (inSet()) {
  if (v.set !== setIds.join(",")) state.set({ set: setIds.join(",") });
  if (!(v.q >= 0 && v.q < setIds.length)) state.set({ q: 0 });
}
$("#n-a").value = v.a;
$("#n-b").value = v.b;
showScore();
showBudget();
// the chosen model set's BERT card
info().then((set) => set.cards && set.cards.bert).then((card) => {
  if (card && card.config) context = card.config.context;
  showModelScore(card);
  showBudget();
}).catch(() => {
  $("#n-model-score").textContent = "BERT's model card could not be loaded, so its score on this quiz is not shown.";
}).finally(loadQuestion);
if (isStatic()) {
  warmUp(needs("/api/nsp/predict")); // this copy has no server: BERT runs here (the download starts now)
  badge($("#n-result")); // "Computed on your device"
}
