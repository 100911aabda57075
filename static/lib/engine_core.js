/* The server's rules, in JavaScript, for the engine that runs the models on this device
   (lib/engine.js). Each function here is a port of the Python named beside it; together they give
   the same characters and the same probabilities as the server from the same logits.
   No model and no browser API here: node runs this file too (the parity check).

   splitmix32(a), uniform(seed, i), shuffled(n, seed)  the random stream (app/contract/spec.py)
   samplingDistribution(logits, t, k, p) THE sampling rule: {raw, tempered, final, kept, greedy}
                                        (app/sampling.py); logits over the ordinary characters
   draw(dist, u), top(dist, n), entropies(dist)
   windowStart(nPrompt, generated, context)  where generation's window starts (app/tasks/gpt.py)
   Vocab(chars)                         ids: 5 special tokens, then the characters (vocab.json);
                                        encode(text, offset) -> [ids, unknown] by code points
   maskedInput(vocab, text, positions, context)  mask-fill's input (app/routers/mask_fill.py)
   ranked(vocab, probs, n), softmaxRow(logits, from, to)
   EngineError(detail, parameter, status)  the server's 4xx, thrown here before any model runs
   checkGenerate(body, vocab), checkNextToken(body, vocab), checkMaskFill(body, vocab)
                                        the body checks of the server's schemas (app/schemas) */

export const SPECIALS = ["[PAD]", "[UNK]", "[MASK]", "[CLS]", "[SEP]"];
export const [PAD, UNK, MASK, CLS, SEP] = [0, 1, 2, 3, 4];
export const FIRST_CHAR = SPECIALS.length;
export const MASK_MARKER = "[MASK]";
export const LIMITS = { max_prompt_chars: 10000, max_text_chars: 10000, max_masks: 32, max_temperature: 5,
  max_new_tokens: 1000, max_seed: 2 ** 32 - 1 }; // app/schemas (the server also sends them in /api/models)

export class EngineError extends Error {
  constructor(detail, parameter, status) {
    super(detail + " (on your device)");
    this.detail = detail;
    this.parameter = parameter || null;
    this.status = status || 422;
  }
}

/* ---------- the random stream: u_i = splitmix32(splitmix32(seed) ^ i) / 2^32 ---------- */
export function splitmix32(a) {
  a = (a + 0x9e3779b9) >>> 0;
  let t = (a ^ (a >>> 16)) >>> 0;
  t = Math.imul(t, 0x21f0aaad) >>> 0;
  t = (t ^ (t >>> 15)) >>> 0;
  t = Math.imul(t, 0x735a2d97) >>> 0;
  return (t ^ (t >>> 15)) >>> 0;
}

export function uniform(seed, index) {
  return splitmix32((splitmix32(seed >>> 0) ^ index) >>> 0) / 4294967296;
}

/* 0 .. n-1 in a random order from the random stream (app/contract/spec.py shuffled, the same draws). */
export function shuffled(n, seed) {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(uniform(seed, i) * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/* ---------- THE sampling rule ---------- */
function softmax(values) {
  let max = -Infinity;
  for (const x of values) if (x > max) max = x;
  const out = new Float64Array(values.length);
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += (out[i] = Math.exp(values[i] - max));
  for (let i = 0; i < out.length; i++) out[i] /= sum;
  return out;
}

export function softmaxRow(logits, from, to) {
  return softmax(Float64Array.from(logits.subarray(from, to)));
}

function argmax(values) {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

/* Indices most likely first, ties by lower index (numpy's stable argsort of -p). */
function order(p) {
  return Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b);
}

export function samplingDistribution(logitsIn, temperature, topK, topP) {
  const logits = Float64Array.from(logitsIn);
  const raw = softmax(logits);
  const n = raw.length;
  const greedy = temperature === 0;
  let tempered;
  if (greedy) {
    tempered = new Float64Array(n);
    tempered[argmax(logits)] = 1;
  } else if (temperature === 1) {
    tempered = raw;
  } else {
    let max = -Infinity;
    for (const x of logits) if (x > max) max = x;
    tempered = softmax(logits.map((x) => (x - max) / temperature));
  }
  let keepN = topK <= 0 || topK >= n ? n : topK;
  if (keepN === n && topP >= 1 && !greedy) {
    return { raw, tempered, final: tempered, kept: new Array(n).fill(true), greedy: false };
  }
  const sorted = order(tempered);
  if (topP < 1) {
    const mass = new Float64Array(keepN);
    let acc = 0;
    for (let i = 0; i < keepN; i++) mass[i] = acc += tempered[sorted[i]];
    const reach = topP * mass[keepN - 1] - 1e-12;
    let first = 0; // searchsorted(mass, reach, side="left")
    while (first < keepN && mass[first] < reach) first++;
    keepN = Math.min(keepN, first + 1);
  }
  const kept = new Array(n).fill(false);
  for (let i = 0; i < keepN; i++) kept[sorted[i]] = true;
  if (greedy) for (let i = 0; i < n; i++) kept[i] = kept[i] && tempered[i] > 0;
  const final = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) if (kept[i]) sum += (final[i] = tempered[i]);
  for (let i = 0; i < n; i++) final[i] /= sum;
  return { raw, tempered, final, kept, greedy };
}

export function draw(dist, u) {
  if (dist.greedy) return argmax(dist.final);
  const cdf = new Float64Array(dist.final.length);
  let acc = 0;
  for (let i = 0; i < cdf.length; i++) cdf[i] = acc += dist.final[i];
  const x = u * cdf[cdf.length - 1];
  let i = 0; // searchsorted(cdf, x, side="right")
  while (i < cdf.length && cdf[i] <= x) i++;
  if (i < cdf.length) return i;
  for (let j = cdf.length - 1; j >= 0; j--) if (dist.final[j] > 0) return j;
  return cdf.length - 1;
}

export function top(dist, n) {
  const kept = dist.kept.filter(Boolean).length;
  return order(dist.final).slice(0, Math.min(n, kept));
}

function entropy(p) {
  let h = 0;
  for (const x of p) if (x > 0) h -= x * Math.log(x);
  return h;
}

export function entropies(dist) {
  return { raw: entropy(dist.raw), tempered: entropy(dist.tempered), final: entropy(dist.final) };
}

/* ---------- GPT's window ---------- */
export function windowStart(nPrompt, generated, context) {
  let length = Math.min(nPrompt, context);
  let start = nPrompt - length;
  for (let i = 0; i < generated; i++) {
    length += 1;
    if (length > context) {
      start += length - Math.floor(context / 2);
      length = Math.floor(context / 2);
    }
  }
  return start;
}

/* ---------- the vocabulary (code points, as Python's str) ---------- */
export class Vocab {
  constructor(chars) {
    this.chars = chars.slice();
    this.itos = SPECIALS.concat(this.chars);
    this.stoi = new Map(this.chars.map((ch, i) => [ch, i + FIRST_CHAR]));
    this.size = this.itos.length;
  }

  encode(text, offset = 0) {
    const ids = [];
    const unknown = [];
    let i = 0;
    for (const ch of text) {
      const id = this.stoi.get(ch);
      if (id === undefined) unknown.push({ position: offset + i, char: ch, segment: null });
      ids.push(id === undefined ? UNK : id);
      i++;
    }
    return [ids, unknown];
  }

  token(id) {
    return this.itos[id];
  }
}

export function ranked(vocab, probs, n) {
  n = Math.max(1, Math.min(n, probs.length));
  return order(probs).slice(0, n).map((i) => ({ char: vocab.chars[i], prob: probs[i] }));
}

/* ---------- mask-fill's input ---------- */
const codeLength = (s) => Array.from(s).length;

function checkLength(n, context) {
  if (n > context - 2) {
    throw new EngineError("text is " + n + " characters long; BERT reads at most " + (context - 2) +
      " (its context of " + context + " minus [CLS] and [SEP])", "text");
  }
}

export function maskedInput(vocab, text, positions, context) {
  const hasMarker = text.includes(MASK_MARKER);
  if (positions != null && hasMarker) throw new EngineError("give either [MASK] markers in text or positions, not both", "positions");
  if (positions == null) {
    if (!hasMarker) throw new EngineError("text has no [MASK] marker; add one or give positions", "text");
    let ids = [];
    let unknown = [];
    const masks = [];
    text.split(MASK_MARKER).forEach((piece, k) => {
      if (k) {
        masks.push(ids.length);
        ids.push(MASK);
      }
      const [pieceIds, pieceUnknown] = vocab.encode(piece, ids.length);
      ids = ids.concat(pieceIds);
      unknown = unknown.concat(pieceUnknown);
    });
    if (masks.length > LIMITS.max_masks) {
      throw new EngineError("text has " + masks.length + " [MASK] markers; at most " + LIMITS.max_masks + " are allowed", "text");
    }
    checkLength(ids.length, context);
    return { ids, masks, originals: null, unknown };
  }
  if (!positions.length) throw new EngineError("positions must not be empty (or leave it out and use [MASK] markers)", "positions");
  const n = codeLength(text);
  checkLength(n, context);
  const seen = new Set();
  positions.forEach((p, i) => {
    if (!(p >= 0 && p < n)) throw new EngineError("positions[" + i + "] = " + p + " is out of range for a text of " + n + " characters", "positions");
    if (seen.has(p)) throw new EngineError("positions lists " + p + " more than once", "positions");
    seen.add(p);
  });
  const [ids, unknown] = vocab.encode(text);
  const originals = positions.map((p) => ids[p]);
  for (const p of positions) ids[p] = MASK;
  return { ids, masks: positions.slice(), originals, unknown };
}

/* ---------- the body checks (app/schemas), so a bad body is refused as the server refuses it ---------- */
const isInt = (x) => Number.isInteger(x);
const isNum = (x) => typeof x === "number" && Number.isFinite(x);

function field(body, name, fallback, ok, say) {
  const value = body[name] === undefined ? fallback : body[name];
  if (!ok(value)) throw new EngineError(name + ": " + say, name);
  return value;
}

function checkPrompt(body, maxChars) {
  const prompt = field(body, "prompt", undefined, (x) => typeof x === "string", "a text is required");
  const n = codeLength(prompt);
  if (n < 1) throw new EngineError("prompt: String should have at least 1 character", "prompt");
  if (n > maxChars) throw new EngineError("prompt: String should have at most " + maxChars + " characters", "prompt");
  return prompt;
}

function checkSampling(body, vocab) {
  const temperature = field(body, "temperature", 1, (x) => isNum(x) && x >= 0 && x <= LIMITS.max_temperature,
    "must be a number from 0 to " + LIMITS.max_temperature);
  const top_k = field(body, "top_k", 0, isInt, "must be a whole number");
  const top_p = field(body, "top_p", 1, (x) => isNum(x) && x > 0 && x <= 1, "must be above 0 and at most 1");
  if (!(top_k >= 0 && top_k <= vocab.size)) throw new EngineError("top_k must be between 0 and the vocabulary size (" + vocab.size + ")", "top_k");
  return { temperature, top_k, top_p };
}

const seedOk = (x) => isInt(x) && x >= 0 && x <= LIMITS.max_seed;

export function checkGenerate(body, vocab) {
  const prompt = checkPrompt(body, LIMITS.max_prompt_chars);
  const max_new_tokens = field(body, "max_new_tokens", 100, (x) => isInt(x) && x >= 1 && x <= LIMITS.max_new_tokens,
    "must be a whole number from 1 to " + LIMITS.max_new_tokens);
  const seed = field(body, "seed", 0, seedOk, "must be a whole number from 0 to " + LIMITS.max_seed);
  return Object.assign({ prompt, max_new_tokens, seed }, checkSampling(body, vocab));
}

export function checkNextToken(body, vocab) {
  const prompt = checkPrompt(body, LIMITS.max_prompt_chars + LIMITS.max_new_tokens);
  const generated = field(body, "generated", 0, (x) => isInt(x) && x >= 0 && x <= LIMITS.max_new_tokens,
    "must be a whole number from 0 to " + LIMITS.max_new_tokens);
  const seed = field(body, "seed", null, (x) => x === null || seedOk(x), "must be a whole number from 0 to " + LIMITS.max_seed);
  return Object.assign({ prompt, generated, seed }, checkSampling(body, vocab));
}

export function checkMaskFill(body, vocab) {
  const text = field(body, "text", undefined, (x) => typeof x === "string" && x.length >= 1, "a text of at least 1 character is required");
  if (codeLength(text) > LIMITS.max_text_chars) throw new EngineError("text: String should have at most " + LIMITS.max_text_chars + " characters", "text");
  const positions = field(body, "positions", null, (x) => x === null || (Array.isArray(x) && x.length <= LIMITS.max_masks && x.every(isInt)),
    "must be a list of at most " + LIMITS.max_masks + " whole numbers");
  const top_k = field(body, "top_k", 8, isInt, "must be a whole number");
  if (!(top_k >= 1 && top_k <= vocab.size)) throw new EngineError("top_k must be between 1 and the vocabulary size (" + vocab.size + ")", "top_k");
  return { text, positions, top_k };
}
