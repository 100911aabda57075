/* The playground's download worker (a service worker; lib/downloads.js registers it): downloads a
   big file into the Cache API for whichever page asks, and tells every page how far it got, so a
   student who changes page during a download does not start it again. It answers no requests
   (no fetch handler): pages read the cache themselves. Messages: {url, total} in; on the
   BroadcastChannel "playground-downloads": {url, got, total}, then {url, done} or {url, error}. */
const CACHE = "playground-engine-v1";
const channel = new BroadcastChannel("playground-downloads");
const running = new Map(); // url -> {promise, got, total}

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

async function download(url, state) {
  const cache = await caches.open(CACHE);
  if (await cache.match(url)) {
    channel.postMessage({ url, done: true });
    return;
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error("could not download " + url + " (HTTP " + response.status + ")");
  const reader = response.body.getReader();
  const parts = [];
  let said = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parts.push(value);
    state.got += value.byteLength;
    if (Date.now() - said > 200) {
      said = Date.now();
      channel.postMessage({ url, got: state.got, total: state.total });
    }
  }
  await cache.put(url, new Response(new Blob(parts), { headers: { "Content-Type": "application/octet-stream" } }));
  channel.postMessage({ url, got: state.got, total: state.total, done: true });
}

self.addEventListener("message", (event) => {
  const { url, total } = event.data || {};
  if (typeof url !== "string" || new URL(url).origin !== self.location.origin) return;
  let state = running.get(url);
  if (state) {
    channel.postMessage({ url, got: state.got, total: state.total }); // a page joining a download
  } else {
    state = { got: 0, total: total || 0 };
    state.promise = download(url, state)
      .catch((err) => channel.postMessage({ url, error: String(err && err.message || err) }))
      .finally(() => running.delete(url));
    running.set(url, state);
  }
  event.waitUntil(state.promise);
});
