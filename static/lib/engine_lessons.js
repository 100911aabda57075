/* The lessons' answers computed on this device, as the server computes them (the same models, the
   same rules), for the static copy and for when the server is away (lib/compute.js):
   compare(engine, body)   the body of POST /api/compare -> its answer (app/routers/compare.py,
                           app/tasks/compare.py): GPT's guess from the left, BERT's from both sides,
                           and the strip (both models' probability of every true character)
   pIsNext(engine, a, b)   BERT's P(IsNext) for [CLS] a [SEP] b [SEP] (app/tasks/bert.py p_is_next)
   nsp(engine, path, opts, bank)  GET /api/nsp/quiz, POST /api/nsp/quiz/{id}/answer and
                           /api/nsp/predict (app/routers/nsp.py) for the static copy: the quiz bank is
                           the set's nsp_quiz.json, shipped beside its models (manifest.quiz)
   electra(engine, body)   POST /api/objectives/electra (app/routers/electra.py, app/tasks/electra.py):
                           the discriminator's P(replaced) at every character, after BERT (the
                           generator) filled `positions` with seeded draws
   onDevice.compare(body), onDevice.nsp(path, opts), onDevice.electra(body)
                           the same on this page's engine (lib/engine.js) */
import { FIRST_CHAR, CLS, SEP, MASK, UNK, EngineError, ranked, softmaxRow, windowStart, uniform } from "./engine_core.js";
import { engineFor, manifestFor } from "./engine.js";

const MAX_COMPARE_CHARS = 64; // app/schemas: MAX_COMPARE_CHARS

function entropy(p) {
  let h = 0;
  for (const x of p) if (x > 0) h -= x * Math.log(x);
  return h;
}

function guess(vocab, p, truth, topK, reads) {
  const known = truth >= FIRST_CHAR;
  const po = known ? p[truth - FIRST_CHAR] : null;
  return { available: true, p_true: po, rank: known ? p.filter((x) => x > po).length + 1 : null, entropy: entropy(p),
    top: ranked(vocab, p, topK), reads };
}

/* GPT's logits (rows x vocab, flat) of one full forward over `ids` (at most its context). */
async function gptRows(engine, ids) {
  const config = engine.config("gpt");
  const feeds = { input_ids: engine.int64(ids, [1, ids.length]), past_length: engine.int64([0], []) };
  const cache = engine.emptyCache();
  for (let i = 0; i < config.n_layer; i++) {
    feeds["past_key_" + i] = cache[2 * i];
    feeds["past_value_" + i] = cache[2 * i + 1];
  }
  return (await engine.run("gpt", feeds)).logits.data;
}

/* BERT's MLM logits (flat) of [CLS] ids [SEP], one row per sequence of `batch`. */
async function bertRows(engine, batch) {
  const width = batch[0].length;
  const flat = batch.flat();
  const out = await engine.run("bert", { input_ids: engine.int64(flat, [batch.length, width]),
    token_type_ids: engine.int64(new Array(flat.length).fill(0), [batch.length, width]) });
  return out.mlm_logits.data;
}

function checkCompare(body) {
  const text = body.text;
  if (typeof text !== "string" || Array.from(text).length < 1) throw new EngineError("text: String should have at least 1 character", "text");
  if (Array.from(text).length > MAX_COMPARE_CHARS) {
    throw new EngineError("text: String should have at most " + MAX_COMPARE_CHARS + " characters", "text");
  }
  const position = body.position;
  if (!(Number.isInteger(position) && position >= 0)) throw new EngineError("position: Input should be greater than or equal to 0", "position");
  const topK = body.top_k === undefined ? 5 : body.top_k;
  if (!(Number.isInteger(topK) && topK >= 1 && topK <= 20)) throw new EngineError("top_k: must be a whole number from 1 to 20", "top_k");
  return { text, position, topK, strip: body.strip === undefined ? true : !!body.strip };
}

export async function compare(engine, body) {
  const req = checkCompare(body);
  const vocab = engine.vocab;
  const bert = engine.config("bert");
  const gpt = engine.config("gpt");
  const chars = Array.from(req.text);
  const v = bert.vocab_size;
  if (chars.length > bert.context - 2) {
    throw new EngineError("text is " + chars.length + " characters long; BERT reads at most " + (bert.context - 2) +
      " (its context of " + bert.context + " minus [CLS] and [SEP])", "text");
  }
  const pos = req.position;
  if (pos >= chars.length) throw new EngineError("position " + pos + " is out of range for a text of " + chars.length + " characters", "position");
  const [ids, unknown] = vocab.encode(req.text);
  const n = ids.length;
  let strip = null;
  if (req.strip) {
    const g = n > 1 ? await gptRows(engine, ids.slice(0, gpt.context)) : null;
    const rows = Math.min(n, gpt.context);
    const batch = ids.map((_, i) => { const s = [CLS, ...ids, SEP]; s[i + 1] = MASK; return s; });
    const b = await bertRows(engine, batch);
    strip = ids.map((t, i) => {
      const known = t >= FIRST_CHAR;
      const gp = known && i > 0 && i <= rows && g ? softmaxRow(g, (i - 1) * gpt.vocab_size + FIRST_CHAR, i * gpt.vocab_size)[t - FIRST_CHAR] : null;
      const row = (i * (n + 2) + i + 1) * v;
      return { position: i, char: vocab.token(t), gpt: gp, bert: known ? softmaxRow(b, row + FIRST_CHAR, row + v)[t - FIRST_CHAR] : 0 };
    });
  }
  let gOut;
  if (pos === 0) {
    gOut = { available: false, p_true: null, rank: null, entropy: null, top: [], reads: "nothing: there is no character to the left of position 0" };
  } else {
    const left = ids.slice(0, pos);
    const window = left.slice(windowStart(left.length, 0, gpt.context));
    const g = await gptRows(engine, window);
    const row = (window.length - 1) * gpt.vocab_size;
    const used = window.length;
    gOut = guess(vocab, softmaxRow(g, row + FIRST_CHAR, row + gpt.vocab_size), ids[pos], req.topK,
      "the " + used + " character" + (used !== 1 ? "s" : "") + " to the left");
  }
  const masked = [CLS, ...ids, SEP];
  masked[pos + 1] = MASK;
  const b = await bertRows(engine, [masked]);
  const row = (pos + 1) * v;
  const bOut = guess(vocab, softmaxRow(b, row + FIRST_CHAR, row + v), ids[pos], req.topK,
    pos + " character" + (pos !== 1 ? "s" : "") + " to the left and " + (n - pos - 1) + " to the right");
  return { tokens: ids.map((t) => vocab.token(t)), position: pos, char: ids[pos] !== UNK ? chars[pos] : "[UNK]",
    gpt: gOut, bert: bOut, strip, unknown_chars: unknown };
}

/* ---------- next-sentence prediction ---------- */
const label = (isNext) => (isNext ? "IsNext" : "NotNext");

export async function pIsNext(engine, a, b) {
  const ids = [CLS, ...a, SEP, ...b, SEP];
  const types = ids.map((_, i) => (i < a.length + 2 ? 0 : 1));
  const out = await engine.run("bert", { input_ids: engine.int64(ids, [1, ids.length]), token_type_ids: engine.int64(types, [1, ids.length]) });
  return softmaxRow(out.nsp_logits.data, 0, 2)[0];
}

function pairIds(engine, a, b) {
  for (const [name, text] of [["a", a], ["b", b]]) {
    if (typeof text !== "string" || Array.from(text).length < 1) throw new EngineError(name + ": String should have at least 1 character", name);
  }
  const context = engine.config("bert").context;
  const room = context - 3;
  const [na, nb] = [Array.from(a).length, Array.from(b).length];
  if (na + nb > room) {
    throw new EngineError("a and b together are " + (na + nb) + " characters; BERT reads at most " + room +
      " (its context of " + context + " minus [CLS] and two [SEP])", na >= room ? "a" : "b");
  }
  const [aIds, aUnknown] = engine.vocab.encode(a);
  const [bIds, bUnknown] = engine.vocab.encode(b);
  const unknown = aUnknown.map((u) => Object.assign({}, u, { segment: "a" })).concat(bUnknown.map((u) => Object.assign({}, u, { segment: "b" })));
  return [aIds, bIds, unknown];
}

export async function nsp(engine, path, opts, bank) {
  const body = (opts && opts.body) || {};
  if (path === "/api/nsp/predict") {
    const [a, b, unknown] = pairIds(engine, body.a, body.b);
    const p = await pIsNext(engine, a, b);
    return { p_is_next: p, prediction: label(p >= 0.5), unknown_chars: unknown };
  }
  if (path === "/api/nsp/quiz") {
    const raw = opts && opts.params && opts.params.index;
    const index = raw === undefined ? Math.floor(Math.random() * bank.length) : Number(raw);
    if (!(Number.isInteger(index) && index >= 0 && index < bank.length)) {
      throw new EngineError("index must be between 0 and " + (bank.length - 1), "index");
    }
    const item = bank[index];
    return { id: item.id, index, a: item.a, b: item.b, count: bank.length };
  }
  const id = decodeURIComponent((path.match(/^\/api\/nsp\/quiz\/([^/]+)\/answer$/) || [])[1] || "");
  const item = bank.find((it) => it.id === id);
  if (!item) throw new EngineError("no quiz item with id '" + id + "'", "id", 404);
  if (body.guess !== "IsNext" && body.guess !== "NotNext") throw new EngineError("guess: Input should be 'IsNext' or 'NotNext'", "guess");
  const [a, b] = pairIds(engine, item.a, item.b);
  const p = await pIsNext(engine, a, b);
  const truth = label(!!item.is_next);
  return { id: item.id, correct: body.guess === truth, truth, p_is_next: p, model_guess: label(p >= 0.5),
    model_correct: label(p >= 0.5) === truth, source_a: item.source_a || "", source_b: item.source_b || "" };
}

/* ---------- ELECTRA: replaced-character detection ---------- */
const MAX_SEED = 4294967295;

/* app/tasks/electra.py generator_fill: each position masked, then one draw from BERT's guess there. */
async function generatorFill(engine, ids, positions, seed) {
  const masked = [CLS, ...ids, SEP];
  for (const p of positions) masked[p + 1] = MASK;
  const b = await bertRows(engine, [masked]);
  const v = engine.config("bert").vocab_size;
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

export async function electra(engine, body) {
  const text = body.text;
  if (typeof text !== "string" || Array.from(text).length < 1) throw new EngineError("text: String should have at least 1 character", "text");
  const positionsIn = body.positions === undefined ? [] : body.positions;
  if (!Array.isArray(positionsIn) || positionsIn.length > 512 || !positionsIn.every(Number.isInteger)) {
    throw new EngineError("positions: must be a list of at most 512 whole numbers", "positions");
  }
  const seed = body.seed === undefined ? 0 : body.seed;
  if (!(Number.isInteger(seed) && seed >= 0 && seed <= MAX_SEED)) throw new EngineError("seed: must be a whole number from 0 to " + MAX_SEED, "seed");
  const context = engine.config("electra").context;
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
  const out = await engine.run("electra", { input_ids: engine.int64(seq, [1, seq.length]),
    token_type_ids: engine.int64(new Array(seq.length).fill(0), [1, seq.length]) });
  const z = out.replaced_logits.data;
  const filled = new Set(positions);
  const list = chars.map((ch, i) => ({ char: engine.vocab.token(shown[i]), original: ch, filled: filled.has(i),
    replaced: shown[i] !== ids[i], p_replaced: 1 / (1 + Math.exp(-z[i + 1])) }));
  return { chars: list, filled: positions.length, replaced: list.filter((c) => c.replaced).length,
    flagged: list.filter((c) => c.p_replaced > 0.5).length, correct: list.filter((c) => (c.p_replaced > 0.5) === c.replaced).length,
    generator: positions.length ? "the set's BERT: one draw from its guess at every masked position" : "none", unknown_chars: unknown };
}

const banks = new Map(); // quiz URL -> its items (read once per page)
async function bankOf(manifest) {
  const url = manifest.quiz;
  if (!url) throw new EngineError("this copy of the playground has no NSP quiz", null, 503);
  if (!banks.has(url)) {
    const reading = fetch(url).then((r) => {
      if (!r.ok) throw new EngineError("the NSP quiz could not be downloaded (HTTP " + r.status + ")", null, 503);
      return r.json();
    }).then((data) => data.items);
    banks.set(url, reading);
    reading.catch(() => banks.delete(url));
  }
  return banks.get(url);
}

export const onDevice = {
  compare: async (body) => compare(await engineFor(body && body.model), body),
  electra: async (body) => electra(await engineFor(body && body.model), body),
  nsp: async (path, opts) => {
    if (path === "/api/nsp/predict") return nsp(await engineFor(undefined), path, opts, null);
    const bank = await bankOf(await manifestFor(undefined));
    return nsp(path === "/api/nsp/quiz" ? null : await engineFor(undefined), path, opts, bank); // a question needs no model
  },
};
