/* Pretraining Playground: shared helpers for every applet (no build step, no dependencies).
   PP.api        fetch JSON from the server; errors carry the body's "detail" and are shown.
   PP.urlState   settings <-> URL query (history.replaceState), so a link reproduces a demo.
   PP.report     an API error shown next to the control that caused it, in plain words.
   PP.info       the chosen model set (URL `model`): its cards, vocabulary and the server's limits.
   Elsewhere: charts.js (PP.bars, PP.table), chrome.js (projector mode, hide=, the model picker,
   the shortcut switch, slider value texts), qr.js and share.js (the share panel). */
"use strict";

const PP = (function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const VISIBLE = { " ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍" };

  /* ---------- DOM helpers ---------- */
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function svg(tag, attrs, children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "class") node.setAttribute("class", value);
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
  }

  function append(node, children) {
    if (children === null || children === undefined) return;
    for (const child of [].concat(children)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" || typeof child === "number"
        ? document.createTextNode(String(child)) : child);
    }
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  const $ = (selector, root) => (root || document).querySelector(selector);

  /* ---------- formatting ---------- */
  function visibleChar(c) {
    return Object.prototype.hasOwnProperty.call(VISIBLE, c) ? VISIBLE[c] : c;
  }

  function charName(c) {
    if (c === " ") return "space";
    if (c === "\n") return "newline";
    if (c === "\t") return "tab";
    return "“" + c + "”";
  }

  function pct(p, digits) {
    if (p === 0) return "0 %";
    const d = digits === undefined ? 1 : digits;
    if (p < Math.pow(10, -d) / 100) return "<" + Math.pow(10, -d).toFixed(d) + " %";
    return (p * 100).toFixed(d) + " %";
  }

  function num(x, digits) {
    return Number(x).toFixed(digits === undefined ? 3 : digits);
  }

  /* Characters as the server counts them (Python's len counts code points: an emoji is one). */
  function len(text) {
    return [...String(text)].length;
  }

  function thousands(n) {
    return Number(n).toLocaleString("en-US");
  }

  function debounce(fn, ms) {
    let timer = null;
    return function (...args) {
      clearTimeout(timer);
      timer = setTimeout(() => fn.apply(this, args), ms);
    };
  }

  /* ---------- errors ---------- */
  function showError(message) {
    const box = $("#error-box");
    if (box) box.textContent = message ? "Error: " + message : "";
  }

  function clearError() {
    showError("");
  }

  /* The container a message about `control` goes in: its [data-control] block, or itself. */
  function fieldBox(control) {
    return (control.closest && control.closest("[data-control], .control")) || control.parentNode;
  }

  /* A message right under a control (role=alert when it is an error), scrolled into view. kind:
     "error" (the request failed because of this control) or "notice" (something was adjusted). */
  function fieldMessage(control, message, kind) {
    if (!control) return null;
    const box = fieldBox(control);
    const cls = kind === "notice" ? "field-notice" : "field-error";
    let node = box.querySelector(":scope > ." + cls);
    if (!message) {
      if (node) node.remove();
      if (kind !== "notice") control.removeAttribute("aria-invalid");
      return null;
    }
    if (!node) {
      node = el("p", { class: cls, id: (control.id || "field") + "-" + cls, role: kind === "notice" ? "status" : "alert" });
      box.appendChild(node);
    }
    node.textContent = message;
    if (kind !== "notice") {
      control.setAttribute("aria-invalid", "true");
      control.setAttribute("aria-describedby", node.id);
    }
    const r = node.getBoundingClientRect();
    if (r.top < 0 || r.bottom > window.innerHeight) node.scrollIntoView({ block: "center", behavior: "auto" });
    return node;
  }

  function clearFieldErrors(root) {
    for (const node of (root || document).querySelectorAll(".field-error")) node.remove();
    for (const node of (root || document).querySelectorAll("[aria-invalid='true']")) node.removeAttribute("aria-invalid");
  }

  /* Plain sentences for what any page can meet. */
  function plainStatus(err) {
    if (err.status === 0) return "The server could not be reached. Check the network connection and try again.";
    if (err.parameter === "model") {
      if (err.status === 409) return "The chosen model set does not include the model this page needs. Pick another one.";
      if (err.status === 503) return "The chosen model set could not be loaded on this server. Pick another one.";
      return "The chosen model set is not on this server any more. Pick another one.";
    }
    if (err.status === 503) return "The server is busy with the whole class right now. Try again in a moment.";
    if (err.status === 413) return "That is too much text to send at once.";
    return null;
  }

  /* Show an API error next to the control it names. `fields` maps the error's `parameter` to
     {control: element, say: (err) => sentence}; unmatched errors go to the page's error box. */
  function report(err, fields) {
    if (!err || err.name === "AbortError") return;
    const entry = (fields || {})[err.parameter] || null;
    const generic = plainStatus(err);
    let sentence = entry && entry.say ? entry.say(err) : null;
    if (!sentence) sentence = generic;
    if (!sentence) sentence = err.detail ? err.detail.charAt(0).toUpperCase() + err.detail.slice(1) + "." : err.message;
    if (entry && entry.control && !generic) {
      clearError();
      fieldMessage(entry.control, sentence, "error");
    } else {
      showError(sentence);
      const box = $("#error-box");
      if (box) {
        const r = box.getBoundingClientRect();
        if (r.top < 0 || r.bottom > window.innerHeight) box.scrollIntoView({ block: "center" });
      }
    }
  }

  /* ---------- API ---------- */
  class ApiError extends Error {
    constructor(message, status, parameter, detail) {
      super(message);
      this.status = status;
      this.parameter = parameter || null;
      this.detail = detail || null; // the server's sentence, without the status
    }
  }

  /* opts: body (POST JSON), params (query), signal, quiet (show nothing), fields (see report:
     errors then go next to their control in plain words), model (false: do not send `model`). */
  async function api(path, options) {
    const opts = options || {};
    const init = { method: opts.method || (opts.body !== undefined ? "POST" : "GET"), headers: {} };
    const model = opts.model === false ? null : chosenModel();
    if (opts.body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(model && opts.body && typeof opts.body === "object" ? Object.assign({ model }, opts.body) : opts.body);
    }
    if (opts.signal) init.signal = opts.signal;
    let url = path;
    const params = Object.assign({}, opts.params || {});
    if (model && opts.body === undefined && opts.params) params.model = model;
    if (Object.keys(params).length) url += "?" + new URLSearchParams(params).toString();
    let response;
    for (let attempt = 0; ; attempt++) {
      try {
        response = await fetch(url, init);
      } catch (err) {
        if (err.name === "AbortError") throw err;
        const e = new ApiError("the server could not be reached (" + err.message + ")", 0);
        if (opts.fields) report(e, opts.fields);
        else if (!opts.quiet) showError(e.message);
        throw e;
      }
      // 503 + Retry-After: the server is busy with the whole class; wait as asked (with jitter,
      // so a class does not come back on the same tick) and try again, twice at most.
      const retryAfter = Number(response.headers.get("Retry-After"));
      if (response.status !== 503 || !(retryAfter > 0) || attempt >= 2) break;
      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 * (0.5 + Math.random())));
    }
    let data = null;
    try {
      data = await response.json();
    } catch (err) {
      data = null;
    }
    if (!response.ok) {
      let detail = data && data.detail !== undefined ? data.detail : response.statusText;
      if (typeof detail !== "string") detail = JSON.stringify(detail);
      const e = new ApiError(detail + " (HTTP " + response.status + ")", response.status, data && data.parameter, detail);
      if (opts.fields) report(e, opts.fields);
      else if (!opts.quiet) showError(e.message);
      throw e;
    }
    return data;
  }

  let modelsPromise = null;
  function models() {
    if (!modelsPromise) modelsPromise = api("/api/models", { model: false });
    return modelsPromise;
  }

  /* ---------- model sets (the registry) ---------- */
  /* The set chosen in the URL (`model`), or null for the server's default. */
  function chosenModel() {
    const id = new URLSearchParams(location.search).get("model");
    return id && id.trim() ? id.trim() : null;
  }

  let infoPromise = null;
  /* {id, name, cards, vocab, limits, sets, default}: what the page needs of the chosen set. */
  function info() {
    if (infoPromise) return infoPromise;
    infoPromise = models().then(async (data) => {
      const sets = data.sets || [];
      const wanted = chosenModel();
      const limits = data.limits || {}; // what the server enforces (max_masks, max_seed, text budgets…)
      const base = { sets, default: data.default || null, limits };
      const set = wanted && wanted !== data.default ? sets.find((s) => s.id === wanted) : null;
      if (wanted && wanted !== data.default && !set) {
        showError("The model set “" + wanted + "” is not on this server; showing the default one instead.");
      }
      if (!set) {
        const def = sets.find((s) => s.id === data.default) || {};
        return Object.assign(base, { id: data.default || null, name: def.name || null, cards: data.cards || {}, vocab: data.vocab });
      }
      const one = await api("/api/models/" + encodeURIComponent(set.id), { model: false });
      return Object.assign(base, { id: set.id, name: set.name, cards: one.cards || set.cards || {}, vocab: one.vocab || data.vocab });
    });
    return infoPromise;
  }

  /* ---------- URL state ---------- */
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

  function same(a, b) {
    return serialize(a) === serialize(b);
  }

  function urlState(defaults) {
    const params = new URLSearchParams(location.search);
    const values = {};
    const copy = (v) => (Array.isArray(v) ? v.slice() : v);
    for (const [key, def] of Object.entries(defaults)) {
      values[key] = params.has(key) ? parseValue(params.get(key), def) : copy(def);
    }
    function write() {
      const p = new URLSearchParams(location.search);
      for (const [key, def] of Object.entries(defaults)) {
        if (same(values[key], def)) p.delete(key);
        else p.set(key, serialize(values[key]));
      }
      const query = p.toString();
      history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
      urlChanged();
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

  const urlListeners = [];
  function onUrlChange(fn) {
    urlListeners.push(fn);
  }
  function urlChanged() {
    for (const fn of urlListeners) fn();
  }

  function clamp(x, lo, hi) {
    return Math.min(hi, Math.max(lo, x));
  }

  /* True when a keyboard shortcut should be ignored because the user is typing or adjusting. */
  function typingTarget(target) {
    if (!target || !target.closest) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable='true']"));
  }


  return {
    el, svg, clear, $, visibleChar, charName, pct, num, thousands, debounce, clamp, len,
    showError, clearError, api, ApiError, models, info, chosenModel, urlState, onUrlChange, urlChanged,
    typingTarget, report, fieldMessage, clearFieldErrors,
  };
})();
