/* The NSP Quiz's pair on screen: the [CLS] A [SEP] B [SEP] layout BERT reads, the plays the two
   segments come from, and BERT's answer as two bars. Shown as text, never as markup.
   setTitles(titles)  the quiz bank's play titles;  playName(raw);  renderSequence(box, a, b, sources)
   probChart(container, p, caption) */
import { el, clear } from "../lib/dom.js";
import { bars } from "../lib/charts.js";
import { withTerms } from "../lib/glossary.js";

let titles = {};

export function setTitles(t) {
  titles = t || {};
}

/* "Twelfth Night" from "twelfth_night" (or the bank's own title). */
export function playName(raw) {
  if (!raw) return "an unknown play";
  if (titles[raw]) return titles[raw];
  const small = new Set(["a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to"]);
  const roman = new Set(["ii", "iii", "iv", "v", "vi", "vii", "viii", "ix"]);
  return raw.split(/[_\s]+/).filter(Boolean).map((w, k) => {
    const lw = w.toLowerCase();
    if (roman.has(lw)) return lw.toUpperCase();
    if (k > 0 && small.has(lw)) return lw;
    return lw.charAt(0).toUpperCase() + lw.slice(1);
  }).join(" ");
}

function segment(cls, label, text) {
  return el("div", { class: "segment " + cls }, [
    el("span", { class: "seg-label" }, withTerms(label)),
    el("span", { class: "seg-text", text }),
  ]);
}

/* [CLS] A [SEP] B [SEP] with each segment's token type and (a bank item) the plays they come from. */
export function renderSequence(box, a, b, sources) {
  clear(box);
  const from = (k) => (sources ? " · from " + playName(sources[k]) : "");
  box.appendChild(el("span", { class: "special", text: "[CLS]" }));
  box.appendChild(segment("seg-a", "Segment A · token type 0" + from(0), a));
  box.appendChild(el("span", { class: "special", text: "[SEP]" }));
  box.appendChild(segment("seg-b", "Segment B · token type 1" + from(1), b));
  box.appendChild(el("span", { class: "special", text: "[SEP]" }));
}

/* BERT's P(IsNext) and P(NotNext) as two bars. */
export function probChart(container, p, caption) {
  bars(container, [
    { char: "IsNext", label: "IsNext", prob: p, marks: [] },
    { char: "NotNext", label: "NotNext", prob: 1 - p, marks: [] },
  ], { wide: true, label: caption, caption });
}
