/* Fill the missing spans, told truthfully (issue 54): beside T5's answer, what this T5 gets right on
   lines it never read (its card's free-running figure: written on its own, as here), and what BERT
   fills in the very same spans when told how long each one is. So a student reads a wrong character
   as the model's mistake, not the page's.
   truthNote(card)              the card's figures in plain words (or says the card has none yet)
   drawBert(node, data, answer) BERT's fill (POST /api/mask-fill, top_k 1, one [MASK] per hidden
                                character) under T5's answer, and BERT's line in each span card
   Everything the server sends is shown as text (textContent), never as markup. */
import { el, clear } from "../lib/dom.js";
import { visibleChar, charName, pct, chars, thousands } from "../lib/text.js";

/* The test plays' figures if the card has them, else the validation plays'. */
function heldOut(card) {
  const ev = (card && card.evaluation) || {};
  const split = ["test", "validation"].find((s) => ev[s] && ev[s].free_running);
  return split ? { split, e: ev[split] } : null;
}

export function truthNote(card) {
  const found = heldOut(card);
  if (!found) {
    return el("p", { class: "note sp-truth-note", id: "sp-truth", text: "How good is this T5 on new lines? Its card " +
      "does not say yet how often it writes hidden characters back right on its own, as it does here." });
  }
  const { e } = found;
  const free = e.free_running;
  const plays = (e.documents || []).map((d) => d.replace(/_/g, " ").replace(/\b\w/g, (c) => c.toUpperCase())).join(" and ");
  const parts = [
    el("strong", { text: "How good is this T5? " }),
    "On " + thousands(free.windows) + " lines from plays it never read" + (plays ? " (" + plays + ")" : "") +
      ", with 15 % of each line hidden in spans of about 3 and T5 writing them back on its own as it does here, it wrote ",
    el("strong", { text: pct(free.span_char_top1) }), " of the hidden characters right and ",
    el("strong", { text: pct(free.spans_exact) }), " of the spans exactly right.",
  ];
  if (e.unigram_baseline) {
    parts.push(" Always writing the most common character of its training text gets " +
      pct(e.unigram_baseline.span_char_top1) + " right on the same plays.");
  }
  parts.push(" So a wrong character here is this small model's own mistake, not the page's.");
  if (Number.isFinite(e.span_char_top1)) {
    parts.push(" (Its card's other figure, " + pct(e.span_char_top1) + ", lets T5 see the true characters of each span " +
      "as it writes it, which this page never does.)");
  }
  return el("p", { class: "note sp-truth-note", id: "sp-truth" }, parts);
}

/* BERT's guess at each hidden position, by character index. */
function guesses(data) {
  const out = new Map();
  for (const m of data.masks) if (m.predictions && m.predictions.length) out.set(m.position, m.predictions[0]);
  return out;
}

/* The line with BERT's characters in the hidden places, green when right, pink when not. */
function bertLine(text, hidden, guess) {
  const line = el("p", { class: "sp-line", id: "sp-bert-line" });
  chars(text).forEach((c, i) => {
    if (!hidden.has(i)) return line.appendChild(document.createTextNode(c));
    const g = guess.get(i);
    const got = g ? g.char : "?";
    line.appendChild(el("mark", { class: got === c ? "fill-ok" : "fill-bad", text: visibleChar(got),
      title: "hidden: " + charName(c) + "; BERT: " + charName(got) }));
  });
  return line;
}

export function drawBert(node, data, answer) {
  clear(node);
  const guess = guesses(data);
  const hidden = new Set();
  answer.spans.forEach((s) => { for (let p = s.start; p < s.end; p++) hidden.add(p); });
  const text = answer.text;
  const truth = chars(text);
  let right = 0;
  hidden.forEach((p) => { if (guess.get(p) && guess.get(p).char === truth[p]) right += 1; });
  node.append(
    el("h3", { text: "What BERT fills here" }),
    el("p", { class: "note", text: "BERT reads the same line with a blank, written [MASK], in every hidden place, so it is told how " +
      "long each span is; T5 only sees one sentinel per span and must work out the length itself. BERT fills every " +
      "hidden place at once with its likeliest character." }),
    bertLine(text, hidden, guess),
    el("p", { class: "sp-score", id: "sp-bert-score" }, ["BERT filled ", el("strong", { text: String(right) }), " of ",
      el("strong", { text: String(hidden.size) }), " hidden characters right."]),
  );
  // and in each span card, BERT's line under T5's
  for (const s of answer.spans) {
    const card = document.querySelector(".span-card[data-span='" + s.span + "']");
    if (!card) continue;
    const filled = [];
    for (let p = s.start; p < s.end; p++) filled.push(guess.get(p) ? guess.get(p).char : "?");
    const ok = filled.filter((c, i) => c === truth[s.start + i]).length;
    const old = card.querySelector(".sp-bert");
    if (old) old.remove();
    card.querySelector(".sp-wrote").after(el("p", { class: "sp-wrote sp-bert", dataset: { filled: filled.join("") } },
      ["BERT filled “", el("strong", { text: filled.map(visibleChar).join("") }), "”: ",
        el("span", { class: ok === filled.length ? "ok" : "nok", text: ok + " of " + filled.length + " right" })]));
  }
}
