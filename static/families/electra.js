/* ELECTRA's page pieces (its spec: app/contract/families.py). ELECTRA's discriminator reads a line
   in which a small generator swapped some characters and says, for every character, how likely it
   is that it was swapped. The Train page shows that on its probe line, and the held-out rows.
   `device`: the Objectives page's strip computed on this device (lib/engine.js runs it), as
   app/routers/electra.py and app/tasks/electra.py compute it: the set's BERT (static/families/bert.js)
   is the generator. */
import { FIRST_CHAR, CLS, SEP, MASK, EngineError, softmaxRow, uniform } from "../lib/engine_core.js";
import { el, clear } from "../lib/dom.js";
import { num, pct, visibleChar } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { splits, splitName } from "../lib/evaluation.js";
import { forward as generator } from "./bert.js";

const NAME = "electra";
const MAX_SEED = 4294967295;

/* app/tasks/electra.py generator_fill: each position masked, then one draw from BERT's guess there. */
async function generatorFill(engine, ids, positions, seed) {
  const masked = [CLS, ...ids, SEP];
  for (const p of positions) masked[p + 1] = MASK;
  const b = (await generator(engine, [masked])).mlm_logits.data;
  const v = engine.config(NAME).vocab_size;
  const out = ids.slice();
  for (const p of positions) {
    const row = (p + 1) * v;
    const probs = softmaxRow(b, row + FIRST_CHAR, row + v);
    const cdf = [];
    let sum = 0;
    for (const x of probs) cdf.push((sum += x));
    const target = uniform(seed, p) * cdf[cdf.length - 1];
    let k = 0;
    while (k < cdf.length && cdf[k] <= target) k++; // numpy's searchsorted(side="right")
    out[p] = FIRST_CHAR + Math.min(k, cdf.length - 1);
  }
  return out;
}

/* POST /api/objectives/electra: the discriminator's P(replaced) at every character, after BERT (the
   generator) filled `positions` with seeded draws. */
async function strip(dev, body) {
  const engine = await dev.engine();
  const text = body.text;
  if (typeof text !== "string" || Array.from(text).length < 1) throw new EngineError("text: String should have at least 1 character", "text");
  const positionsIn = body.positions === undefined ? [] : body.positions;
  if (!Array.isArray(positionsIn) || positionsIn.length > 512 || !positionsIn.every(Number.isInteger)) {
    throw new EngineError("positions: must be a list of at most 512 whole numbers", "positions");
  }
  const seed = body.seed === undefined ? 0 : body.seed;
  if (!(Number.isInteger(seed) && seed >= 0 && seed <= MAX_SEED)) throw new EngineError("seed: must be a whole number from 0 to " + MAX_SEED, "seed");
  const context = engine.config(NAME).context;
  const chars = Array.from(text);
  if (chars.length > context - 2) {
    throw new EngineError("text is " + chars.length + " characters long; ELECTRA reads at most " + (context - 2) +
      " (its context of " + context + " minus [CLS] and [SEP])", "text");
  }
  const bad = positionsIn.find((p) => !(p >= 0 && p < chars.length));
  if (bad !== undefined) throw new EngineError("position " + bad + " is outside the text (0 to " + (chars.length - 1) + ")", "positions");
  const [ids, unknown] = engine.vocab.encode(text);
  const positions = Array.from(new Set(positionsIn)).sort((a, b) => a - b);
  const shown = positions.length ? await generatorFill(engine, ids, positions, seed) : ids;
  const seq = [CLS, ...shown, SEP];
  const out = await engine.run(NAME, { input_ids: engine.int64(seq, [1, seq.length]),
    token_type_ids: engine.int64(new Array(seq.length).fill(0), [1, seq.length]) });
  const z = out.replaced_logits.data;
  const filled = new Set(positions);
  const list = chars.map((ch, i) => ({ char: engine.vocab.token(shown[i]), original: ch, filled: filled.has(i),
    replaced: shown[i] !== ids[i], p_replaced: 1 / (1 + Math.exp(-z[i + 1])) }));
  return { chars: list, filled: positions.length, replaced: list.filter((c) => c.replaced).length,
    flagged: list.filter((c) => c.p_replaced > 0.5).length, correct: list.filter((c) => (c.p_replaced > 0.5) === c.replaced).length,
    generator: positions.length ? "the set's BERT: one draw from its guess at every masked position" : "none", unknown_chars: unknown };
}

export default {
  name: NAME,
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

  device: { routes: { "/api/objectives/electra": strip } },

  results(e) {
    return [["ELECTRA", "swapped characters caught (p > 50 %)", `${num(100 * e.replaced_recall, 1)} %`],
      ["ELECTRA", "original characters wrongly called swapped", `${num(100 * e.original_flagged, 1)} %`],
      ["ELECTRA", "right at every character / always answering “original”",
        `${num(100 * e.detection_accuracy, 1)} % / ${num(100 * e.always_original_accuracy, 1)} %`]];
  },
};
