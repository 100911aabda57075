/* The models on this device: Generation's GPT and Mask-Fill's BERT run in the page with
   onnxruntime-web (its plain WebAssembly build, one thread: static/vendor/onnxruntime-web/), from
   the model set's web copies (training/export/web.py), giving the server's answers: the same
   rules in lib/engine_core.js, the same seed -> the same text, probabilities within 1e-4.

   generate(body, opts)  the body of POST /api/generate -> its answer {text, steps, context_used,
                         unknown_chars}. opts.onChars(text, steps): called as characters come
                         (Generation's stream); opts.signal: an AbortSignal that stops it.
   nextToken(body)       POST /api/next-token's body -> its answer (the step-by-step walkthrough)
   maskFill(body)        POST /api/mask-fill's body -> {tokens, unknown_chars, masks}
   ready(model, family)  loads a set's engine and its `family` model ("gpt", "bert", or a list of
                         them; all when left out) now, so the device is ready before it is needed; resolves to the
                         Engine. body.model / model: a set id, or nothing for the default set.
   plan(model, family)   {bytes, total}: what ready(model, family) would download now (0: all kept)
   onProgress(fn)        fn({got, total, files}) while files download (lib/downloads.js)
   usage()               {downloaded, cached: bytes (as moved: gzip) fetched and read from the Cache
                         API, readyMs} of this page's loads
   Engine                one set's models, built from an onnxruntime module and the model bytes
                         (Engine.create(ort, manifest, {gpt: bytes, bert: bytes})): node uses it for
                         the parity check
   EngineError           the server's 4xx, refused here (status, parameter, detail)

   Files: web/models/<set or "default">/manifest.json (under the site's root, lib/site.js) says
   what to fetch: the gzip copies of the engine's WebAssembly and of the models, under names that
   hold their content hash, so they never change meaning; lib/downloads.js fetches, unpacks and
   keeps them (the Cache API), and a second visit (or a phone offline) downloads nothing. The manifest itself is asked for each time and read from the cache
   when the network fails. */
import { FIRST_CHAR, CLS, SEP, EngineError, Vocab, samplingDistribution, draw, top, entropies, uniform, windowStart,
  maskedInput, ranked, softmaxRow, checkGenerate, checkNextToken, checkMaskFill } from "./engine_core.js";
import * as downloads from "./downloads.js";
import { CACHE } from "./downloads.js";
import { ROOT } from "./site.js";

export { EngineError };

const ORT_MODULE = new URL("../vendor/onnxruntime-web/ort.wasm.min.js", import.meta.url).href;
const MANIFEST_TIMEOUT_MS = 6000;
const stats = { readyMs: null };

export class Engine {
  /* bytesOf(family) -> the model's bytes (a promise), fetched when that model is first needed. */
  constructor(ort, manifest, bytesOf) {
    this.ort = ort;
    this.manifest = manifest;
    this.bytesOf = bytesOf;
    this.sessions = {}; // family -> Promise of its InferenceSession
    this.vocab = new Vocab(manifest.vocab.chars);
    this.queue = Promise.resolve(); // one model run at a time (onnxruntime-web runs one per session)
  }

  static create(ort, manifest, bytes) {
    return new Engine(ort, manifest, async (family) => bytes[family]);
  }

  config(family) {
    const part = this.manifest.models[family];
    if (!part) throw new EngineError("this model set has no " + family.toUpperCase() + " to run on your device", "model", 409);
    return part.config;
  }

  /* The family's session, created on first use (download, then onnxruntime's graph optimisation). */
  load(family) {
    this.config(family);
    if (!this.sessions[family]) {
      const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
      this.sessions[family] = this.bytesOf(family).then((data) => this.ort.InferenceSession.create(data, options));
      this.sessions[family].catch(() => { delete this.sessions[family]; });
    }
    return this.sessions[family];
  }

  /* One run of a session, queued behind the others. */
  run(family, feeds) {
    const result = this.queue.then(async () => (await this.load(family)).run(feeds));
    this.queue = result.catch(() => {});
    return result;
  }

  int64(values, dims) {
    return new this.ort.Tensor("int64", BigInt64Array.from(values, (x) => BigInt(x)), dims);
  }

  /* GPT: logits (vocab) of the last of `ids`, after `start` characters already in `cache`. */
  async gptStep(cache, ids, start) {
    const config = this.config("gpt");
    const feeds = { input_ids: this.int64(ids, [1, ids.length]), past_length: this.int64([start], []) };
    for (let i = 0; i < config.n_layer; i++) {
      feeds["past_key_" + i] = cache[2 * i];
      feeds["past_value_" + i] = cache[2 * i + 1];
    }
    const out = await this.run("gpt", feeds);
    for (let i = 0; i < config.n_layer; i++) {
      cache[2 * i] = out["present_key_" + i];
      cache[2 * i + 1] = out["present_value_" + i];
    }
    const v = config.vocab_size;
    return out.logits.data.slice((ids.length - 1) * v, ids.length * v);
  }

  emptyCache() {
    const c = this.config("gpt");
    const dims = [1, c.n_head, c.context, c.n_embd / c.n_head];
    const size = dims.reduce((a, b) => a * b, 1);
    return Array.from({ length: 2 * c.n_layer }, () => new this.ort.Tensor("float32", new Float32Array(size), dims));
  }

  stepJson(dist, token) {
    const chars = this.vocab.chars;
    return { char: this.vocab.token(token), prob: dist.final[token - FIRST_CHAR],
      top: top(dist, 5).map((i) => ({ char: chars[i], prob: dist.final[i] })) };
  }

  /* app/tasks/gpt.py GPT.generate: the prompt's last `context` characters prefilled once, one
     cached step per character, the window restarting from its last half when full. */
  async generate(body, opts = {}) {
    const req = checkGenerate(body, this.vocab);
    const context = this.config("gpt").context;
    const [ids, unknown] = this.vocab.encode(req.prompt);
    const cache = this.emptyCache();
    let seq = ids.slice(-context);
    let logits = await this.gptStep(cache, seq, 0);
    const steps = [];
    let pending = [];
    let flushed = performance.now();
    for (let i = 0; i < req.max_new_tokens; i++) {
      if (opts.signal && opts.signal.aborted) throw new DOMException("generation stopped", "AbortError");
      const dist = samplingDistribution(logits.subarray(FIRST_CHAR), req.temperature, req.top_k, req.top_p);
      const token = FIRST_CHAR + draw(dist, uniform(req.seed, i));
      const step = this.stepJson(dist, token);
      steps.push(step);
      pending.push(step);
      if (opts.onChars && (performance.now() - flushed > 30 || i === req.max_new_tokens - 1)) {
        opts.onChars(pending.map((s) => s.char).join(""), pending);
        pending = [];
        flushed = performance.now();
        await new Promise((resolve) => setTimeout(resolve, 0)); // let the page draw
      }
      if (i === req.max_new_tokens - 1) break;
      seq.push(token);
      if (seq.length > context) {
        seq = seq.slice(-Math.floor(context / 2));
        logits = await this.gptStep(cache, seq, 0);
      } else {
        logits = await this.gptStep(cache, seq.slice(-1), seq.length - 1);
      }
    }
    return { text: steps.map((s) => s.char).join(""), steps, context_used: Math.min(ids.length, context), unknown_chars: unknown };
  }

  /* app/routers/generation.py next_token: one full forward over the window generation reads. */
  async nextToken(body) {
    const req = checkNextToken(body, this.vocab);
    const context = this.config("gpt").context;
    const [ids, unknown] = this.vocab.encode(req.prompt);
    if (req.generated >= ids.length) {
      throw new EngineError("generated is " + req.generated + ", but the prompt has only " + ids.length +
        " characters (the original prompt must be at least one of them)", "generated");
    }
    if (ids.length - req.generated > 10000) throw new EngineError("prompt must be at most 10000 characters before the generated ones", "prompt");
    const window = ids.slice(windowStart(ids.length - req.generated, req.generated, context));
    const logits = await this.gptStep(this.emptyCache(), window, 0);
    const dist = samplingDistribution(logits.subarray(FIRST_CHAR), req.temperature, req.top_k, req.top_p);
    let sample = null;
    if (req.seed !== null) {
      const u = uniform(req.seed, req.generated);
      const index = draw(dist, u);
      sample = { char: this.vocab.chars[index], index, prob: dist.final[index], u };
    }
    return { chars: this.vocab.chars, raw: Array.from(dist.raw), tempered: Array.from(dist.tempered),
      final: Array.from(dist.final), kept: dist.kept, entropy: entropies(dist), greedy: dist.greedy,
      context_used: window.length, unknown_chars: unknown, sample };
  }

  /* app/routers/mask_fill.py + app/tasks/bert.py BERT.fill */
  async maskFill(body) {
    const req = checkMaskFill(body, this.vocab);
    const config = this.config("bert");
    const input = maskedInput(this.vocab, req.text, req.positions, config.context);
    const seq = [CLS, ...input.ids, SEP];
    const zeros = new Array(seq.length).fill(0);
    const out = await this.run("bert", { input_ids: this.int64(seq, [1, seq.length]), token_type_ids: this.int64(zeros, [1, seq.length]) });
    const mlm = out.mlm_logits.data;
    const v = config.vocab_size;
    const masks = input.masks.map((pos, j) => {
      const row = (pos + 1) * v;
      const p = softmaxRow(mlm, row + FIRST_CHAR, row + v);
      const entry = { position: pos, predictions: ranked(this.vocab, p, req.top_k), original: null };
      if (input.originals && input.originals[j] >= FIRST_CHAR) {
        const po = p[input.originals[j] - FIRST_CHAR];
        entry.original = { char: this.vocab.token(input.originals[j]), prob: po, rank: p.filter((x) => x > po).length + 1 };
      }
      return entry;
    });
    return { tokens: input.ids.map((t) => this.vocab.token(t)), unknown_chars: input.unknown, masks };
  }
}

/* ---------- loading in the browser ---------- */
function manifestUrl(set) {
  return ROOT + "web/models/" + encodeURIComponent(set) + "/manifest.json";
}

/* A manifest's URLs are relative to the manifest (a static copy under any path) or absolute paths
   (the app); `packed` names the gzip copy, the smaller download (lib/downloads.js unpacks it). */
function resolved(manifest, url) {
  const at = (u) => new URL(u, url).href;
  const engine = manifest.engine;
  const models = {};
  for (const [family, part] of Object.entries(manifest.models)) {
    models[family] = Object.assign({}, part, { fetch: at(part.packed || part.url),
      fetchBytes: part.packed ? part.gzip_bytes : part.bytes });
  }
  return Object.assign({}, manifest, { models, quiz: manifest.quiz ? at(manifest.quiz) : null, engine: Object.assign({}, engine, { module: at(engine.module),
    fetch: at(engine.wasm_packed || engine.wasm), fetchBytes: engine.wasm_packed ? engine.wasm_packed_bytes : engine.wasm_bytes }) });
}

const manifests = new Map(); // set -> the manifest this page read (asked once per page)
function manifestOf(set) {
  if (!manifests.has(set)) {
    const reading = readManifest(set);
    manifests.set(set, reading);
    reading.catch(() => manifests.delete(set));
  }
  return manifests.get(set);
}

async function readManifest(set) {
  const url = manifestUrl(set);
  const cache = typeof caches !== "undefined" ? await caches.open(CACHE).catch(() => null) : null;
  try {
    const response = await fetch(url, { cache: "no-cache", signal: AbortSignal.timeout(MANIFEST_TIMEOUT_MS) });
    if (response.ok) {
      const manifest = await response.clone().json();
      if (cache) await cache.put(url, response).catch(() => {});
      return resolved(manifest, url);
    }
    if (response.status === 404) {
      throw new EngineError("this model set has no copies for your device yet", "model", 404);
    }
  } catch (err) {
    if (err instanceof EngineError) throw err;
    console.warn("the manifest of " + set + " could not be fetched: " + err); // eslint-disable-line no-console
  }
  const hit = cache ? await cache.match(url) : null;
  if (hit) return resolved(await hit.json(), url);
  throw new EngineError("the models for your device could not be downloaded (no network, and none kept from an earlier visit)", null, 503);
}

async function fetched(url, bytes) {
  try {
    return await downloads.get(url, bytes);
  } catch (err) {
    throw new EngineError(err.message, null, 503);
  }
}

let ortPromise = null;
function loadOrt(files) {
  if (!ortPromise) {
    ortPromise = (async () => {
      const [ort, wasm] = await Promise.all([import(ORT_MODULE), fetched(files.fetch, files.fetchBytes)]);
      ort.env.wasm.numThreads = 1; // no cross-origin isolation needed, and the page stays responsive enough
      ort.env.wasm.proxy = false;
      ort.env.wasm.wasmPaths = { mjs: files.module };
      ort.env.wasm.wasmBinary = wasm;
      return ort;
    })();
    ortPromise.catch(() => { ortPromise = null; });
  }
  return ortPromise;
}

/* What loading `family` ("gpt", "bert"; all when left out) of a set would download now, in bytes
   (0: all kept from an earlier visit). Asks for the manifest (a few KB), nothing else. */
export async function plan(model, family) {
  const manifest = await manifestOf(model || "default");
  const files = [{ url: manifest.engine.fetch, bytes: manifest.engine.fetchBytes }];
  for (const f of family ? [].concat(family) : Object.keys(manifest.models)) {
    const part = manifest.models[f];
    if (part) files.push({ url: part.fetch, bytes: part.fetchBytes });
  }
  return { bytes: await downloads.missing(files), total: files.reduce((sum, f) => sum + f.bytes, 0) };
}

export const onProgress = downloads.onProgress;

const engines = new Map();

function engineOf(model) {
  const set = model || "default";
  if (!engines.has(set)) {
    const loading = (async () => {
      const manifest = await manifestOf(set);
      const ort = await loadOrt(manifest.engine);
      return new Engine(ort, manifest, async (family) => new Uint8Array(await fetched(manifest.models[family].fetch,
        manifest.models[family].fetchBytes)));
    })();
    engines.set(set, loading);
    loading.catch(() => engines.delete(set));
  }
  return engines.get(set);
}

/* The set's engine with `family`'s model loaded (every model of the set when family is left out). */
export async function ready(model, family) {
  const started = performance.now();
  const manifest = await manifestOf(model || "default");
  for (const f of family ? [].concat(family) : Object.keys(manifest.models)) { // the models download beside the engine
    const part = manifest.models[f];
    if (part && !(engines.has(model || "default"))) downloads.prefetch(part.fetch, part.fetchBytes);
  }
  const engine = await engineOf(model);
  await Promise.all((family ? [].concat(family) : Object.keys(engine.manifest.models)).map((f) => engine.load(f)));
  if (stats.readyMs === null) stats.readyMs = Math.round(performance.now() - started);
  return engine;
}

export function usage() {
  return Object.assign({}, downloads.stats, stats);
}

export async function generate(body, opts) {
  return (await engineOf(body && body.model)).generate(body, opts);
}

export async function nextToken(body) {
  return (await engineOf(body && body.model)).nextToken(body);
}

export async function maskFill(body) {
  return (await engineOf(body && body.model)).maskFill(body);
}

export { engineOf as engineFor }; // the set's Engine (a promise), for lib/engine_lessons.js

export function manifestFor(model) { // the set's manifest, its URLs resolved (a promise)
  return manifestOf(model || "default");
}
