/* T5's page pieces (its spec: app/contract/families.py; its model: training/t5.py). T5 reads a line
   with a few short spans hidden, each behind a sentinel (⟨0⟩, ⟨1⟩, …), and writes the spans back,
   each after its sentinel. The Train page shows that on its probe line, and the held-out rows. */
import { el, clear } from "../lib/dom.js";
import { num, pct } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { splits, splitName } from "../lib/evaluation.js";

const NAME = "t5";

export default {
  name: NAME,
  chart: { caption: "T5 loss (the hidden spans written back)", yLabel: "loss (nats per token written)" },
  view: { title: "T5 writes back the hidden spans" },
  page: { href: "/objectives", text: "Objectives" },

  /* The line as T5 reads it (each hidden span a ⟨k⟩), then each span: what it wrote, green where a
     character is right, pink where it is wrong. compact (a snapshot card): the spans only. */
  show(node, d, compact = false) {
    clear(node);
    if (!d) { node.append(el("pre", { class: "sample", text: "(no T5 in this run)" })); return; }
    if (!compact) node.append(el("pre", { class: "sample", text: d.corrupted }));
    const list = el("pre", { class: "sample" });
    for (const s of d.spans) {
      list.append("⟨" + s.span + "⟩ ");
      [...s.truth].forEach((ch, i) => {
        const got = [...s.written][i];
        list.append(el("mark", { class: got === ch ? "fill-ok" : "fill-bad", text: got === undefined ? "·" : got,
          title: "hidden: " + ch + (got === undefined ? "; nothing written" : "; written: " + got) }));
      });
      list.append("   ");
    }
    list.append(el("span", { class: "note", text: `right about ${d.correct} of ${d.hidden} hidden characters` }));
    node.append(list);
  },

  legend() {
    return el("p", { class: "note fill-legend" }, [el("mark", { class: "fill-ok", text: "green" }),
      " = a hidden character T5 wrote back right · ", el("mark", { class: "fill-bad", text: "pink" }),
      " = wrong (what it wrote is shown; · = nothing) · ⟨0⟩, ⟨1⟩ = where a span was hidden (a sentinel)"]);
  },

  /* The home page's model card: hidden characters written back right, against two baselines. */
  cardTables(card) {
    const names = splits(card);
    const ev = (s) => card.evaluation[s] || {};
    const rows = [
      ["Trained T5", (e) => pct(e.span_char_top1 || 0)],
      ["Same architecture, random init", (e) => pct((e.random_init || {}).span_char_top1 || 0)],
      ["Always the most common character", (e) => pct((e.unigram_baseline || {}).span_char_top1 || 0)],
    ].map(([label, pick]) => [label].concat(names.map((s) => pick(ev(s)))));
    return [table("T5: hidden characters written back right on held-out plays, 15 % hidden in spans of 3 (" +
      names.map((s) => splitName(card, s)).join("; ") + ")", ["Model"].concat(names), rows, true)];
  },

  results(e) {
    return [["T5", "hidden characters written back right (top-1)", `${num(100 * e.span_char_top1, 1)} %`],
      ["T5", "always writing the most common character", `${num(100 * e.unigram_baseline.span_char_top1, 1)} %`]];
  },
};
