/* Pretraining Playground: shared helpers for every applet (no build step, no dependencies).
   PP.api        fetch JSON from the server; errors carry the body's "detail" and are shown.
   PP.urlState   settings <-> URL query (history.replaceState), so a link reproduces a demo.
   PP.bars       probability bars drawn with plain DOM plus a <table> with the same numbers.
   Page chrome:  projector mode (projector=1), hide=<control names>, the aria-live error box. */
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

  /* ---------- API ---------- */
  class ApiError extends Error {
    constructor(message, status, parameter) {
      super(message);
      this.status = status;
      this.parameter = parameter || null;
    }
  }

  async function api(path, options) {
    const opts = options || {};
    const init = { method: opts.method || (opts.body !== undefined ? "POST" : "GET"), headers: {} };
    if (opts.body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(opts.body);
    }
    if (opts.signal) init.signal = opts.signal;
    let url = path;
    if (opts.params) url += "?" + new URLSearchParams(opts.params).toString();
    let response;
    for (let attempt = 0; ; attempt++) {
      try {
        response = await fetch(url, init);
      } catch (err) {
        if (err.name === "AbortError") throw err;
        const e = new ApiError("the server could not be reached (" + err.message + ")", 0);
        if (!opts.quiet) showError(e.message);
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
      const e = new ApiError(detail + " (HTTP " + response.status + ")", response.status, data && data.parameter);
      if (!opts.quiet) showError(e.message);
      throw e;
    }
    return data;
  }

  let modelsPromise = null;
  function models() {
    if (!modelsPromise) modelsPromise = api("/api/models");
    return modelsPromise;
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

  function clamp(x, lo, hi) {
    return Math.min(hi, Math.max(lo, x));
  }

  /* ---------- charts ---------- */
  /* rows: [{char, prob, marks: ["original"|"sampled"|"cut"], note}] drawn on an absolute 0..1
     scale, so charts of different distributions compare honestly. Marks are text, not colour. */
  const MARK_TEXT = { original: "★ original", sampled: "◀ sampled", cut: "cut" };

  function bars(container, rows, opts) {
    const o = opts || {};
    clear(container);
    const list = el("ul", { class: "bars" + (o.wide ? " wide" : ""), "aria-label": o.label || "probabilities" });
    for (const row of rows) {
      const marks = row.marks || [];
      const fill = el("span", { class: "bar-fill" });
      fill.style.width = clamp(row.prob * 100, 0, 100).toFixed(2) + "%";
      const item = el("li", {
        class: "bar-row " + marks.map((m) => "is-" + m).join(" "),
        dataset: { char: row.char, prob: String(row.prob) },
      }, [
        el("span", { class: "bar-label", title: row.label ? null : charName(row.char), text: row.label || visibleChar(row.char) }),
        el("span", { class: "bar-track", "aria-hidden": "true" }, fill),
        el("span", { class: "bar-value", text: pct(row.prob) }),
        marks.length || row.note
          ? el("span", { class: "bar-mark", text: [row.note || ""].concat(marks.map((m) => MARK_TEXT[m] || m)).join(" ").trim() })
          : null,
      ]);
      list.appendChild(item);
    }
    container.appendChild(list);
    if (o.table !== false) {
      container.appendChild(table(o.caption || o.label || "Probabilities",
        [o.wide ? "Answer" : "Character", "Probability", "Note"],
        rows.map((r) => [r.label || charName(r.char), pct(r.prob, 2), (r.marks || []).map((m) => MARK_TEXT[m] || m).join(", ")])));
    }
    return list;
  }

  /* A <details> with a real table: the numbers of every chart, readable by a screen reader. */
  function table(caption, head, rows, open) {
    const t = el("table", { class: "num-table" }, [
      el("caption", { text: caption }),
      el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((cell, i) =>
        i === 0 ? el("th", { scope: "row", text: cell }) : el("td", { text: cell }))))),
    ]);
    return el("details", { class: "numbers", open: open ? true : null }, [
      el("summary", { text: "Table: " + caption }), el("div", { class: "table-wrap" }, t),
    ]);
  }

  /* ---------- page chrome: projector mode, hide=, instructor tips ---------- */
  function isProjector() {
    return new URLSearchParams(location.search).get("projector") === "1";
  }

  function applyProjector(on) {
    document.documentElement.classList.toggle("projector", on);
    const button = $("#projector-toggle");
    if (button) button.setAttribute("aria-pressed", on ? "true" : "false");
    for (const link of document.querySelectorAll(".site-header a[href^='/']")) {
      const url = new URL(link.getAttribute("href"), location.origin);
      if (on) url.searchParams.set("projector", "1");
      else url.searchParams.delete("projector");
      link.setAttribute("href", url.pathname + url.search);
    }
  }

  function toggleProjector() {
    const p = new URLSearchParams(location.search);
    const on = p.get("projector") !== "1";
    if (on) p.set("projector", "1");
    else p.delete("projector");
    const query = p.toString();
    history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
    applyProjector(on);
  }

  function hiddenControls() {
    const raw = new URLSearchParams(location.search).get("hide") || "";
    return raw.split(",").map((s) => s.trim()).filter(Boolean);
  }

  function applyHide() {
    const hide = new Set(hiddenControls());
    const names = [];
    for (const node of document.querySelectorAll("[data-control]")) {
      names.push(node.dataset.control);
      if (hide.has(node.dataset.control)) node.hidden = true;
    }
    const list = $("#control-names");
    if (list && names.length) list.textContent = names.join(", ");
  }

  /* True when a keyboard shortcut should be ignored because the user is typing or adjusting. */
  function typingTarget(target) {
    if (!target || !target.closest) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable='true']"));
  }

  function init() {
    applyProjector(isProjector());
    applyHide();
    const button = $("#projector-toggle");
    if (button) button.addEventListener("click", toggleProjector);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();

  return {
    el, svg, clear, $, visibleChar, charName, pct, num, thousands, debounce, clamp,
    showError, clearError, api, ApiError, models, urlState, bars, table, typingTarget,
  };
})();
