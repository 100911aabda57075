/* The page's state in the address bar, so a link reproduces what is on screen. This module owns
   the URL: every page's own settings, and the shared ones (the model set, projector mode, hide=).
   urlState(defaults)  {values, set(patch), reset(), write()}: each key of `defaults` read from the
                       query (typed like its default: number, boolean, array of ints, string) and
                       written back with history.replaceState (keys equal to the default left out)
   modelId()           the chosen model set (`model`), or null for the server's default; the one
                       way a page learns it (api.js sends it with every request)
   setParams(patch)    write shared keys ({projector: "1"}; null deletes) and tell the listeners
   isProjector(), hiddenControls()
   onUrlChange(fn)     fn() after every change of the URL made here */

const listeners = [];

export function onUrlChange(fn) {
  listeners.push(fn);
}

function changed() {
  for (const fn of listeners) fn();
}

const params = () => new URLSearchParams(location.search);

function replace(p) {
  const query = p.toString();
  history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
  changed();
}

export function setParams(patch) {
  const p = params();
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || value === undefined || value === "") p.delete(key);
    else p.set(key, String(value));
  }
  replace(p);
}

export function modelId() {
  const id = params().get("model");
  return id && id.trim() ? id.trim() : null;
}

export const isProjector = () => params().get("projector") === "1";

export function hiddenControls() {
  return (params().get("hide") || "").split(",").map((s) => s.trim()).filter(Boolean);
}

function parseValue(raw, def) {
  if (Array.isArray(def)) {
    if (raw.trim() === "") return [];
    return raw.split(",").map((s) => parseInt(s, 10)).filter((n) => Number.isFinite(n));
  }
  if (typeof def === "number") {
    const n = parseFloat(raw);
    return Number.isFinite(n) ? n : def;
  }
  if (typeof def === "boolean") return raw === "1" || raw === "true";
  return raw;
}

function serialize(value) {
  if (Array.isArray(value)) return value.join(",");
  if (typeof value === "boolean") return value ? "1" : "0";
  return String(value);
}

export function urlState(defaults) {
  const p = params();
  const values = {};
  const copy = (v) => (Array.isArray(v) ? v.slice() : v);
  for (const [key, def] of Object.entries(defaults)) {
    values[key] = p.has(key) ? parseValue(p.get(key), def) : copy(def);
  }
  function write() {
    const q = params();
    for (const [key, def] of Object.entries(defaults)) {
      if (serialize(values[key]) === serialize(def)) q.delete(key);
      else q.set(key, serialize(values[key]));
    }
    replace(q);
  }
  return {
    values,
    set(patch) {
      Object.assign(values, patch);
      write();
    },
    reset() {
      for (const [key, def] of Object.entries(defaults)) values[key] = copy(def);
      write();
    },
    write,
  };
}
