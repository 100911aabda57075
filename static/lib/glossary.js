/* The glossary: a technical word on a student page is a button (class "term", data-term=key); pressing
   it (tap, click, Enter, Space) shows its one-line definition right after the word, pressing again or
   Escape hides it. Definitions come from the hidden list base.html renders from app/glossary.json, so
   no request is needed. Page modules make their own terms with term(key, text), or withTerms(text): the
   text with every glossary word in it (the `words` patterns of app/glossary.json) made a term. */

const definitions = new Map();

function load() {
  if (definitions.size) return definitions;
  for (const dt of document.querySelectorAll("#glossary dt[data-term]")) {
    const dd = dt.nextElementSibling;
    let words = [];
    try { words = JSON.parse(dt.dataset.words || "[]").map((w) => new RegExp(w, "i")); } catch (err) { words = []; }
    definitions.set(dt.dataset.term, { label: dt.textContent, definition: dd ? dd.textContent : "", words });
  }
  return definitions;
}

/* The first glossary word in `text`: {index, length, key}, or null. */
function firstWord(text) {
  let best = null;
  for (const [key, entry] of load()) {
    for (const re of entry.words) {
      const m = re.exec(text);
      if (m && m[0].length && (!best || m.index < best.index || (m.index === best.index && m[0].length > best.length))) {
        best = { index: m.index, length: m[0].length, key };
      }
    }
  }
  return best;
}

/* `text` as a list of strings and term buttons (for el()'s children): each glossary word becomes a term. */
export function withTerms(text) {
  const out = [];
  let rest = String(text);
  while (rest) {
    const hit = firstWord(rest);
    if (!hit) { out.push(rest); break; }
    if (hit.index) out.push(rest.slice(0, hit.index));
    out.push(term(hit.key, rest.substr(hit.index, hit.length)));
    rest = rest.slice(hit.index + hit.length);
  }
  return out;
}

/* A term button for `key` showing `text` (default: the glossary's own label). */
export function term(key, text) {
  const entry = load().get(key);
  if (!entry) throw new Error("no glossary entry for " + key); // every term shown has a definition
  const button = document.createElement("button");
  button.type = "button";
  button.className = "term";
  button.dataset.term = key;
  button.setAttribute("aria-expanded", "false");
  button.title = entry.definition;
  button.textContent = text || entry.label;
  return button;
}

/* The definition of a term, or null. */
export function definition(key) {
  const entry = load().get(key);
  return entry ? entry.definition : null;
}

function close(button) {
  const box = button.nextElementSibling;
  if (box && box.classList.contains("term-def")) box.remove();
  button.setAttribute("aria-expanded", "false");
}

function open(button) {
  const text = definition(button.dataset.term);
  if (!text) return;
  const box = document.createElement("span");
  box.className = "term-def";
  box.setAttribute("role", "note");
  box.id = "term-def-" + Math.random().toString(36).slice(2, 9);
  box.textContent = text;
  button.after(box);
  button.setAttribute("aria-expanded", "true");
  button.setAttribute("aria-describedby", box.id);
}

function toggle(button) {
  if (button.getAttribute("aria-expanded") === "true") close(button);
  else open(button);
}

// In a page only (node imports the families' files, and so this one, for the engine's parity check).
if (typeof document !== "undefined") {
  document.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("button.term");
    if (!button) return;
    e.preventDefault();
    e.stopPropagation(); // a term inside a label or summary must not toggle that too
    toggle(button);
  }, true);

  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    const open_ = document.querySelectorAll('button.term[aria-expanded="true"]');
    if (!open_.length) return;
    open_.forEach(close);
    e.stopPropagation();
  });
}
