/* The Mask-Fill Explorer's answer cards (pages/mask_fill.js asks, these draw): one card per mask
   with BERT's top guesses, the you-vs-BERT score of guess-first mode, and the [UNK] note.
   Everything the server sends is shown as text (textContent), never as markup. */
import { el } from "../lib/dom.js";
import { charName, pct } from "../lib/text.js";
import { bars } from "../lib/charts.js";

export function unknownNote(unknown) {
  if (!unknown || !unknown.length) return null;
  return el("p", { class: "note", text: "Not in the model's vocabulary (read as [UNK]): " +
    unknown.map((u) => charName(u.char) + " at " + u.position).join(", ") });
}

/* One mask's card: the original's probability and rank, the student's guess (guess-first mode), and
   BERT's top k as bars. mask.predictions: every prediction (guess mode asks for the whole vocabulary,
   to rank the student's guess). */
export function maskCard(mask, guess, k) {
  const original = mask.original;
  const all = mask.predictions;
  let shown = all.slice(0, k);
  const guessAt = guess ? all.findIndex((p) => p.char === guess) : -1;
  if (guessAt >= k) shown = shown.concat([all[guessAt]]);
  const rows = shown.map((p) => {
    const marks = [];
    if (original && p.char === original.char) marks.push("original");
    if (guess && p.char === guess) marks.push("guess");
    return { char: p.char, prob: p.prob, marks };
  });
  const card = el("article", { class: "card mask-card", dataset: { position: String(mask.position) } }, [
    el("h3", { text: "Mask at position " + mask.position + (original ? ": was " + charName(original.char) : "") }),
  ]);
  if (original) {
    card.appendChild(el("p", { class: "original-line" }, [
      "★ Original " + charName(original.char) + ": ",
      el("strong", { class: "original-prob", dataset: { prob: String(original.prob) }, text: pct(original.prob) }),
      " · rank ", el("strong", { class: "original-rank", text: String(original.rank) }),
      original.rank === 1 ? " (BERT's top guess)" : "",
    ]));
  }
  if (guess) {
    const right = original && guess === original.char;
    card.appendChild(el("p", { class: "guess-line" }, [
      "✎ You guessed " + charName(guess) + ": ",
      el("span", { class: right ? "ok" : "nok", text: right ? "right" : "wrong" }),
      guessAt >= 0 ? " · BERT gives it " + pct(all[guessAt].prob) + " (rank " + (guessAt + 1) + ")"
        : " · not a character BERT knows",
    ]));
  }
  const chart = el("div", { class: "chart" });
  card.appendChild(chart);
  bars(chart, rows, { label: "Top " + Math.min(k, all.length) + " guesses for position " + mask.position,
    caption: "BERT's top " + Math.min(k, all.length) + " guesses at position " + mask.position });
  return card;
}

/* You against BERT over the masks: your typed guesses (position -> character) and BERT's top guess. */
export function scoreLine(masks, guesses) {
  let you = 0, bert = 0;
  for (const m of masks) {
    if (!m.original) continue;
    if (guesses[m.position] === m.original.char) you++;
    if (m.original.rank === 1) bert++;
  }
  return el("p", { class: "scoreboard versus", "aria-live": "polite" }, [
    el("span", {}, ["You: ", el("strong", { id: "mf-score-you", text: you + " / " + masks.length })]),
    el("span", {}, ["BERT (top guess): ", el("strong", { id: "mf-score-bert", text: bert + " / " + masks.length })]),
  ]);
}
