/* The Generation Walkthrough's text so far: the prompt, then what GPT generated (a line break shown
   as ⏎), the last sampled character marked. Shown as text nodes, never as markup.
   drawText(box, prompt, out, highlightLast) -> the generated characters (code points)
   tail(text, n)   the last n characters, visible ("…" in front when cut)
   appendVisible(node, text)  text with each line break drawn as ⏎ (the stream writes with it too) */
import { el, clear } from "../lib/dom.js";
import { visibleChar, chars as textChars } from "../lib/text.js";

export function tail(text, n) {
  const chars = textChars(text);
  return (chars.length > n ? "…" : "") + chars.slice(-n).map(visibleChar).join("");
}

export function appendVisible(node, text) {
  for (const part of text.split(/(\n)/)) {
    if (part === "\n") {
      node.appendChild(el("span", { class: "vis", "aria-hidden": "true", text: "⏎" }));
      node.appendChild(document.createTextNode("\n"));
    } else if (part) {
      node.appendChild(document.createTextNode(part));
    }
  }
}

export function drawText(box, prompt, out, highlightLast) {
  clear(box);
  appendVisible(box, prompt);
  const chars = textChars(out);
  const body = highlightLast ? chars.slice(0, -1).join("") : out;
  const fresh = el("span", { class: "gen-new" });
  appendVisible(fresh, body);
  if (highlightLast && chars.length) {
    const last = chars[chars.length - 1];
    fresh.appendChild(el("span", { class: "gen-last", title: "just sampled", text: visibleChar(last) }));
    if (last === "\n") fresh.appendChild(document.createTextNode("\n"));
  }
  box.appendChild(fresh);
  box.scrollTop = box.scrollHeight;
  return chars;
}
