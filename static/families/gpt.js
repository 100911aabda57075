/* GPT's page pieces (its spec: app/contract/families.py). The Train page asks each family of a run
   for its chart labels, its live view and its held-out result rows; everything the server sends is
   shown as text (textContent), never as markup. */
import { el, clear } from "../lib/dom.js";
import { num } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { withTerms } from "../lib/glossary.js";
import { splits, splitName } from "../lib/evaluation.js";

export default {
  name: "gpt",
  chart: { caption: "GPT loss (nats per character)", yLabel: "loss (nats per char)" },
  view: { title: "GPT continues the prompt" },
  page: { href: "/generate", text: "Generation" },

  /* The seeded continuation of the run's prompt: the prompt in bold, then what GPT wrote. */
  show(node, g) {
    clear(node);
    if (!g) { node.append(el("pre", { class: "sample", text: "(no GPT in this run)" })); return; }
    node.append(el("pre", { class: "sample" }, [el("strong", { text: g.prompt }), g.text]));
  },

  /* The home page's model card: its figures on held-out plays, one table. */
  cardTables(card) {
    const names = splits(card);
    return [table("GPT on held-out plays, never trained on (lower is better)", ["Split", withTerms("Nats per char"), withTerms("Bits per char"), withTerms("Perplexity")],
      names.map((s) => {
        const e = card.evaluation[s];
        return [splitName(card, s), num(e.nats_per_char), num(e.bits_per_char), num(e.perplexity, 2)];
      }), true)];
  },

  results(m) {
    return [["GPT", "nats per character (perplexity): how surprised it is by the next character; lower is better",
      `${num(m.nats_per_char, 3)} (${num(m.perplexity, 2)})`]];
  },
};
