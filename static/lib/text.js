/* Numbers and characters as the pages show them. Characters are counted as the server counts
   them (Python's len counts code points: an emoji is one), here and nowhere else.
   len(text)          number of characters (code points)
   chars(text)        the characters as an array
   cut(text, n)       the first n characters
   visibleChar(c)     a space, newline or tab drawn visibly (␣ ⏎ ⇥)
   charName(c)        "space", "newline", "“a”"
   pct(p, digits)     0.123 -> "12.3 %"
   num(x, digits)     fixed digits (3 by default)
   thousands(n)       12345 -> "12,345"
   clamp(x, lo, hi) */

const VISIBLE = { " ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍" };

export const chars = (text) => [...String(text)];
export const len = (text) => chars(text).length;
export const cut = (text, n) => chars(text).slice(0, n).join("");

export function visibleChar(c) {
  return Object.prototype.hasOwnProperty.call(VISIBLE, c) ? VISIBLE[c] : c;
}

export function charName(c) {
  if (c === " ") return "space";
  if (c === "\n") return "newline";
  if (c === "\t") return "tab";
  return "“" + c + "”";
}

export function pct(p, digits) {
  if (p === 0) return "0 %";
  const d = digits === undefined ? 1 : digits;
  if (p < Math.pow(10, -d) / 100) return "<" + Math.pow(10, -d).toFixed(d) + " %";
  return (p * 100).toFixed(d) + " %";
}

export function num(x, digits) {
  return Number(x).toFixed(digits === undefined ? 3 : digits);
}

export function thousands(n) {
  return Number(n).toLocaleString("en-US");
}

export function clamp(x, lo, hi) {
  return Math.min(hi, Math.max(lo, x));
}
