/* Class sessions, shared by the teacher's page, the projector and the phones (static/pages/class_*.js):
   the session API, following the class live, and drawing one item and its pooled answers.
   follow(code, handlers)  handlers.state(state) now and whenever the teacher changes it: server-sent
                          events, and a poll every 2 s while the event stream is down (so a phone
                          that lost its connection still follows within 2 s once it is back);
                          handlers.back() once it is back (the stream open again, or a poll answered).
                          While the stream is down, every screen (phone, teacher, projector) shows a
                          "Reconnecting…" line at the top (#c-reconnecting), and handlers.down() is
                          called: a phone takes no taps then (its answer is not sent; the line says so).
   choiceLabel(activity, choices, key)  an answer as a person reads it ("B. From the text itself…")
   drawItem(node, current, opts)   what an item shows (segments A and B, a question, a masked sentence);
                          opts.choices: list a concept question's choices too (projector, teacher)
   drawPooled(node, result)  how many answered; once revealed, the class's answers as bars beside the
                          truth and BERT's answer, a concept question's "why" under each choice
   drawLabels(node, results, lines, labels, revealed)  Label together: each line's text with how many
                          labelled it; once revealed, its label bars */
import { api } from "./api.js";
import { bars } from "./charts.js";
import { clear, el } from "./dom.js";
import { listen } from "./stream.js";

export const sessionPath = (code, rest) => "/api/sessions/" + encodeURIComponent(code) + (rest || "");
export const getState = (code) => api(sessionPath(code), { model: false, quiet: true });
export const getResults = (code) => api(sessionPath(code, "/results"), { model: false, quiet: true });

export function follow(code, handlers) {
  let poll = null;
  const source = listen(sessionPath(code, "/events"), {
    state: (data) => handlers.state(data),
    results: (data) => handlers.results && handlers.results(data),
    gone: () => { source.close(); handlers.gone && handlers.gone(); },
  });
  let down = false;
  const back = () => { if (down) { down = false; reconnecting(false); handlers.back && handlers.back(); } };
  const refresh = () => getState(code).then((s) => { back(); handlers.state(s); }, (err) => handlers.error && handlers.error(err));
  source.addEventListener("open", () => { clearInterval(poll); poll = null; back(); });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED && !down) return; // closed on purpose (the session is over)
    if (!down) { down = true; reconnecting(true); handlers.down && handlers.down(); }
    if (!poll) poll = setInterval(refresh, 2000);
  });
  return source;
}

/* The line at the top of every class screen while the server is not answering. */
export function reconnecting(on) {
  let line = document.getElementById("c-reconnecting");
  if (!line && on) {
    // the second sentence is the phones' (a tap); the projector shows the first alone (static/stage.css)
    line = el("p", { id: "c-reconnecting", class: "c-reconnecting", role: "status" }, ["Reconnecting to the class…",
      el("span", { class: "c-reconnecting-more", text: " This screen catches up by itself when the server answers again; " +
        "a tap meanwhile is not sent." })]);
    document.body.prepend(line);
  }
  if (line) line.hidden = !on;
}

export const isReconnecting = () => { const line = document.getElementById("c-reconnecting"); return !!line && !line.hidden; };

const NSP_QUESTION = "Is B the next sentence after A?";
const NSP_WORDS = { IsNext: "IsNext: B comes right after A in the play", NotNext: "NotNext: B was taken from somewhere else" };
export const LETTERS = "ABCDEFGHIJ";

/* A choice of the bank is text; an older server sent {text, why}: print its text either way. */
const textOf = (choice) => (choice && typeof choice === "object" ? String(choice.text) : String(choice));

export function choiceLabel(activity, choices, key) {
  if (activity === "concept") {
    const k = Number(key);
    return Number.isInteger(k) && choices && k >= 0 && k < choices.length ? LETTERS[k] + ". " + textOf(choices[k]) : String(key);
  }
  if (activity === "nsp") return NSP_WORDS[key] || key;
  return key;
}

/* A guessed character as a bar label: an empty guess (sent as a space) is "∅", and its note says so. */
const blank = (ch) => ch === " " || ch === "";
const guessLabel = (ch) => (blank(ch) ? "∅" : ch);

export function drawItem(node, current, opts) {
  const o = opts || {};
  clear(node);
  const c = current.content;
  if (current.activity === "nsp") {
    // .c-nsp-question is the projector's (static/stage.css): the room reads the question before the reveal,
    // where phones and the teacher's page keep the longer .c-ask
    node.append(el("p", { class: "note c-ask", text: "Does segment B follow segment A in the play? BERT was trained to answer this (next-sentence prediction)." }),
      el("p", { class: "c-question c-nsp-question", text: NSP_QUESTION }),
      el("p", { class: "label c-seg-name", text: "Segment A" }), el("div", { class: "c-seg c-seg-a", text: c.a }),
      el("p", { class: "label c-seg-name c-seg-name-b", text: "Segment B" }), el("div", { class: "c-seg c-seg-b", text: c.b }));
  } else if (current.activity === "concept") {
    node.append(el("p", { class: "note c-ask", text: c.topic }), el("p", { class: "c-question", text: c.question }));
    if (o.choices) {
      node.append(el("ol", { class: "c-choice-list", type: "A" }, c.choices.map((choice, k) =>
        el("li", { class: current.truth === String(k) ? "is-truth" : "", text: textOf(choice) }))));
    }
  } else if (current.activity === "fill") {
    node.append(el("p", { class: "note c-ask", text: "Be the BERT: guess each hidden character (▢) from the characters on both sides, as BERT does." }));
    const line = el("p", { class: "c-seg c-bert-line" });
    c.parts.forEach((part, j) => {
      line.append(part);
      const shown = current.truth ? current.truth[j] : null; // revealed: the character that was hidden
      if (j < c.masks) line.append(el("span", { class: shown ? "c-hole is-truth" : "c-hole", dataset: { mask: String(j) }, text: shown || "▢" }));
    });
    node.append(line);
  } else if (current.activity === "label") {
    node.append(el("p", { class: "note c-ask", text: "Label together: your class's labels become training data a model can be fine-tuned on." }));
  }
}

function countRows(counts, total, labelOf, truth, bert) {
  return Object.entries(counts).map(([key, n]) => ({
    char: key, label: labelOf(key), prob: total ? n / total : 0,
    note: n + (n === 1 ? " answer" : " answers") + (blank(key) ? " · left blank" : "") + (key === truth ? " · ✔ truth" : "") +
      (key === bert ? " · BERT" : ""),
  }));
}

const percent = (share) => Math.round(share * 100) + " %";
const answeredText = (n) => n + " answered";

/* A concept question's answers: each choice's letter and text over its bar, then (revealed) its why. */
function conceptRows(node, result, truth) {
  const list = el("ol", { class: "c-answer-rows", "aria-label": "The class's answers" });
  result.choices.forEach((choice, k) => {
    const n = result.counts[String(k)] || 0;
    const fill = el("span", { class: "bar-fill" });
    fill.style.width = (result.answered ? (100 * n) / result.answered : 0).toFixed(1) + "%";
    const right = truth === String(k);
    const why = result.why ? result.why[k] : null;
    list.append(el("li", { class: "c-answer" + (right ? " is-truth" : "") }, [
      el("span", { class: "c-answer-text", text: LETTERS[k] + ". " + textOf(choice) + (right ? "  ✔ the answer" : "") }),
      el("span", { class: "c-answer-bar" }, [el("span", { class: "bar-track", "aria-hidden": "true" }, fill),
        el("span", { class: "c-answer-n", text: n + (n === 1 ? " answer" : " answers") })]),
      truth !== null && why ? el("span", { class: "c-why", text: "Why not: " + why }) : null,
    ]));
  });
  node.append(list);
  if (truth !== null && result.explanation) node.append(el("p", { class: "c-explain", text: result.explanation }));
}

export function drawPooled(node, result, opts) {
  clear(node);
  if (!result) return;
  // Before the reveal the server sends how many answered, never the split (nobody can follow the majority)
  node.append(el("p", { class: "note c-count", text: answeredText(result.answered) +
    (result.revealed ? "" : " so far: the class's answers are shown at the reveal") }));
  if (!result.revealed || !result.counts) return;
  const truth = result.truth;
  if (result.activity === "fill") {
    const grid = el("div", { class: "c-mask-result" });
    result.counts.forEach((counts, j) => {
      const mask = result.model && result.model.masks[j];
      const box = el("div", { class: "c-mask-box" });
      const right = truth ? truth[j] : null;
      const share = result.char_correct ? result.char_correct[j] : null;
      box.append(el("h3", { text: "Hidden character " + (j + 1) + (right !== null ? ": it was “" + right + "”" : "") }));
      if (share !== null && share !== undefined) box.append(el("p", { class: "c-share", text: percent(share) + " of the class got this one" }));
      const classBars = el("div", { class: "c-class-bars" }); // its notes count the answers (the projector drops the %)
      bars(classBars, countRows(counts, result.answered, guessLabel, right, null), { label: "The class's guesses", table: false });
      box.append(el("p", { class: "label", text: "The class" }), classBars);
      if (mask) {
        const bertBars = el("div", { class: "c-bert-bars" });
        bars(bertBars, mask.predictions.map((p) => ({ char: p.char, prob: p.prob, marks: p.char === right ? ["original"] : [] })),
          { label: "BERT's probabilities", table: false });
        box.append(el("p", { class: "label", text: "BERT (its top guesses, with probabilities)" }), bertBars);
      }
      grid.append(box);
    });
    node.append(grid);
    if (result.class_correct !== undefined && result.class_correct !== null && result.counts.length > 1) {
      node.append(el("p", { class: "verdict", text: percent(result.class_correct) + " of the class got every hidden character right." }));
    }
    return;
  }
  if (result.activity === "concept") {
    conceptRows(node, result, truth);
  } else {
    const bert = result.model ? result.model.answer : null;
    const holder = el("div");
    bars(holder, countRows(result.counts, result.answered, (k) => k, truth, bert), // IsNext / NotNext, or a label
      { wide: true, label: "The class's answers", table: false });
    node.append(holder);
    if (result.model && result.activity === "nsp") {
      node.append(el("p", { class: "verdict", text: "BERT says " + result.model.answer + " (it gives IsNext a probability of " +
        Math.round(result.model.p_is_next * 100) + " %). The truth: " + result.truth + "." }));
    }
  }
  if (result.class_correct !== undefined && result.class_correct !== null) {
    node.append(el("p", { class: "verdict", text: percent(result.class_correct) + " of the class got it right." }));
  }
}

/* Label together, for the teacher, the projector and (after the reveal) the phones: every line's
   text with one bar per label; the label most of the class chose is marked (a tie: none). */
export function drawLabels(node, results, lines, labels, revealed) {
  clear(node);
  const byItem = new Map((results || []).filter((r) => r.activity === "label").map((r) => [r.item, r]));
  const list = el("ol", { class: "c-label-rows" });
  for (const line of lines || []) {
    const r = byItem.get(line.item);
    if (!revealed || (r && !r.counts)) { // before the reveal: how many labelled the line, not how
      list.append(el("li", { class: "c-label-row", dataset: { item: line.item } }, [
        el("span", { class: "c-label-text", text: line.text }),
        el("span", { class: "c-answer-n", text: answeredText(r ? r.answered : 0) })]));
      continue;
    }
    const counts = r ? r.counts : Object.fromEntries(labels.map((x) => [x, 0]));
    const total = r ? r.answered : 0;
    const ranked = Object.entries(counts).sort((a, b) => b[1] - a[1]);
    const top = ranked.length && ranked[0][1] > 0 && !(ranked.length > 1 && ranked[1][1] === ranked[0][1]) ? ranked[0][0] : null;
    const row = el("li", { class: "c-label-row", dataset: { item: line.item } }, [
      el("span", { class: "c-label-text", text: line.text }),
      el("span", { class: "c-label-bars" }, Object.entries(counts).map(([label, n]) => {
        const fill = el("span", { class: "bar-fill" });
        fill.style.width = (total ? (100 * n) / total : 0).toFixed(1) + "%";
        return el("span", { class: "c-label-bar" + (label === top ? " is-top" : "") }, [
          el("span", { class: "c-label-name", text: label }),
          el("span", { class: "bar-track", "aria-hidden": "true" }, fill),
          el("span", { class: "c-answer-n", text: String(n) }),
        ]);
      })),
    ]);
    list.append(row);
  }
  node.append(list);
}
