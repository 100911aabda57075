/* The device's big files (the engine's WebAssembly, the models): downloaded once, shown while they
   come, kept for the next visit, and shared by every page of the playground.
   get(url, total)   the file's bytes (an ArrayBuffer). `url` names a gzip copy (".gz": most web hosts
                     send files as they are, so the browser unpacks it here with DecompressionStream)
                     or a plain file; `total` is how many bytes the download moves (the manifest says).
                     Kept in the Cache API (CACHE, one entry per URL, read by every page): a second
                     visit downloads nothing. Where the browser allows it (https, localhost) a
                     download runs in a service worker (download_worker.js), so a page change does
                     not stop it: the next page picks it up where it is.
   prefetch(url, total)  starts get() now; the next get() of that url takes its result
   missing(files)    of [{url, bytes}], the bytes not kept yet: what a download would move
   onProgress(fn)    fn({got, total, files}) as bytes arrive (every file this page asked for)
   stats             {downloaded, cached, unkept}: bytes moved by this page, bytes read from the
                     cache, and bytes moved that could not be kept (no Cache API: a plain-http
                     address on a LAN, some private tabs), so the next visit downloads them again
   keeps()           whether this browser can keep the files here at all (a secure context with the Cache API) */
export const CACHE = "playground-engine-v1";
export const CHANNEL = "playground-downloads";
const STALL_MS = 30000; // no word from the worker for this long: download here instead
export const stats = { downloaded: 0, cached: 0, unkept: 0 };

export function keeps() {
  return typeof caches !== "undefined" && window.isSecureContext;
}
const progress = new Map(); // url -> {got, total}
const listeners = new Set();

export function onProgress(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function report(url, got, total) {
  progress.set(url, { got, total: Math.max(total || 0, got) });
  let sum = 0;
  let all = 0;
  for (const p of progress.values()) {
    sum += p.got;
    all += p.total;
  }
  for (const fn of listeners) fn({ got: sum, total: all, files: progress.size });
}

async function openCache() {
  return typeof caches !== "undefined" ? caches.open(CACHE).catch(() => null) : null;
}

/* gzip's magic bytes: a host that sends the .gz with Content-Encoding has unpacked it already. */
async function unpacked(data) {
  const head = new Uint8Array(data, 0, Math.min(2, data.byteLength));
  if (head[0] !== 0x1f || head[1] !== 0x8b) return data;
  return new Response(new Blob([data]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
}

/* Read a response's body, reporting progress. */
async function readAll(response, url, total) {
  const reader = response.body.getReader();
  const parts = [];
  let got = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parts.push(value);
    got += value.byteLength;
    report(url, got, total);
  }
  return new Blob(parts).arrayBuffer();
}

async function direct(url, total, cache) {
  const response = await fetch(url);
  if (!response.ok) throw new Error("could not download " + url + " (HTTP " + response.status + ")");
  const data = await readAll(response, url, total);
  const stored = cache ? await cache.put(url, new Response(data.slice(0), { headers: { "Content-Type": "application/octet-stream" } }))
    .then(() => true, () => false) : false;
  if (!stored) stats.unkept += data.byteLength; // the next visit downloads it again
  return data;
}

let workerPromise = null;
function worker() {
  if (!workerPromise) {
    workerPromise = (async () => {
      if (!("serviceWorker" in navigator) || !window.isSecureContext || typeof BroadcastChannel === "undefined") return null;
      const reg = await navigator.serviceWorker.register(new URL("./download_worker.js", import.meta.url));
      const sw = reg.active || reg.waiting || reg.installing;
      if (sw && sw.state !== "activated") {
        await new Promise((resolve) => sw.addEventListener("statechange", () => sw.state === "activated" && resolve()));
      }
      return reg.active;
    })().catch(() => null);
  }
  return workerPromise;
}

/* The worker downloads into the cache; this page follows its progress and reads the cache at the end. */
async function viaWorker(sw, url, total, cache) {
  const channel = new BroadcastChannel(CHANNEL);
  try {
    await new Promise((resolve, reject) => {
      let timer = null;
      const stall = () => {
        clearTimeout(timer);
        timer = setTimeout(() => reject(new Error("the download worker went quiet")), STALL_MS);
      };
      channel.onmessage = (event) => {
        const m = event.data;
        if (!m || m.url !== url) return;
        stall();
        if (m.got !== undefined) report(url, m.got, m.total || total);
        if (m.error) reject(new Error(m.error));
        else if (m.done) {
          clearTimeout(timer);
          resolve();
        }
      };
      stall();
      sw.postMessage({ url, total });
    });
  } finally {
    channel.close();
  }
  const hit = await cache.match(url);
  if (!hit) throw new Error("the download worker kept no copy of " + url);
  return hit.arrayBuffer();
}

export async function missing(files) {
  const cache = await openCache();
  let sum = 0;
  for (const f of files) if (!(cache && (await cache.match(f.url)))) sum += f.bytes || 0;
  return sum;
}

const early = new Map(); // url -> the promise of a prefetch, until get() takes it

export function prefetch(url, total) {
  if (!early.has(url)) {
    const data = fetchFile(url, total);
    data.catch(() => early.delete(url));
    early.set(url, data);
  }
}

export function get(url, total) {
  const data = early.get(url);
  early.delete(url);
  return data || fetchFile(url, total);
}

async function fetchFile(url, total) {
  const cache = await openCache();
  const hit = cache ? await cache.match(url) : null;
  if (hit) {
    const data = await hit.arrayBuffer();
    stats.cached += data.byteLength;
    return unpacked(data);
  }
  report(url, 0, total);
  const sw = cache ? await worker() : null;
  let data = null;
  if (sw) data = await viaWorker(sw, url, total, cache).catch(() => null);
  if (!data) data = await direct(url, total, cache);
  report(url, data.byteLength, data.byteLength);
  stats.downloaded += data.byteLength;
  return unpacked(data);
}
