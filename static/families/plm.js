/* PLM's page pieces (its spec: app/contract/families.py; its model: training/plm.py). PLM (the
   worldview of XLNet) picks a random order of a line's characters and guesses the last ones in that
   order, each from every character earlier in the order: from both sides, one after another. The
   Train page shows its guesses on the probe line (green right, pink wrong), and the held-out rows. */
import { el, clear } from "../lib/dom.js";
import { num, pct, visibleChar } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { splits, splitName } from "../lib/evaluation.js";

export default {
  name: "plm",
  chart: { caption: "PLM loss (the last characters of a random order)", yLabel: "loss (nats per character guessed)" },
  view: { title: "PLM guesses in a random order" },
  page: { href: "/objectives", text: "Objectives" },

  show(node, d, compact = false) {
    clear(node);
    if (!d) { node.append(el("pre", { class: "sample", text: "(no PLM in this run)" })); return; }
    const at = new Map(d.guesses.map((g) => [g.position, g]));
    const line = el("pre", { class: "sample" });
    [...d.probe].forEach((ch, i) => {
      const g = at.get(i);
      if (!g) { line.append(ch); return; }
      line.append(el("mark", { class: g.char === g.truth ? "fill-ok" : "fill-bad", text: visibleChar(g.char),
        title: `guess ${visibleChar(g.char)} (${num(100 * g.prob, 0)} %), truth ${visibleChar(g.truth)}` }));
    });
    line.append(el("span", { class: "note", text: `   ${d.correct} of ${d.guesses.length} right` }));
    if (!compact) node.append(el("pre", { class: "sample", text: d.masked }));
    node.append(line);
  },

  legend() {
    return el("p", { class: "note fill-legend" }, [el("mark", { class: "fill-ok", text: "green" }),
      " = PLM's guess is right · ", el("mark", { class: "fill-bad", text: "pink" }), " = wrong (its guess is shown)"]);
  },

  cardTables(card) {
    const names = splits(card);
    const ev = (s) => card.evaluation[s] || {};
    const rows = [
      ["Trained PLM", (e) => pct(e.predicted_top1 || 0)],
      ["Same architecture, random init", (e) => pct((e.random_init || {}).predicted_top1 || 0)],
      ["Always the most common character", (e) => pct((e.unigram_baseline || {}).predicted_top1 || 0)],
    ].map(([label, pick]) => [label].concat(names.map((s) => pick(ev(s)))));
    return [table("PLM: the last 15 % of a random order guessed right on held-out plays (" +
      names.map((s) => splitName(card, s)).join("; ") + ")", ["Model"].concat(names), rows, true)];
  },

  results(e) {
    return [["PLM", "characters guessed right, last 15 % of a random order (top-1)", `${num(100 * e.predicted_top1, 1)} %`],
      ["PLM", "always guessing the most common character", `${num(100 * e.unigram_baseline.predicted_top1, 1)} %`]];
  },
};
