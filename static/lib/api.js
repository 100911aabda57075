/* Talking to the server. Every request of every page goes through api(), so the model set, the
   retry on a busy server and the error sentences are the same everywhere.
   api(path, opts)   JSON from the server. opts: body (POST JSON), method, params (query), signal,
                     quiet (show nothing on error), fields (errors go beside their control, see
                     errors.report), model (false: do not send the chosen set). The chosen set
                     (state.modelId) is added as `model` to a JSON body or to a GET's params.
                     A 503 with Retry-After is retried after that pause (with jitter), twice at most.
                     Throws ApiError {status (0: unreachable), parameter, detail}.
   retrying(doFetch) a fetch() promise-maker retried the same way; returns the last Response
   models()          GET /api/models, once per page
   families()        the model families, from the same answer
   info()            the chosen set: {id, name, cards, vocab, examples, limits, sets, default}; examples:
                     lines of the set's own held-out text (a run's sets), null for the shipped set
   latest()          "latest request wins": const ticket = x.begin(); ... if (!ticket()) return;
                     x.cancel() makes every ticket handed out so far stale */
import { modelId } from "./state.js";
import { siteUrl } from "./site.js";
import { report, showError } from "./errors.js";

export class ApiError extends Error {
  constructor(message, status, parameter, detail) {
    super(message);
    this.status = status;
    this.parameter = parameter || null;
    this.detail = detail || null; // the server's sentence, without the status
  }
}

export function latest() {
  let n = 0;
  return {
    begin() {
      const id = ++n;
      return () => id === n;
    },
    cancel() {
      n++;
    },
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/* 503 + Retry-After: the server is busy with the whole class; wait as asked (with jitter, so a
   class does not come back on the same tick) and try again, twice at most. */
export async function retrying(doFetch) {
  for (let attempt = 0; ; attempt++) {
    const response = await doFetch();
    const retryAfter = Number(response.headers.get("Retry-After"));
    if (response.status !== 503 || !(retryAfter > 0) || attempt >= 2) return response;
    await sleep(retryAfter * 1000 * (0.5 + Math.random()));
  }
}

/* The error of a response that is not ok, from its JSON body {detail, parameter}. */
export async function errorOf(response) {
  let data = null;
  try {
    data = await response.json();
  } catch (err) {
    data = null;
  }
  let detail = data && data.detail !== undefined ? data.detail : response.statusText;
  if (typeof detail !== "string") detail = JSON.stringify(detail);
  return new ApiError(detail + " (HTTP " + response.status + ")", response.status, data && data.parameter, detail);
}

function shown(e, opts) {
  if (opts.fields) report(e, opts.fields);
  else if (!opts.quiet) showError(e.message);
  return e;
}

export async function api(path, options) {
  const opts = options || {};
  const init = { method: opts.method || (opts.body !== undefined ? "POST" : "GET"), headers: {} };
  const model = opts.model === false ? null : modelId();
  if (opts.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(model && opts.body && typeof opts.body === "object" ? Object.assign({ model }, opts.body) : opts.body);
  }
  if (opts.signal) init.signal = opts.signal;
  let url = siteUrl(path);
  const params = Object.assign({}, opts.params || {});
  if (model && opts.body === undefined && opts.params) params.model = model;
  if (Object.keys(params).length) url += "?" + new URLSearchParams(params).toString();
  let response;
  try {
    response = await retrying(() => fetch(url, init));
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw shown(new ApiError("the server could not be reached (" + err.message + ")", 0), opts);
  }
  if (!response.ok) throw shown(await errorOf(response), opts);
  try {
    return await response.json();
  } catch (err) {
    return null;
  }
}

let modelsPromise = null;
export function models() {
  if (!modelsPromise) modelsPromise = api("/api/models", { model: false });
  return modelsPromise;
}

/* The model families the server knows (app/contract/families.py), in its order: name, label,
   objective, trainable, pages, script (the family's own page pieces, static/families/<name>.js). */
export function families() {
  return models().then((data) => data.families || []);
}

let infoPromise = null;
export function info() {
  if (infoPromise) return infoPromise;
  infoPromise = models().then(async (data) => {
    const sets = data.sets || [];
    const wanted = modelId();
    const limits = data.limits || {}; // what the server enforces (max_masks, max_seed, text budgets…)
    const base = { sets, default: data.default || null, limits };
    const set = wanted && wanted !== data.default ? sets.find((s) => s.id === wanted) : null;
    if (wanted && wanted !== data.default && !set) {
      showError("The model set “" + wanted + "” is not on this server; showing the default one instead.");
    }
    if (!set) {
      const def = sets.find((s) => s.id === data.default) || {};
      return Object.assign(base, { id: data.default || null, name: def.name || null, cards: data.cards || {}, vocab: data.vocab,
                                   examples: data.examples || null });
    }
    const one = await api("/api/models/" + encodeURIComponent(set.id), { model: false });
    return Object.assign(base, { id: set.id, name: set.name, cards: one.cards || set.cards || {}, vocab: one.vocab || data.vocab,
                                 examples: one.examples || null });
  });
  return infoPromise;
}
