/* BERT's page pieces (its spec: app/contract/families.py): the Train page's live fill of the probe
   line (green right, pink wrong) and its held-out result rows. */
import { el, clear } from "../lib/dom.js";
import { num, pct, thousands, visibleChar } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { splits, splitName } from "../lib/evaluation.js";

export default {
  name: "bert",
  chart: { caption: "BERT loss (masked characters + NSP)", yLabel: "loss (MLM + NSP, nats)" },
  view: { title: "BERT fills the blanks" },
  page: { href: "/mask-fill", text: "Mask-Fill" },

  /* The probe line with its blanks, then BERT's guesses: green right, pink wrong; a guessed space
     or line break drawn. compact (a snapshot card): the guesses only. */
  show(node, b, compact = false) {
    clear(node);
    if (!b) { node.append(el("pre", { class: "sample", text: "(no BERT in this run)" })); return; }
    const fill = el("pre", { class: "sample" });
    const at = new Map(b.guesses.map((g) => [g.position, g]));
    [...b.filled].forEach((ch, i) => {
      const g = at.get(i);
      if (!g) { fill.append(ch); return; }
      const ok = g.char === g.truth;
      fill.append(el("mark", { class: ok ? "fill-ok" : "fill-bad", text: visibleChar(g.char),
        title: `guess ${visibleChar(g.char)} (${num(100 * g.prob, 0)} %), truth ${visibleChar(g.truth)}` }));
    });
    fill.append(el("span", { class: "note", text: `   ${b.correct} of ${b.guesses.length} right` }));
    if (!compact) node.append(el("pre", { class: "sample", text: b.masked }));
    node.append(fill);
  },

  legend() {
    return el("p", { class: "note fill-legend" }, [el("mark", { class: "fill-ok", text: "green" }), " = BERT's guess is right · ",
      el("mark", { class: "fill-bad", text: "pink" }), " = wrong (its guess is shown) · ",
      el("mark", { class: "fill-bad", text: "␣" }), " a space, ", el("mark", { class: "fill-bad", text: "⏎" }), " a line break"]);
  },

  /* The home page's model card: masked-character accuracy against two baselines, NSP, the quiz. */
  cardTables(card) {
    const names = splits(card);
    const head = ["Model"];
    for (const s of names) head.push("Top-1 (" + s + ")", "Top-5 (" + s + ")");
    const row = (label, pick) => [label].concat(...names.map((s) => {
      const e = pick(card.evaluation[s]) || {};
      return [pct(e.masked_top1 || 0), pct(e.masked_top5 || 0)];
    }));
    const masked = table("BERT masked-character accuracy on held-out plays (" + names.map((s) => splitName(card, s)).join("; ") +
      "; higher is better)", head, [
      row("Trained BERT", (e) => e),
      row("Same architecture, random init", (e) => e.random_init),
      row("Unigram baseline (most frequent chars)", (e) => e.unigram_baseline),
    ], true);
    const pairs = names.map((s) => card.evaluation[s].nsp_pairs).filter(Number.isFinite);
    const nsp = table("Next-sentence prediction accuracy on balanced pairs from held-out plays (" +
      (pairs.length ? thousands(pairs[0]) + " pairs per split, " : "") + "half true continuations, half from " +
      "elsewhere; chance = 50 %)", ["Model"].concat(names),
      [["Trained BERT"].concat(names.map((s) => pct(card.evaluation[s].nsp_accuracy || 0))),
        ["Random init"].concat(names.map((s) => pct((card.evaluation[s].random_init || {}).nsp_accuracy || 0)))], true);
    const out = [masked, nsp];
    const quiz = card.quiz;
    if (quiz && Number.isFinite(quiz.accuracy)) {
      const items = quiz.items || quiz.n || quiz.count;
      out.push(el("p", { class: "quiz-figure" }, ["On the NSP Quiz's own question bank" +
        (Number.isFinite(items) ? " (" + thousands(items) + " questions)" : "") + ", BERT answers ",
        el("strong", { text: pct(quiz.accuracy) }), " correctly (the figure the quiz page compares you with)."]));
    }
    return out;
  },

  results(b) {
    const rows = [["BERT", "hidden characters guessed right: top-1 / top-5", `${num(100 * b.masked_top1, 1)} % / ${num(100 * b.masked_top5, 1)} %`],
      ["BERT", "always guessing the most common character (top-1)", `${num(100 * b.unigram_baseline.masked_top1, 1)} %`]];
    if (b.nsp_accuracy !== undefined) {
      rows.push(["BERT", "NSP accuracy: is B the next part? (50 % = chance, a coin flip)", `${num(100 * b.nsp_accuracy, 1)} %`]);
    }
    return rows;
  },
};
