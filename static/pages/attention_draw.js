/* The attention page's drawings: a rule grid (who MAY look at whom: ● allowed, · blocked) and a
   heatmap of real weights (who DOES), both over what a model reads, rows = the one looking (query),
   columns = the one looked at (key). Each family's mask pieces (static/families/<name>.js, `mask`)
   say what it reads and what its mask allows; this module only draws.
   masked(name, chars, opts)  that family's layout over the characters, specials as labels
   grid(container, title, tokens, allowed, focus, titles)       a rule grid; returns the allowed count
   heatmap(container, title, tokens, w, allowed, focus, values)  weights, blocked cells hatched */
import { el, clear } from "../lib/dom.js";
import { visibleChar, charName, pct, num } from "../lib/text.js";
import { PIECES } from "../families/index.js";

const SHORT = { "[CLS]": "[C]", "[SEP]": "[S]", "[PAD]": "[P]", "[MASK]": "?" };
const SPECIAL = { CLS: "[CLS]", SEP: "[SEP]", PAD: "[PAD]", MASK: "[MASK]", sentinel: (k) => "⟨" + k + "⟩" };

/* The families with a mask to draw, in the families' order (gpt, bert, t5, plm). */
export const MASKED = Object.entries(PIECES).filter(([, p]) => p.mask).map(([name]) => name);

export function masked(name, chars, { pad, seed }) {
  return PIECES[name].mask.layout(chars, { pad, seed, special: SPECIAL });
}

export function label(token) {
  return SHORT[token] || (/^⟨\d+⟩$/.test(token) ? token : visibleChar(token));
}

export function longName(token) {
  if (token === "[MASK]") return "a [MASK] query";
  if (/^⟨\d+⟩$/.test(token)) return "the sentinel " + token + " (a hidden span's placeholder)";
  return SHORT[token] ? token : charName(token);
}

/* Four grids side by side: a grid's cells shrink to fit its column (--cell, read by static/lesson.css
   and, on a projector where nothing scrolls, static/projector.css), measured whenever the column
   changes size (a slide shown, a resize); below the smallest readable cell the column scrolls. */
const fitted = new WeakMap(); // container -> its table's column count
const sizer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver((entries) => {
  for (const { target } of entries) cells(target);
});

function cells(container) {
  const cols = fitted.get(container);
  if (!cols || !container.clientWidth) return;
  container.style.setProperty("--cell", Math.max(6, Math.floor(container.clientWidth / cols)) + "px");
  container.style.setProperty("--rows", String(cols)); // a grid is square: header row + one per token
}

function fit(container, cols) {
  if (!fitted.has(container) && sizer) sizer.observe(container);
  fitted.set(container, cols);
  cells(container);
}

/* titles(i): a row header's longer name (PLM's queries say which place they guess) */
function rowHead(q, i, titles) {
  return el("th", { scope: "row", title: (titles && titles(i)) || longName(q) + " at " + i, text: label(q) });
}

export function grid(container, title, tokens, allowed, focus, titles) {
  const n = tokens.length;
  let count = 0;
  const body = tokens.map((q, i) => {
    const row = tokens.map((k, j) => {
      const ok = allowed(i, j);
      if (ok) count++;
      return el("td", { class: ok ? "allowed" : "blocked", title: longName(q) + " → " + longName(k) + (ok ? ": allowed" : ": blocked") }, [
        el("span", { "aria-hidden": "true", text: ok ? "●" : "·" }),
        el("span", { class: "sr-only", text: ok ? "sees" : "blocked" }),
      ]);
    });
    return el("tr", { class: i === focus ? "focus-row" : null }, [rowHead(q, i, titles)].concat(row));
  });
  const table = el("table", { class: "mask-grid" }, [
    el("caption", {}, [].concat(title, el("br"), el("span", { class: "axis-note", text: count + " of " + n * n + " cells allowed · rows look at columns" }))),
    el("thead", {}, el("tr", {}, [el("th", { scope: "col" }, el("span", { class: "axis-note", text: "q\\k" }))]
      .concat(tokens.map((k, j) => el("th", { scope: "col", title: longName(k) + " at " + j, text: label(k) }))))),
    el("tbody", {}, body),
  ]);
  clear(container).appendChild(table);
  fit(container, n + 1);
  return count;
}

function colour(w) {
  // white -> navy (#0b2e5c); sqrt so small weights still show
  const t = Math.sqrt(Math.max(0, Math.min(1, w)));
  const c = (a, b) => Math.round(a + (b - a) * t);
  return "rgb(" + c(255, 11) + "," + c(255, 46) + "," + c(255, 92) + ")";
}

export function heatmap(container, title, tokens, w, allowed, focus, values, titles) {
  const rows = tokens.map((q, i) => el("tr", { class: i === focus ? "focus-row" : null }, [rowHead(q, i, titles)]
    .concat(tokens.map((k, j) => {
      if (!allowed(i, j)) {
        return el("td", { class: "blocked", title: longName(q) + " → " + longName(k) + ": blocked (weight " + num(w[i][j], 4) + ")" },
          el("span", { class: "sr-only", text: "blocked" }));
      }
      const td = el("td", { title: longName(q) + " → " + longName(k) + ": " + pct(w[i][j], 1) },
        el("span", { class: "v", text: Math.round(w[i][j] * 100) }));
      td.style.background = colour(w[i][j]);
      if (w[i][j] > 0.45) td.style.color = "#fff";
      return td;
    }))));
  const words = [].concat(title).map((t) => (typeof t === "string" ? t : t.textContent)).join("");
  const table = el("table", { class: "heat" + (values ? " show-values" : ""), "aria-label": words }, [
    el("caption", {}, [].concat(title)),
    el("thead", {}, el("tr", {}, [el("th", { scope: "col", text: "q\\k" })].concat(
      tokens.map((k, j) => el("th", { scope: "col", title: longName(k) + " at " + j, text: label(k) }))))),
    el("tbody", {}, rows),
  ]);
  clear(container).appendChild(table);
  fit(container, tokens.length + 1);
}

/* A PLM query row's name: which position (and character) it guesses. */
export function queryTitles(layout, chars) {
  if (!layout.targets) return null;
  const n = chars.length;
  return (i) => (i >= n ? "query " + (i - n + 1) + ": guesses position " + layout.targets[i - n] + " (" +
    charName(chars[layout.targets[i - n]]) + ")" : null);
}
