/* The models on this device: the families' own device code (static/families/<name>.js, `device`)
   runs in the page with onnxruntime-web (its plain WebAssembly build, one thread:
   static/vendor/onnxruntime-web/), from the model set's web copies (training/export/web.py), giving
   the server's answers: the same rules in lib/engine_core.js, the same seed -> the same text,
   probabilities within 1e-4.

   onDevice(path)        the function that answers the API route `path` on this device:
                         (body, opts) -> what the server answers (opts.onChars, opts.signal for a
                         stream; opts.params, opts.path for a GET). Each family names its routes
                         (`device.routes`, e.g. GPT's "/api/generate", BERT's "/api/mask-fill").
   needs(path)           the models that route runs (its family's name), for ready() and plan()
   ready(model, family)  loads a set's engine and its `family` model (a name or a list of them;
                         all when left out) now, so the device is ready before it is needed; resolves to the
                         Engine. body.model / model: a set id, or nothing for the default set.
   plan(model, family)   {bytes, total}: what ready(model, family) would download now (0: all kept)
   onProgress(fn)        fn({got, total, files}) while files download (lib/downloads.js)
   usage()               {downloaded, cached: bytes (as moved: gzip) fetched and read from the Cache
                         API, readyMs} of this page's loads
   Engine                one set's models, built from an onnxruntime module and the model bytes
                         (Engine.create(ort, manifest, {<family>: bytes, ...})): node uses it for
                         the parity check; engine.config(family), engine.run(family, feeds)
   route(path)           {family, run(dev, body, opts)}: the family code that answers `path` (node's parity check)
   EngineError           the server's 4xx, refused here (status, parameter, detail)

   Files: web/models/<set or "default">/manifest.json (under the site's root, lib/site.js) says
   what to fetch: the gzip copies of the engine's WebAssembly and of the models, under names that
   hold their content hash, so they never change meaning; lib/downloads.js fetches, unpacks and
   keeps them (the Cache API), and a second visit (or a phone offline) downloads nothing. The manifest itself is asked for each time and read from the cache
   when the network fails. */
import { EngineError, Vocab } from "./engine_core.js";
import * as downloads from "./downloads.js";
import { CACHE } from "./downloads.js";
import { ROOT } from "./site.js";
import { PIECES } from "../families/index.js";

export { EngineError };

const ORT_MODULE = new URL("../vendor/onnxruntime-web/ort.wasm.min.js", import.meta.url).href;
const MANIFEST_TIMEOUT_MS = 6000;
const stats = { readyMs: null };

export class Engine {
  /* bytesOf(family) -> the model's bytes (a promise), fetched when that model is first needed;
     weightsOf(family) -> the bytes of the weights file its graph reads (the manifest's `weights`: one
     file a family's plain graph and its attention graph share, training/export/web.py). */
  constructor(ort, manifest, bytesOf, weightsOf = async () => null) {
    this.ort = ort;
    this.manifest = manifest;
    this.bytesOf = bytesOf;
    this.weightsOf = weightsOf;
    this.sessions = {}; // family -> Promise of its InferenceSession
    this.vocab = new Vocab(manifest.vocab.chars);
    this.queue = Promise.resolve(); // one model run at a time (onnxruntime-web runs one per session)
    this.creating = Promise.resolve(); // one session created at a time (load)
  }

  static create(ort, manifest, bytes) { // bytes: family -> its graph; "<family>:weights" -> its weights file
    return new Engine(ort, manifest, async (family) => bytes[family], async (family) => bytes[family + ":weights"]);
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
      const part = this.manifest.models[family];
      const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
      /* Created one after another: while onnxruntime-web creates a session it mounts the external data
         under the name the graph gives it, and every family's graph names its weights file the same
         ("weights.bin"), so two families created at once (GPT vs BERT's page) would clash there. */
      this.sessions[family] = Promise.all([this.bytesOf(family), part.weights ? this.weightsOf(family) : null])
        .then(([data, weights]) => {
          const made = this.creating.then(() => this.ort.InferenceSession.create(data, weights
            ? Object.assign({ externalData: [{ path: part.weights.location, data: weights }] }, options) : options));
          this.creating = made.catch(() => {});
          return made;
        });
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
}

/* ---------- the families' routes ---------- */
const ROUTES = []; // [{pattern, family, run}] from every family's device.routes ("{id}": one path segment)
for (const [family, pieces] of Object.entries(PIECES)) {
  for (const [path, run] of Object.entries((pieces.device && pieces.device.routes) || {})) {
    const pattern = new RegExp("^" + path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[a-z_]+\}/g, "[^/]+") + "$");
    ROUTES.push({ pattern, family, run });
  }
}

export function route(path) {
  const found = ROUTES.find((r) => r.pattern.test(path));
  if (!found) throw new Error("no family answers " + path + " on the device");
  return found;
}

export function needs(path) {
  return [route(path).family];
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
  const file = (part) => Object.assign({}, part, { fetch: at(part.packed || part.url), fetchBytes: part.packed ? part.gzip_bytes : part.bytes });
  for (const [family, part] of Object.entries(manifest.models)) {
    models[family] = Object.assign(file(part), part.weights ? { weights: file(part.weights) } : {});
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

/* The manifest's models `family` names: a name, a list of names, a test of a name (e.g. the attention
   page's inspection graphs), or every model of the set when left out. */
function chosen(manifest, family) {
  const all = Object.keys(manifest.models);
  if (!family) return all;
  return typeof family === "function" ? all.filter(family) : [].concat(family);
}

/* What loading `family` (see chosen(); all when left out) of a set would download now, in bytes
   (0: all kept from an earlier visit). Asks for the manifest (a few KB), nothing else. */
export async function plan(model, family) {
  const manifest = await manifestOf(model || "default");
  const files = [{ url: manifest.engine.fetch, bytes: manifest.engine.fetchBytes }];
  for (const f of chosen(manifest, family)) {
    for (const part of filesOf(manifest.models[f])) {
      if (!files.some((x) => x.url === part.fetch)) files.push({ url: part.fetch, bytes: part.fetchBytes }); // a shared file once
    }
  }
  return { bytes: await downloads.missing(files), total: files.reduce((sum, f) => sum + f.bytes, 0) };
}

/* A model's files: its graph, and the weights file it reads (shared with its family's other graph). */
function filesOf(part) {
  return part ? [part].concat(part.weights ? [part.weights] : []) : [];
}

export const onProgress = downloads.onProgress;

const engines = new Map();

function engineOf(model) {
  const set = model || "default";
  if (!engines.has(set)) {
    const loading = (async () => {
      const manifest = await manifestOf(set);
      const ort = await loadOrt(manifest.engine);
      const shared = new Map(); // a weights file's url -> its bytes (a promise): fetched once for both graphs
      const weightsOf = (family) => {
        const w = manifest.models[family].weights;
        if (!shared.has(w.fetch)) shared.set(w.fetch, fetched(w.fetch, w.fetchBytes).then((data) => new Uint8Array(data)));
        return shared.get(w.fetch);
      };
      return new Engine(ort, manifest, async (family) => new Uint8Array(await fetched(manifest.models[family].fetch,
        manifest.models[family].fetchBytes)), weightsOf);
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
  for (const f of chosen(manifest, family)) { // the models download beside the engine
    if (engines.has(model || "default")) break;
    for (const part of filesOf(manifest.models[f])) downloads.prefetch(part.fetch, part.fetchBytes);
  }
  const engine = await engineOf(model);
  await Promise.all(chosen(engine.manifest, family).map((f) => engine.load(f)));
  if (stats.readyMs === null) stats.readyMs = Math.round(performance.now() - started);
  return engine;
}

export function usage() {
  return Object.assign({}, downloads.stats, stats);
}

/* What the device gives a family's route: the set's engine (created when first asked: the WebAssembly
   downloads then) and its manifest (URLs resolved). */
function devOf(model) {
  return { engine: () => engineOf(model), manifest: () => manifestOf(model || "default") };
}

export function onDevice(path) {
  const { run } = route(path);
  return (body, opts = {}) => run(devOf(body && body.model), body || {}, Object.assign({ path }, opts));
}

export { engineOf as engineFor }; // the set's Engine (a promise), for lib/engine_lessons.js

export function manifestFor(model) { // the set's manifest, its URLs resolved (a promise)
  return manifestOf(model || "default");
}
