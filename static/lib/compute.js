/* Where an answer is computed: on this server, or on this device (lib/engine.js runs the same
   models in the page, with the same rules: the same seed gives the same text).
   ask(path, body, device, opts)  POST `path` to the server first (with the chosen model set, as
                    api() sends it). When the server answers 503 (busy), takes longer than
                    SERVER_WAIT_MS, or cannot be reached, `device(body)` computes the answer here
                    instead, and for the next AWAY_MS the server is not asked at all. In a static
                    build (no server) it is the device at once. Other refusals (a bad value: 4xx)
                    are reported as api() reports them (opts.fields) and thrown.
   stream(path, body, onEvent, device, signal)
                    the same for server-sent events: POST `path` and read its events; or
                    `device(body, {onChars, signal})` whose characters become the same "token"
                    and "done" events (lib/stream.js's shape).
   badge(after)     a small line right after the element `after` that says where the last answer
                    was computed ("on this server" / "on your device"), with a tooltip that says why
   lastWhere()      "server" or "device": where the last answer was computed (null before any)
   isStatic()       true in a static build (python -m app export-static): no server behind the page
   warmUp(family)   downloads the engine and `family`'s model ahead: at once in a static build
                    (after asking, with the size: see below); on a server only when it says
                    models_on_phones (--models-on-phones), a few seconds after the page opened;
                    otherwise the device downloads only when it must step in.
   unmetered()      true only where the browser says the connection is Wi-Fi or wired and Data
                    Saver is off. Anywhere else (no navigator.connection at all, as in Safari, so
                    every iPhone, and Firefox; Data Saver; mobile data) a download over ASK_ABOVE
                    waits for a tap on "Download", after the page said the size and the time at
                    SLOW_SPEED; the tap is remembered for this site (localStorage), except under
                    Data Saver, which asks every time.
   computeHere(run) run() on the device (no server asked), the badge saying so
   keepOnDevice(families)  downloads the engine and those models now, once per page: a class
                    session's phone when the teacher turns on "models on the phones" for it
   While the device downloads, a line at the top of the page says how far ("3.1 MB of 10.5 MB"). */
import { ApiError, errorOf, models } from "./api.js";
import { plan, ready, onProgress, manifestFor } from "./engine.js";
import { keeps, stats } from "./downloads.js";
import { report, showError } from "./errors.js";
import { modelId } from "./state.js";
import { parseEvents } from "./stream.js";
import { el } from "./dom.js";
import { siteUrl } from "./site.js";

const SERVER_WAIT_MS = 5000;
const AWAY_MS = 30000;
const WARM_UP_AFTER_MS = 3000;
let awaySince = null; // when the server last failed to answer
const badges = new Set();
let where = null; // "server" | "device"
let why = "";

export function lastWhere() {
  return where;
}

export function isStatic() {
  const meta = document.querySelector('meta[name="playground-build"]');
  return !!meta && meta.content === "static";
}

function serverAway() {
  return isStatic() || (awaySince !== null && performance.now() - awaySince < AWAY_MS);
}

function setWhere(place, reason) {
  where = place;
  why = reason;
  for (const node of badges) draw(node);
}

let half = ""; // what the device's half-precision weights change, when this copy has them (halfNote)

function draw(node) {
  node.hidden = where === null;
  node.dataset.where = where || "";
  node.textContent = where === "device" ? "Computed on your device" + half : "Computed on this server";
  node.title = why;
}

/* A static copy exported with --weights fp16 (app/static_build.py) computes from half-precision
   weights: said beside every answer from the device, with how often the export's check found the
   server's answers (training/export/web_checks.py: GPT's test texts, BERT's and PLM's top guesses, T5's
   written spans, an attention graph's weights). */
async function halfNote() {
  const manifest = await manifestFor(modelId() || "default");
  const mine = (name) => !pageFamily || (typeof pageFamily === "function" ? pageFamily(name) // the page's own model(s), when it says
    : [].concat(pageFamily).includes(name));
  // only where the check found a difference (an export asked for it); a copy that passed gives the server's answers
  const parts = Object.entries(manifest.models).filter(([name, p]) => p.storage === "fp16" && p.fp16_check &&
    p.fp16_check.ok === false && mine(name));
  if (!parts.length) return "";
  const rates = parts.map(([name, p]) => {
    const c = p.fp16_check;
    if (c.texts) return name.toUpperCase() + ": " + c.same_texts + " of " + c.texts + " test texts the same as the server's";
    if (c.positions) return name.toUpperCase() + ": the same top guess at " + c.same_top1 + " of " + c.positions + " test positions";
    if (c.spans) return name.toUpperCase() + ": " + c.same_spans + " of " + c.spans + " test spans written back the same, " +
      "each character's probability within " + c.max_abs_prob_diff.toFixed(4);
    if (c.max_abs_weight_diff !== undefined) return name.replace(/_attn$/, "").toUpperCase() + "'s attention map: every value within " +
      c.max_abs_weight_diff.toFixed(4) + " of the server's";
    return "";
  }).filter(Boolean);
  return " (weights stored in half precision, fp16, for a smaller download: answers may differ from the server's " +
    "in rare steps; " + rates.join("; ") + ")";
}

export function badge(after) {
  const node = el("p", { class: "note where-badge" });
  badges.add(node);
  draw(node);
  after.after(node);
  return node;
}

function withModel(body) {
  const model = modelId();
  return model ? Object.assign({ model }, body) : body;
}

function timeoutSignal(signal) {
  const timeout = AbortSignal.timeout(SERVER_WAIT_MS);
  return signal && AbortSignal.any ? AbortSignal.any([signal, timeout]) : timeout;
}

/* A failure that the device can answer for: busy, too slow, unreachable. */
function deviceWorthy(err) {
  return err && (err.name === "TimeoutError" || err.name === "TypeError" || err.status === 503 || err.status === 0);
}

function reasonOf(err) {
  if (isStatic()) return "This copy of the playground has no server: the models run in your browser.";
  if (err && err.name === "TimeoutError") return "The server took too long to answer, so your browser computed this.";
  if (err && err.status === 503) return "The server is busy, so your browser computed this.";
  return "The server could not be reached, so your browser computed this.";
}

async function onDevice(device, body, err, opts) {
  if (!isStatic() && err) awaySince = performance.now();
  try {
    await agreed();
    const data = await device(withModel(body), opts);
    half = await halfNote().catch(() => "");
    setWhere("device", reasonOf(err));
    return data;
  } catch (deviceErr) {
    if (deviceErr.name === "AbortError") throw deviceErr;
    if (deviceErr.status && deviceErr.status !== 503 && deviceErr.status !== 404) throw deviceErr; // a bad value
    const failed = new ApiError((err ? err.message + "; " : "") + "your device could not compute it either (" +
      (deviceErr.detail || deviceErr.message) + ")", err ? err.status || 0 : 503, null, deviceErr.detail);
    throw failed;
  }
}

function shown(err, opts) {
  if (err.name === "AbortError") return err;
  if (opts && opts.fields) report(err, opts.fields);
  else if (!(opts && opts.quiet)) showError(err.message);
  return err;
}

export async function ask(path, body, device, opts) {
  opts = opts || {};
  let failure = null;
  if (!serverAway()) {
    try {
      const response = await fetch(siteUrl(path), { method: "POST", signal: timeoutSignal(opts.signal),
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(withModel(body)) });
      if (response.ok) {
        awaySince = null;
        setWhere("server", "The server computed this answer.");
        return await response.json();
      }
      const err = await errorOf(response);
      if (!deviceWorthy(err)) throw shown(err, opts);
      failure = err;
    } catch (err) {
      if (!deviceWorthy(err)) throw err instanceof ApiError ? err : shown(err, opts);
      failure = err.status !== undefined ? err : new ApiError(err.name === "TimeoutError"
        ? "the server did not answer in time" : "the server could not be reached (" + err.message + ")", 0);
    }
  }
  try {
    return await onDevice(device, body, failure, undefined);
  } catch (err) {
    throw shown(err, opts);
  }
}

export async function stream(path, body, onEvent, device, signal) {
  let failure = null;
  if (!serverAway()) {
    let response = null;
    const waiting = new AbortController(); // the server has SERVER_WAIT_MS to start answering
    const timer = setTimeout(() => waiting.abort(new DOMException("the server did not answer in time", "TimeoutError")), SERVER_WAIT_MS);
    if (signal) signal.addEventListener("abort", () => waiting.abort(signal.reason), { once: true });
    try {
      response = await fetch(siteUrl(path), { method: "POST", signal: waiting.signal, body: JSON.stringify(withModel(body)),
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" } });
      if (!response.ok) throw await errorOf(response);
    } catch (err) {
      if (signal && signal.aborted) throw signal.reason || err;
      if (!deviceWorthy(err)) throw err;
      failure = err.status !== undefined ? err : new ApiError("the server could not be reached (" + err.message + ")", 0);
      response = null;
    } finally {
      clearTimeout(timer);
    }
    if (response) {
      awaySince = null;
      setWhere("server", "The server computed this text.");
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), onEvent);
      }
    }
  }
  const onChars = (text, steps) => onEvent("token", { text, steps });
  const data = await onDevice(device, body, failure, { onChars, signal });
  onEvent("done", { text: data.text, context_used: data.context_used, unknown_chars: data.unknown_chars });
}

/* ---------- downloading the device's models ---------- */
const MB = (bytes) => (bytes / 1e6).toFixed(1) + " MB";
let statusLine = null;

/* One line at the top of the page: what the device downloads, how far it got. */
function status() {
  if (!statusLine) {
    statusLine = el("p", { class: "note engine-status", role: "status" });
    const heading = document.querySelector("main h1");
    if (heading) heading.after(statusLine);
    else (document.querySelector("main") || document.body).prepend(statusLine);
  }
  return statusLine;
}

let planned = 0; // bytes this page said it would download (the files start one after another)

function drawProgress(got, total) {
  const line = status();
  line.hidden = false;
  line.classList.toggle("is-active", got < total); // in view while it moves (static/device.css)
  line.replaceChildren(got < total ? "Downloading the models to your device: " + MB(got) + " of " + MB(total) + "."
    : stats.unkept > 0 || !keeps() ? "The models are on your device for this visit only: this browser keeps nothing " +
      "from this address (a plain http:// address, or a private tab), so the next visit downloads them again."
      : "The models are on your device now (kept for your next visit).");
}

onProgress(({ got, total }) => drawProgress(got, Math.max(total, planned)));

/* Known not to count bytes: the browser says Wi-Fi or wired, and Data Saver is off. Desktop browsers
   and Safari mostly say nothing, so they are asked (once per site). */
export function unmetered() {
  const c = navigator.connection;
  return !!c && c.saveData !== true && (c.type === "wifi" || c.type === "ethernet");
}

const ASK_ABOVE = 2e6; // bytes: a download bigger than this waits for the student's tap
const SLOW_SPEED = 180e3; // bytes per second: a slow phone connection (the time the question states)
const AGREED_KEY = "playground-downloads-agreed"; // this site's remembered tap

function remembered() {
  try {
    return localStorage.getItem(AGREED_KEY) === "yes" && !(navigator.connection && navigator.connection.saveData === true);
  } catch {
    return false; // storage off (some private tabs): ask
  }
}

function remember() {
  try {
    localStorage.setItem(AGREED_KEY, "yes");
  } catch { /* not kept: asked again next time */ }
}

function duration(bytes) {
  const s = Math.max(1, Math.round(bytes / SLOW_SPEED));
  return s < 90 ? "about " + s + " s" : "about " + Math.round(s / 60) + " min";
}

function whyAsked() {
  const c = navigator.connection;
  if (c && c.saveData === true) return "Data Saver is on in this browser.";
  if (c && c.type === "cellular") return "You seem to be on mobile data.";
  return "Your browser does not say whether this connection counts your data.";
}

let pageFamily; // the model this page runs (warmUp's family; undefined: all of the set's)
let agreement = null;

/* Resolves once the device may download: at once on a connection known not to count bytes, for a
   small download, or where this site's tap is remembered; otherwise once the student tapped
   "Download" under the size and time this page said (every computation on this page waits for that
   one answer). */
function agreed() {
  if (!agreement) {
    agreement = (async () => {
      if (unmetered() || remembered()) return;
      const { bytes } = await plan(undefined, pageFamily);
      if (bytes <= ASK_ABOVE) return;
      const line = status();
      const go = el("button", { type: "button", class: "btn engine-download", text: "Download " + MB(bytes) });
      line.hidden = false;
      line.classList.add("is-active"); // the question in view, wherever the student is (static/device.css)
      line.replaceChildren("To compute here, this page downloads " + MB(bytes) + (keeps()
        ? " once (the engine and the model; your browser keeps them): "
        : " (the engine and the model; this browser cannot keep them from this address, so every visit downloads them again): ") + duration(bytes) + " at " + (SLOW_SPEED / 1e3) + " KB/s, a slow phone connection. " +
        whyAsked() + " ", go);
      await new Promise((resolve) => go.addEventListener("click", resolve, { once: true }));
      remember();
      line.replaceChildren("Starting the download…");
    })();
    agreement.catch(() => { agreement = null; });
  }
  return agreement;
}

/* The engine and `family`'s model, downloaded now: in a static build at once (where the connection
   may count bytes, once the student agrees to the size), on a server only when the teacher chose models
   on the phones (--models-on-phones): otherwise a phone downloads nothing while the server answers
   (the device steps in, downloading then, only when the server is busy or away). */
async function prepare(family) {
  await agreed();
  const { bytes } = await plan(undefined, family);
  if (bytes > 0) {
    planned = bytes;
    drawProgress(0, bytes);
  }
  await ready(undefined, family);
}

/* run() on this device, for a page that has no server to ask (the static copy's NSP quiz): after
   the download question, and the badge says so. */
export async function computeHere(run) {
  await agreed();
  const data = await run();
  half = await halfNote().catch(() => "");
  setWhere("device", reasonOf(null));
  return data;
}

let kept = null;
export function keepOnDevice(families) {
  if (!kept) kept = prepare(families).catch(() => { kept = null; }); // a failure: tried again on the next change
  return kept;
}

export function warmUp(family) {
  pageFamily = family;
  const start = () => prepare(family).catch(() => {}); // a failure shows when the device is really needed
  if (isStatic()) {
    start();
    return;
  }
  models().then((data) => {
    if (data && data.models_on_phones) {
      setTimeout(() => (window.requestIdleCallback ? requestIdleCallback(start, { timeout: 10000 }) : start()), WARM_UP_AFTER_MS);
    }
  }).catch(() => {});
}
