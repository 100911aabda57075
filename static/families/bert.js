/* BERT's page pieces (its spec: app/contract/families.py): the Train page's live fill of the probe
   line (green right, pink wrong) and its held-out result rows. */
import { el, clear } from "../lib/dom.js";
import { num, visibleChar } from "../lib/text.js";

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

  results(b) {
    const rows = [["BERT", "hidden characters guessed right: top-1 / top-5", `${num(100 * b.masked_top1, 1)} % / ${num(100 * b.masked_top5, 1)} %`],
      ["BERT", "always guessing the most common character (top-1)", `${num(100 * b.unigram_baseline.masked_top1, 1)} %`]];
    if (b.nsp_accuracy !== undefined) {
      rows.push(["BERT", "NSP accuracy: is B the next part? (50 % = chance, a coin flip)", `${num(100 * b.nsp_accuracy, 1)} %`]);
    }
    return rows;
  },
};
