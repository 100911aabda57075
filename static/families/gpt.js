/* GPT's page pieces (its spec: app/contract/families.py). The Train page asks each family of a run
   for its chart labels, its live view and its held-out result rows; everything the server sends is
   shown as text (textContent), never as markup. `device`: what GPT computes on this device
   (lib/engine.js runs it), as app/tasks/gpt.py computes it on the server: Generation's stream and
   step-by-step walkthrough, its side of GPT vs BERT and of the attention page. */
import { FIRST_CHAR, EngineError, samplingDistribution, draw, top, entropies, uniform, windowStart,
  softmaxRow, checkGenerate, checkNextToken } from "../lib/engine_core.js";
import { el, clear } from "../lib/dom.js";
import { num } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { withTerms } from "../lib/glossary.js";
import { splits, splitName } from "../lib/evaluation.js";

const NAME = "gpt";

/* Logits (vocab) of the last of `ids`, after `start` characters already in `cache` (gpt.onnx's
   key/value cache, one pair per layer, replaced by the graph's present_* outputs). */
async function step(engine, cache, ids, start) {
  const config = engine.config(NAME);
  const feeds = { input_ids: engine.int64(ids, [1, ids.length]), past_length: engine.int64([start], []) };
  for (let i = 0; i < config.n_layer; i++) {
    feeds["past_key_" + i] = cache[2 * i];
    feeds["past_value_" + i] = cache[2 * i + 1];
  }
  const out = await engine.run(NAME, feeds);
  for (let i = 0; i < config.n_layer; i++) {
    cache[2 * i] = out["present_key_" + i];
    cache[2 * i + 1] = out["present_value_" + i];
  }
  return out.logits.data;
}

function emptyCache(engine) {
  const c = engine.config(NAME);
  const dims = [1, c.n_head, c.context, c.n_embd / c.n_head];
  const size = dims.reduce((a, b) => a * b, 1);
  return Array.from({ length: 2 * c.n_layer }, () => new engine.ort.Tensor("float32", new Float32Array(size), dims));
}

/* The logits of the last of `ids` (one row of vocab). */
async function last(engine, cache, ids, start) {
  const v = engine.config(NAME).vocab_size;
  return (await step(engine, cache, ids, start)).slice((ids.length - 1) * v, ids.length * v);
}

function stepJson(vocab, dist, token) {
  return { char: vocab.token(token), prob: dist.final[token - FIRST_CHAR],
    top: top(dist, 5).map((i) => ({ char: vocab.chars[i], prob: dist.final[i] })) };
}

/* app/tasks/gpt.py GPT.generate: the prompt's last `context` characters prefilled once, one
   cached step per character, the window restarting from its last half when full. */
async function generate(dev, body, opts = {}) {
  const engine = await dev.engine();
  const req = checkGenerate(body, engine.vocab);
  const context = engine.config(NAME).context;
  const [ids, unknown] = engine.vocab.encode(req.prompt);
  const cache = emptyCache(engine);
  let seq = ids.slice(-context);
  let logits = await last(engine, cache, seq, 0);
  const steps = [];
  let pending = [];
  let flushed = performance.now();
  for (let i = 0; i < req.max_new_tokens; i++) {
    if (opts.signal && opts.signal.aborted) throw new DOMException("generation stopped", "AbortError");
    const dist = samplingDistribution(logits.subarray(FIRST_CHAR), req.temperature, req.top_k, req.top_p);
    const token = FIRST_CHAR + draw(dist, uniform(req.seed, i));
    const s = stepJson(engine.vocab, dist, token);
    steps.push(s);
    pending.push(s);
    if (opts.onChars && (performance.now() - flushed > 30 || i === req.max_new_tokens - 1)) {
      opts.onChars(pending.map((x) => x.char).join(""), pending);
      pending = [];
      flushed = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 0)); // let the page draw
    }
    if (i === req.max_new_tokens - 1) break;
    seq.push(token);
    if (seq.length > context) {
      seq = seq.slice(-Math.floor(context / 2));
      logits = await last(engine, cache, seq, 0);
    } else {
      logits = await last(engine, cache, seq.slice(-1), seq.length - 1);
    }
  }
  return { text: steps.map((x) => x.char).join(""), steps, context_used: Math.min(ids.length, context), unknown_chars: unknown };
}

/* app/routers/generation.py next_token: one full forward over the window generation reads. */
async function nextToken(dev, body) {
  const engine = await dev.engine();
  const req = checkNextToken(body, engine.vocab);
  const context = engine.config(NAME).context;
  const [ids, unknown] = engine.vocab.encode(req.prompt);
  if (req.generated >= ids.length) {
    throw new EngineError("generated is " + req.generated + ", but the prompt has only " + ids.length +
      " characters (the original prompt must be at least one of them)", "generated");
  }
  if (ids.length - req.generated > 10000) throw new EngineError("prompt must be at most 10000 characters before the generated ones", "prompt");
  const window = ids.slice(windowStart(ids.length - req.generated, req.generated, context));
  const logits = await last(engine, emptyCache(engine), window, 0);
  const dist = samplingDistribution(logits.subarray(FIRST_CHAR), req.temperature, req.top_k, req.top_p);
  let sample = null;
  if (req.seed !== null) {
    const u = uniform(req.seed, req.generated);
    const index = draw(dist, u);
    sample = { char: engine.vocab.chars[index], index, prob: dist.final[index], u };
  }
  return { chars: engine.vocab.chars, raw: Array.from(dist.raw), tempered: Array.from(dist.tempered),
    final: Array.from(dist.final), kept: dist.kept, entropy: entropies(dist), greedy: dist.greedy,
    context_used: window.length, unknown_chars: unknown, sample };
}

/* GPT vs BERT (app/tasks/gpt.py compare_*): GPT reads only what is left of a position. */
const compare = {
  room: (config) => ({ chars: config.context, why: null }), // it reads the last `context` of a longer text
  /* p over the characters at `pos` from the characters before it, and what it read; null at 0. */
  async guess(engine, ids, pos) {
    if (pos === 0) return { probs: null, reads: "nothing: there is no character to the left of position 0" };
    const context = engine.config(NAME).context;
    const left = ids.slice(0, pos);
    const window = left.slice(windowStart(left.length, 0, context));
    const v = engine.config(NAME).vocab_size;
    const g = await step(engine, emptyCache(engine), window, 0);
    const row = (window.length - 1) * v;
    const used = window.length;
    return { probs: softmaxRow(g, row + FIRST_CHAR, row + v), reads: "the " + used + " character" + (used !== 1 ? "s" : "") + " to the left" };
  },
  /* p(true character i | the ones before it) at every i: one forward over the text (null at 0 and past the context). */
  async strip(engine, ids) {
    const c = engine.config(NAME);
    const v = c.vocab_size;
    const g = ids.length > 1 ? await step(engine, emptyCache(engine), ids.slice(0, c.context), 0) : null;
    const rows = Math.min(ids.length, c.context);
    return ids.map((t, i) => (t >= FIRST_CHAR && i > 0 && i <= rows && g
      ? softmaxRow(g, (i - 1) * v + FIRST_CHAR, i * v)[t - FIRST_CHAR] : null));
  },
};

export default {
  name: NAME,
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

  device: {
    routes: { "/api/generate": generate, "/api/next-token": nextToken },
    compare,
  },

  /* The attention page (and its device answer, lib/engine_attention.js): GPT reads the text as it is,
     each position the ones before it and itself. items: ids or characters; row(i): the row of text
     position i. */
  mask: {
    kind: "causal",
    code: "h = self.transformer(idx, positions, is_causal=True)",
    words: "Causal: character i may look at positions 0 to i only, never at the future. That is what makes " +
      "guessing the next character honest, and lets GPT write text one character at a time.",
    shape: "the lower triangle",
    layout: (items) => ({ seq: items, allowed: (i, j) => j <= i, extra: {}, row: (i) => i }),
  },

  results(m) {
    return [["GPT", "nats per character (perplexity): how surprised it is by the next character; lower is better",
      `${num(m.nats_per_char, 3)} (${num(m.perplexity, 2)})`]];
  },
};
