/* ELECTRA's page pieces (its spec: app/contract/families.py). ELECTRA's discriminator reads a line
   in which a small generator swapped some characters and says, for every character, how likely it
   is that it was swapped. The Train page shows that on its probe line, and the held-out rows. */
import { el, clear } from "../lib/dom.js";
import { num, pct, visibleChar } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { splits, splitName } from "../lib/evaluation.js";

export default {
  name: "electra",
  chart: { caption: "ELECTRA loss (generator + spotting swaps)", yLabel: "loss (generator + 50 × detection)" },
  view: { title: "ELECTRA spots the swapped characters" },
  page: { href: "/objectives", text: "Objectives" },

  /* The line as the generator left it; a character ELECTRA calls swapped (p > 50 %) or one that
     really was swapped is marked: green when ELECTRA is right about it, pink when it is wrong.
     compact (a snapshot card): the marked line only. */
  show(node, d, compact = false) {
    clear(node);
    if (!d) { node.append(el("pre", { class: "sample", text: "(no ELECTRA in this run)" })); return; }
    const swapped = new Set(d.replaced);
    const line = el("pre", { class: "sample" });
    [...d.corrupted].forEach((ch, i) => {
      const p = d.p_replaced[i];
      const said = p > 0.5;
      if (!said && !swapped.has(i)) { line.append(ch); return; }
      line.append(el("mark", { class: said === swapped.has(i) ? "fill-ok" : "fill-bad", text: visibleChar(ch),
        title: `p(swapped) ${num(100 * p, 0)} %; ${swapped.has(i) ? "it was swapped" : "it is the original"}` }));
    });
    line.append(el("span", { class: "note", text: `   right about ${d.correct} of ${d.characters} characters` }));
    if (!compact) node.append(el("pre", { class: "sample", text: d.text }));
    node.append(line);
  },

  legend() {
    return el("p", { class: "note fill-legend" }, [el("mark", { class: "fill-ok", text: "green" }),
      " = a swap ELECTRA caught · ", el("mark", { class: "fill-bad", text: "pink" }),
      " = a swap it missed, or an original character it called swapped"]);
  },

  /* The home page's model card: how many swaps it catches, how many originals it wrongly flags,
     against always answering "original", with its own generator's swaps and with random ones. */
  cardTables(card) {
    const names = splits(card);
    const ev = (s) => card.evaluation[s] || {};
    const rows = [
      ["Swapped characters caught (p > 50 %)", (e) => pct(e.replaced_recall || 0)],
      ["Original characters wrongly called swapped", (e) => pct(e.original_flagged || 0)],
      ["Right at every character", (e) => pct(e.detection_accuracy || 0)],
      ["Always answering “original”", (e) => pct(e.always_original_accuracy || 0)],
      ["How often a swapped character scores above an original one (AUC: 1 = always, 0.5 = a coin flip)", (e) => num(e.auc, 3)],
      ["Swaps caught when the swaps are random characters", (e) => (e.random_fill ? pct(e.random_fill.replaced_recall) : "–")],
    ].map(([label, pick]) => [label].concat(names.map((s) => pick(ev(s)))));
    return [table("ELECTRA on held-out plays, its own small generator swapping 15 % of the characters (" +
      names.map((s) => splitName(card, s)).join("; ") + ")", ["Figure"].concat(names), rows, true)];
  },

  results(e) {
    return [["ELECTRA", "swapped characters caught (p > 50 %)", `${num(100 * e.replaced_recall, 1)} %`],
      ["ELECTRA", "original characters wrongly called swapped", `${num(100 * e.original_flagged, 1)} %`],
      ["ELECTRA", "right at every character / always answering “original”",
        `${num(100 * e.detection_accuracy, 1)} % / ${num(100 * e.always_original_accuracy, 1)} %`]];
  },
};
