/* DOM helpers for every page (no framework, no markup from strings).
   el(tag, attrs, children)  an element; attrs: text, class, dataset, on<event> functions, others as attributes
   svg(tag, attrs, children) the same in the SVG namespace
   clear(node)               remove every child; returns node
   $(selector, root)         querySelector
   debounce(fn, ms)          call fn once input has paused for ms
   typingTarget(target)      true while the user types in a field (single-key shortcuts stay off)
   rovingKeys(strip, moved)  a strip of character buttons as one Tab stop, moved by the arrow keys */

const SVG_NS = "http://www.w3.org/2000/svg";

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

export function el(tag, attrs, children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

export function svg(tag, attrs, children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export const $ = (selector, root) => (root || document).querySelector(selector);

export function debounce(fn, ms) {
  let timer = null;
  return function (...args) {
    clearTimeout(timer);
    timer = setTimeout(() => fn.apply(this, args), ms);
  };
}

export function typingTarget(target) {
  if (!target || !target.closest) return false;
  return Boolean(target.closest("input, textarea, select, [contenteditable='true']"));
}

/* A strip of character buttons (button.ch, data-index) as one Tab stop: ←/→ (and ↑/↓) move one, Home and
   End to the ends; the focused button takes tabIndex 0. moved(i): the strip's owner keeps the index. */
export function rovingKeys(strip, moved) {
  strip.addEventListener("keydown", (event) => {
    const button = event.target.closest("button.ch");
    if (!button) return;
    const n = strip.querySelectorAll("button.ch").length;
    const i = Number(button.dataset.index);
    const target = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: n - 1 }[event.key];
    if (target === undefined) return;
    event.preventDefault();
    const next = strip.querySelector("[data-index='" + Math.min(Math.max(target, 0), n - 1) + "']");
    if (!next) return;
    button.tabIndex = -1;
    next.tabIndex = 0;
    moved(Number(next.dataset.index));
    next.focus();
  });
}
