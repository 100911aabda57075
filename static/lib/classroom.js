/* Class sessions, shared by the teacher's page and the students' (static/pages/class_*.js):
   the session API, following the class live, and drawing one item's pooled answers.
   follow(code, onState)  calls onState(state) now and whenever the teacher changes it: server-sent
                          events, and a poll every 2 s while the event stream is down (so a phone
                          that lost its connection still follows within 2 s once it is back).
   drawItem(node, current)   what an item shows (segments A and B, a question, a masked sentence).
   drawPooled(node, result)  the class's answers as bars beside the truth and BERT's answer. */
import { api } from "./api.js";
import { bars } from "./charts.js";
import { clear, el } from "./dom.js";
import { listen } from "./stream.js";

export const sessionPath = (code, rest) => "/api/sessions/" + encodeURIComponent(code) + (rest || "");
export const getState = (code) => api(sessionPath(code), { model: false, quiet: true });
export const getResults = (code) => api(sessionPath(code, "/results"), { model: false, quiet: true });

export function follow(code, handlers) {
  let poll = null;
  const refresh = () => getState(code).then(handlers.state, (err) => handlers.error && handlers.error(err));
  const source = listen(sessionPath(code, "/events"), {
    state: (data) => handlers.state(data),
    results: (data) => handlers.results && handlers.results(data),
    gone: () => { source.close(); handlers.gone && handlers.gone(); },
  });
  source.addEventListener("open", () => { clearInterval(poll); poll = null; });
  source.addEventListener("error", () => { if (!poll) poll = setInterval(refresh, 2000); });
  return source;
}

const NSP_WORDS = { IsNext: "IsNext: B comes right after A in the play", NotNext: "NotNext: B was taken from somewhere else" };

export function choiceLabel(activity, choices, key) {
  if (activity === "concept") return choices[Number(key)];
  if (activity === "nsp") return NSP_WORDS[key] || key;
  return key;
}

export function drawItem(node, current) {
  clear(node);
  const c = current.content;
  if (current.activity === "nsp") {
    node.append(el("p", { class: "note", text: "Does segment B follow segment A in the play? BERT was trained to answer this (next-sentence prediction)." }),
      el("p", { class: "label", text: "Segment A" }), el("div", { class: "c-seg", text: c.a }),
      el("p", { class: "label", text: "Segment B" }), el("div", { class: "c-seg", text: c.b }));
  } else if (current.activity === "concept") {
    node.append(el("p", { class: "note", text: c.topic }), el("p", { class: "c-question", text: c.question }));
  } else if (current.activity === "bert") {
    node.append(el("p", { class: "note", text: "Be the BERT: guess each hidden character (▢) from the characters on both sides, as BERT does." }));
    const line = el("p", { class: "c-seg" });
    c.parts.forEach((part, j) => {
      line.append(part);
      if (j < c.masks) line.append(el("span", { class: "c-hole", dataset: { mask: String(j) }, text: "▢" }));
    });
    node.append(line);
  } else if (current.activity === "label") {
    node.append(el("p", { class: "note", text: "Label together: your class's labels become training data a model can be fine-tuned on." }));
  }
}

function countRows(counts, total, labelOf, truth, bert) {
  return Object.entries(counts).map(([key, n]) => ({
    char: key, label: labelOf(key), prob: total ? n / total : 0,
    note: n + (n === 1 ? " answer" : " answers") + (key === truth ? " · ✔ truth" : "") + (key === bert ? " · BERT" : ""),
  }));
}

export function drawPooled(node, result, opts) {
  clear(node);
  if (!result) return;
  const o = opts || {};
  const shown = result.revealed || o.teacher;
  node.append(el("p", { class: "note", text: result.answered + (result.answered === 1 ? " answer" : " answers") +
    (result.revealed ? "" : " so far (hidden until the reveal)") }));
  if (!shown || (!result.revealed && o.hideUntilReveal)) return;
  const truth = result.revealed ? result.truth : null;
  if (result.activity === "bert") {
    const grid = el("div", { class: "c-mask-result" });
    result.counts.forEach((counts, j) => {
      const mask = result.bert && result.bert.masks[j];
      const box = el("div");
      const right = truth ? truth[j] : null;
      box.append(el("h3", { text: "Hidden character " + (j + 1) + (right !== null ? ": it was “" + right + "”" : "") }));
      const classBars = el("div");
      bars(classBars, countRows(counts, result.answered, (k) => k, right, null), { label: "The class's guesses", table: false });
      box.append(el("p", { class: "label", text: "The class" }), classBars);
      if (mask) {
        const bertBars = el("div");
        bars(bertBars, mask.predictions.map((p) => ({ char: p.char, prob: p.prob, marks: p.char === right ? ["original"] : [] })),
          { label: "BERT's probabilities", table: false });
        box.append(el("p", { class: "label", text: "BERT (its top guesses, with probabilities)" }), bertBars);
      }
      grid.append(box);
    });
    node.append(grid);
  } else {
    const bert = result.bert ? result.bert.answer : null;
    const holder = el("div");
    bars(holder, countRows(result.counts, result.answered, (k) => choiceLabel(result.activity, result.choices, k), truth, bert),
      { wide: true, label: "The class's answers", table: false });
    node.append(holder);
    if (result.bert && result.activity === "nsp") {
      node.append(el("p", { class: "verdict", text: "BERT says " + result.bert.answer + " (it gives IsNext a probability of " +
        Math.round(result.bert.p_is_next * 100) + " %). The truth: " + result.truth + "." }));
    }
  }
  if (result.class_correct !== undefined && result.class_correct !== null) {
    node.append(el("p", { class: "verdict", text: Math.round(result.class_correct * 100) + " % of the class got it right." }));
  }
}
