/* The attention page's answer computed on this device, as the server computes it (POST /api/attention:
   app/routers/attention.py, app/tasks/attention.py): the inspection graphs (training/inspect_export.py,
   shipped in the static copy as "<family>_attn", one per family the attention page shows, in the
   families' order) give every layer's and head's weights
   softmax(q k^T / sqrt(hs) + mask); the answer holds the chosen layer and head (or their mean),
   rounded to 4 decimals, and the checks (rows sum to 1, nothing on a blocked cell). What a family
   reads, its graph's other inputs and what its mask allows are its own (static/families/<name>.js,
   mask.layout, which the page's rule grids draw too). A family the copy has no graph of (T5 and
   PLM are optional) answers null, as on the server.
   attention(engine, body)   the body of POST /api/attention -> its answer
   onDevice.attention(body)  the same on this page's engine (lib/engine.js)
   The server also compares the inspection graph's logits with the served graph's on every request;
   the device does not download the served graphs for that: it reports the difference the server
   measured on a test sentence when the copy was made (the manifest's served_logits_max_abs_diff,
   app/static_build.py checked_attention). */
import { EngineError, CLS, SEP, PAD, MASK } from "./engine_core.js";
import { engineFor } from "./engine.js";
import { PIECES } from "../families/index.js";

const ATTN = "_attn";

// app/schemas/lessons.py
const MAX_ATTENTION_CHARS = 48;
const MAX_PAD = 8;
const MAX_VIEW_INDEX = 63;
const MAX_SEED = 2 ** 32 - 1;
const DECIMALS = 1e4;

function wholeIn(body, name, fallback, low, high) {
  const x = body[name] === undefined ? fallback : body[name];
  if (!(Number.isInteger(x) && x >= low && x <= high)) {
    throw new EngineError(name + ": must be a whole number from " + low + " to " + high, name);
  }
  return x;
}

function check(body) {
  const text = body.text;
  if (typeof text !== "string" || Array.from(text).length < 1) throw new EngineError("text: String should have at least 1 character", "text");
  if (Array.from(text).length > MAX_ATTENTION_CHARS) {
    throw new EngineError("text: String should have at most " + MAX_ATTENTION_CHARS + " characters", "text");
  }
  const families = body.families === undefined || body.families === null ? null : body.families;
  if (families !== null && !(Array.isArray(families) && families.length <= 8 && families.every((f) => PIECES[f] && PIECES[f].mask))) {
    throw new EngineError("families: must be a list of the families the attention page shows", "families");
  }
  return { text, pad: wholeIn(body, "pad", 2, 0, MAX_PAD), layer: wholeIn(body, "layer", -1, -1, MAX_VIEW_INDEX),
    head: wholeIn(body, "head", -1, -1, MAX_VIEW_INDEX), seed: wholeIn(body, "seed", 0, 0, MAX_SEED), families };
}

/* Every layer's weights of one inspection graph: weights[layer] is a flat (n_head, T, T) array. */
async function weightsOf(engine, key, ids, extra = {}) {
  const part = engine.manifest.models[key];
  if (!part) {
    throw new EngineError("no copy of the attention graphs is kept for devices here (only the static copy ships them); " +
      "the playground's server computes the weights", "model", 503);
  }
  const session = await engine.load(key);
  const feeds = {};
  for (const name of session.inputNames) {
    const values = name === "input_ids" ? ids : extra[name];
    if (!values) throw new EngineError(key + " takes " + name + ", which its family's layout does not give", "model", 409);
    feeds[name] = engine.int64(values, [1, ids.length]);
  }
  const out = await engine.run(key, feeds);
  return { weights: Array.from({ length: part.config.n_layer }, (_, i) => out["attn_" + i].data), part };
}

/* app/tasks/attention.py summarise: the chosen (query, key) grid and the checks over every layer and head. */
function summarise(family, { weights, part }, T, allowed, layer, head) {
  const nLayer = part.config.n_layer, nHead = part.config.n_head;
  for (const [name, index, size] of [["layer", layer, nLayer], ["head", head, nHead]]) {
    if (index >= size) {
      throw new EngineError(name + " must be -1 (the mean) or below " + size + ", the " + family + " model's n_" + name, name);
    }
  }
  let rowError = 0, blocked = 0;
  for (const w of weights) {
    for (let h = 0; h < nHead; h++) {
      for (let i = 0; i < T; i++) {
        let sum = 0;
        for (let j = 0; j < T; j++) {
          const x = w[(h * T + i) * T + j];
          if (allowed(i, j)) sum += x;
          else blocked = Math.max(blocked, x);
        }
        rowError = Math.max(rowError, Math.abs(sum - 1));
      }
    }
  }
  const layers = layer < 0 ? weights : [weights[layer]];
  const heads = head < 0 ? Array.from({ length: nHead }, (_, h) => h) : [head];
  const grid = Array.from({ length: T }, (_, i) => Array.from({ length: T }, (_, j) => {
    let sum = 0;
    for (const w of layers) for (const h of heads) sum += w[(h * T + i) * T + j];
    return Math.round((sum / (layers.length * heads.length)) * DECIMALS) / DECIMALS;
  }));
  return { n_layer: nLayer, n_head: nHead, layer, head, weights: grid,
    served_logits_max_abs_diff: part.served_logits_max_abs_diff, row_sum_max_error: rowError, blocked_max: blocked };
}

export async function attention(engine, body) {
  const req = check(body);
  const [ids, unknown] = engine.vocab.encode(req.text);
  const keys = Object.keys(engine.manifest.models).filter((k) => k.endsWith(ATTN) &&
    (req.families === null || req.families.includes(k.slice(0, -ATTN.length))));
  if (!keys.length) await weightsOf(engine, "none" + ATTN, ids); // the refusal that names `model`
  const size = engine.vocab.size;
  const special = { CLS, SEP, PAD, MASK, sentinel: (k) => size + k };
  const label = (t) => (t >= size ? "⟨" + (t - size) + "⟩" : engine.vocab.token(t)); // app/tasks/attention.py token
  const out = {};
  for (const key of keys) {
    const family = key.slice(0, -ATTN.length);
    const { seq, allowed, extra } = PIECES[family].mask.layout(ids, { pad: req.pad, seed: req.seed, special });
    out[family] = Object.assign({ tokens: seq.map(label) },
      summarise(family, await weightsOf(engine, key, seq, extra), seq.length, allowed, req.layer, req.head));
  }
  for (const [name, p] of Object.entries(PIECES)) if (p.mask && !(name in out)) out[name] = null; // none of it here
  return Object.assign(out, { unknown_chars: unknown });
}

export const onDevice = {
  attention: async (body) => attention(await engineFor(body && body.model), body),
};

/* The models this page downloads ahead (lib/compute.js warmUp): the inspection graphs of `families`
   (those the page shows at once; the optional ones, T5's and PLM's, when the student asks). */
export const inspection = (families) => (key) => key.endsWith(ATTN) && families.includes(key.slice(0, -ATTN.length));
