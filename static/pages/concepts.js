/* Concept check: GET /api/concepts (the questions, in the bank's order or a class set's order),
   POST /api/concepts/{id}/answer (right or wrong, the explanation, the applet to try). Answers given
   live in sessionStorage per order. URL: order (a class set's seed; -1 = the bank's order), q (current). */
import { el, clear, $ } from "../lib/dom.js";
import { clearError } from "../lib/errors.js";
import { api } from "../lib/api.js";
import { urlState } from "../lib/state.js";
import { withTerms } from "../lib/glossary.js";

const state = urlState({ order: -1, q: 0 });
const v = state.values;
let questions = [];
let answers = {}; // id -> {choice, correct, result}
const KEY = () => "pp-concepts-" + v.order;

function load() {
  try { answers = JSON.parse(sessionStorage.getItem(KEY()) || "{}") || {}; } catch (err) { answers = {}; }
}
function save() {
  try { sessionStorage.setItem(KEY(), JSON.stringify(answers)); } catch (err) { /* private mode */ }
}

function link() {
  const u = new URL(location.href);
  u.searchParams.delete("q");
  if (v.order >= 0) u.searchParams.set("order", String(v.order));
  else u.searchParams.delete("order");
  $("#q-link").value = u.toString();
}

function score() {
  const done = Object.values(answers);
  $("#q-score").textContent = done.filter((a) => a.correct).length + " / " + done.length;
  $("#q-left").textContent = questions.length ? "(" + (questions.length - done.length) + " of " + questions.length + " left)" : "";
}

function result(box, q, a) {
  clear(box);
  if (!a) return;
  box.appendChild(el("p", {}, [el("span", { class: a.correct ? "ok" : "nok", text: a.correct ? "Right." : "Not quite." }),
    " The answer: "].concat(withTerms(q.choices[a.result.answer]))));
  if (!a.correct && a.result.why) {
    box.appendChild(el("p", { class: "q-why" }, [el("strong", { text: "Why not “" + q.choices[a.choice] + "”: " })].concat(withTerms(a.result.why))));
  }
  box.appendChild(el("p", { class: "q-explain" }, withTerms(a.result.explanation)));
  box.appendChild(el("p", {}, ["See it live: ", el("a", { href: a.result.applet, text: a.result.applet_label })]));
}

function card(q, k) {
  const a = answers[q.id];
  const box = el("div", { class: "q-result", "aria-live": "polite" });
  const choices = q.choices.map((c, i) => {
    const input = el("input", { type: "radio", name: "q-" + q.id, value: String(i), id: "q-" + q.id + "-" + i,
      checked: a && a.choice === i ? true : null, disabled: a ? true : null });
    input.addEventListener("change", () => answer(q, i, box, fieldset));
    const cls = a ? (i === a.result.answer ? " is-answer" : i === a.choice ? " is-wrong" : "") : "";
    return el("label", { class: "q-choice" + cls, for: input.id }, [input, el("span", {}, withTerms((i + 1) + ". " + c))]);
  });
  const fieldset = el("fieldset", {}, [el("legend", {}, withTerms(q.number + ". " + q.question))].concat(choices));
  const node = el("article", { class: "panel q-card" + (k === v.q ? " is-current" : ""), id: "q-" + q.id, dataset: { index: String(k) } },
    [el("p", { class: "q-topic", text: q.topic }), fieldset, box]);
  result(box, q, a);
  return node;
}

async function answer(q, choice, box, fieldset) {
  try {
    const r = await api("/api/concepts/" + encodeURIComponent(q.id) + "/answer", { body: v.order >= 0 ? { choice, order: v.order } : { choice } });
    clearError();
    answers[q.id] = { choice, correct: r.correct, result: r };
    save();
    for (const input of fieldset.querySelectorAll("input")) input.disabled = true;
    fieldset.querySelectorAll(".q-choice").forEach((lab, i) => {
      lab.classList.toggle("is-answer", i === r.answer);
      lab.classList.toggle("is-wrong", i === choice && !r.correct);
    });
    result(box, q, answers[q.id]);
    score();
  } catch (err) { /* shown in the error box */ }
}

function render() {
  const list = clear($("#q-list"));
  questions.forEach((q, k) => list.appendChild(card(q, k)));
  score();
  link();
}

async function fetchQuiz() {
  try {
    const r = await api("/api/concepts", v.order >= 0 ? { params: { order: String(v.order) } } : {});
    clearError();
    questions = r.questions;
    load();
    render();
  } catch (err) { /* shown in the error box */ }
}

function focusQuestion(k) {
  v.q = Math.max(0, Math.min(questions.length - 1, k));
  state.write();
  const node = document.querySelector('#q-list [data-index="' + v.q + '"]');
  document.querySelectorAll("#q-list .q-card").forEach((n) => n.classList.toggle("is-current", n === node));
  if (node) {
    node.scrollIntoView({ block: "start" });
    const first = node.querySelector("input:not([disabled])") || node.querySelector("a") || node;
    if (first.focus) first.focus({ preventScroll: true });
  }
}

$("#q-new-set").addEventListener("click", () => {
  state.set({ order: Math.floor(Math.random() * 1000000), q: 0 });
  fetchQuiz();
});
$("#q-bank-order").addEventListener("click", () => { state.set({ order: -1, q: 0 }); fetchQuiz(); });
$("#q-restart").addEventListener("click", () => { answers = {}; save(); render(); });
$("#q-link").addEventListener("focus", (e) => e.target.select());
document.addEventListener("keydown", (e) => {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.target && e.target.id === "q-link") return;
  if (e.target && e.target.closest && e.target.closest("input[type=text], textarea, select")) return;
  const k = e.key.toLowerCase();
  if (k === "j") focusQuestion(v.q + 1);
  else if (k === "k") focusQuestion(v.q - 1);
  else if (/^[1-9]$/.test(e.key)) {
    const q = questions[v.q];
    const input = q && document.getElementById("q-" + q.id + "-" + (Number(e.key) - 1));
    if (input && !input.disabled) { input.checked = true; input.dispatchEvent(new Event("change")); }
  }
});

v.order = Number.isInteger(v.order) && v.order >= 0 ? v.order : -1;
state.write();
fetchQuiz();
