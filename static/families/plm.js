/* PLM's page pieces (its spec: app/contract/families.py; its model: training/plm.py). PLM (the
   worldview of XLNet) picks a random order of a line's characters and guesses the last ones in that
   order, each from every character earlier in the order: from both sides, one after another. The
   Train page shows its guesses on the probe line (green right, pink wrong), and the held-out rows. */
import { el, clear } from "../lib/dom.js";
import { num, pct, visibleChar } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { splits, splitName } from "../lib/evaluation.js";
import { shuffled } from "../lib/engine_core.js";

/* How many places of an order are guessed: the last 15 %, at least one (app/tasks/plm.py
   predicted_count; Python's round: halves to even). */
export function predictedCount(n) {
  const x = n * 0.15, f = Math.floor(x);
  const r = x - f > 0.5 || (x - f === 0.5 && f % 2 === 1) ? f + 1 : f;
  return Math.max(1, r);
}

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

  /* The attention page (app/tasks/plm.py attention_input, the same rule): the characters in place,
     then one [MASK] query for each of the last 15 % of the order shuffled(n, seed); rank 2r + 1 is the
     character at place r of the order, 2r the query of the position at place r. A character sees the
     characters up to its place in the order; a query those strictly before its place, and itself. */
  mask: {
    kind: "permuted",
    code: "allowed = (character_j & (rank_j <= rank_i)) | (i == j)",
    words: "Permuted: a random order of the characters is drawn, and each one may look only at the characters " +
      "earlier in that order, wherever they stand. The last few in the order are guessed by extra [MASK] " +
      "rows (queries) that know where they are but not what is there.",
    shape: "a scattered pattern that changes with the order",
    layout(items, { seed, special }) {
      const n = items.length, order = shuffled(n, seed), k = predictedCount(n);
      const place = new Array(n);
      order.forEach((pos, r) => { place[pos] = r; });
      const targets = order.slice(n - k);
      const seq = [...items, ...new Array(k).fill(special.MASK)];
      const ranks = [...items.map((_, i) => 2 * place[i] + 1), ...targets.map((t) => 2 * place[t])];
      return { seq, allowed: (i, j) => i === j || (ranks[j] % 2 === 1 && ranks[j] <= ranks[i]),
        extra: { position_ids: [...items.map((_, i) => i), ...targets], ranks }, row: (i) => i, order, targets };
    },
  },

  cardTables(card) {
    const names = splits(card);
    const ev = (s) => card.evaluation[s] || {};
    const rows = [
      ["Trained PLM", (e) => pct(e.predicted_top1 || 0)],
      ["Same architecture, random init", (e) => pct((e.random_init || {}).predicted_top1 || 0)],
      ["Always the most common character", (e) => pct((e.unigram_baseline || {}).predicted_top1 || 0)],
    ].map(([label, pick]) => [label].concat(names.map((s) => pick(ev(s)))));
    return [table("PLM: the last 15 % of a random order guessed right on held-out plays, each from the true characters " +
      "earlier in the order (" +
      names.map((s) => splitName(card, s)).join("; ") + ")", ["Model"].concat(names), rows, true)];
  },

  results(e) {
    return [["PLM", "characters guessed right, last 15 % of a random order (top-1)", `${num(100 * e.predicted_top1, 1)} %`],
      ["PLM", "always guessing the most common character", `${num(100 * e.unigram_baseline.predicted_top1, 1)} %`]];
  },
};
