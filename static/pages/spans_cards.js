/* Fill the missing spans: the pieces pages/spans.js draws with (it asks, these draw), and the seeded
   "hide a random 15 %" draw. Everything the server sends is shown as text (textContent), never as markup.
   runsOf(positions)        the hidden positions (sorted) as spans [start, end): neighbours form one span
   randomSpans(n, seed, max) about 15 % of n characters hidden in spans of about 3 (T5's own draw: the
                            hidden and the kept characters each cut into runs at random, the runs alternating;
                            the same seed, the same spans), at most `max` spans
   drawAnswer(node, data)   the line as T5 reads it, what it writes after it, the score and one card per span */
import { el, clear } from "../lib/dom.js";
import { visibleChar, charName, pct, chars, clamp } from "../lib/text.js";
import { uniform } from "../lib/engine_core.js";

export const RATE = 0.15; // the share hidden by the random button (T5's own recipe)
export const MEAN_SPAN = 3;

export function runsOf(positions) {
  const spans = [];
  for (const p of positions) {
    const last = spans[spans.length - 1];
    if (last && p === last[1]) last[1] = p + 1;
    else spans.push([p, p + 1]);
  }
  return spans;
}

/* `total` cut into `parts` runs of at least one, at cut points drawn from the stream. */
function cuts(total, parts, draw) {
  const points = Array.from({ length: total - 1 }, (_, i) => i + 1);
  for (let i = 0; i < parts - 1; i++) { // a partial Fisher-Yates shuffle: the first parts-1 points
    const j = i + Math.floor(draw() * (points.length - i));
    [points[i], points[j]] = [points[j], points[i]];
  }
  const chosen = points.slice(0, parts - 1).sort((a, b) => a - b).concat([total]);
  return chosen.map((c, i) => c - (i ? chosen[i - 1] : 0));
}

export function randomSpans(n, seed, max) {
  const most = max === undefined ? 32 : max;
  if (n < 1 || most < 1) return [];
  const hidden = clamp(Math.round(RATE * n), 1, n);
  const kept = n - hidden;
  const count = clamp(Math.round(hidden / MEAN_SPAN), 1, Math.min(most, hidden, kept + 1));
  let i = 0;
  const draw = () => uniform(seed, i++);
  const lengths = cuts(hidden, count, draw);
  const gaps = cuts(kept + 2, count + 1, draw); // the first and last kept runs may be empty: one less each
  gaps[0] -= 1;
  gaps[gaps.length - 1] -= 1;
  const spans = [];
  let at = gaps[0];
  lengths.forEach((length, k) => {
    spans.push([at, at + length]);
    at += length + gaps[k + 1];
  });
  return spans;
}

/* A line with its sentinels ⟨k⟩ drawn as sentinels. */
function sentinelLine(text, id) {
  const line = el("p", { class: "sp-line", id });
  for (const part of String(text).split(/(⟨\d+⟩)/)) {
    if (!part) continue;
    line.appendChild(/^⟨\d+⟩$/.test(part) ? el("span", { class: "sentinel", text: part })
      : document.createTextNode(part)); // the line as it is: its spaces are spaces (white-space: pre-wrap)
  }
  return line;
}

/* One column per place of the span: the hidden character, what T5 wrote there (green when it is the
   hidden one, pink when not; · when it wrote nothing there) and its probability. */
function column(truth, got) {
  const right = got !== undefined && got.char === truth;
  const said = got === undefined ? "nothing" : charName(got.char);
  const label = (truth === undefined ? "an extra character" : "hidden " + charName(truth)) + ", T5 wrote " + said +
    (got === undefined ? "" : " with probability " + pct(got.prob)) + (right ? ": right" : ": wrong");
  const bar = el("span", { class: "sp-fill" });
  if (got) bar.style.width = clamp(got.prob * 100, 0, 100).toFixed(1) + "%";
  return el("li", { class: "sp-col", "aria-label": label, dataset: got ? { char: got.char, prob: String(got.prob) } : {} }, [
    el("span", { class: "sp-truth", "aria-hidden": "true", text: truth === undefined ? "extra" : visibleChar(truth) }),
    el("mark", { class: right ? "fill-ok" : "fill-bad", "aria-hidden": "true", text: got === undefined ? "·" : visibleChar(got.char) }),
    el("span", { class: "sp-track", "aria-hidden": "true" }, bar),
    el("span", { class: "sp-prob", "aria-hidden": "true", text: got === undefined ? "–" : pct(got.prob) }),
  ]);
}

export function rightIn(span) {
  const truth = chars(span.truth);
  return truth.filter((c, i) => span.written[i] && span.written[i].char === c).length;
}

function spanCard(span) {
  const truth = chars(span.truth);
  const wrote = span.written.map((w) => w.char).join("");
  const right = rightIn(span);
  const places = Math.max(truth.length, span.written.length);
  const card = el("article", { class: "card span-card", dataset: { span: String(span.span), truth: span.truth, written: wrote } }, [
    el("h3", {}, [el("span", { class: "sentinel", text: "⟨" + span.span + "⟩" }), " hid “" + truth.map(visibleChar).join("") + "”"]),
    el("p", { class: "sp-wrote" }, ["T5 wrote “", el("strong", { text: chars(wrote).map(visibleChar).join("") || "nothing" }), "”: ",
      el("span", { class: right === truth.length ? "ok" : "nok", text: right + " of " + truth.length + " right" })]),
    el("ol", { class: "sp-cols", "aria-label": "Span ⟨" + span.span + "⟩, place by place" },
      Array.from({ length: places }, (_, i) => column(truth[i], span.written[i]))),
  ]);
  return card;
}

/* What T5 writes after the line: each sentinel, then its span, each character green or pink. */
function writtenLine(spans) {
  const line = el("p", { class: "sp-line", id: "sp-written" });
  for (const s of spans) {
    line.appendChild(el("span", { class: "sentinel", text: "⟨" + s.span + "⟩" }));
    const truth = chars(s.truth);
    s.written.forEach((w, i) => line.appendChild(el("mark", { class: w.char === truth[i] ? "fill-ok" : "fill-bad",
      text: visibleChar(w.char) })));
  }
  return line;
}

export function drawAnswer(node, data) {
  clear(node);
  const hidden = data.spans.reduce((n, s) => n + chars(s.truth).length, 0);
  const right = data.spans.reduce((n, s) => n + rightIn(s), 0);
  node.append(
    el("h3", { text: "The line as T5 reads it" }),
    sentinelLine(data.corrupted, "sp-corrupted"),
    el("h3", { text: "What T5 writes after it, one character at a time" }),
    writtenLine(data.spans),
    el("p", { class: "sp-score", id: "sp-score" }, ["T5 wrote back ", el("strong", { text: String(right) }),
      " of ", el("strong", { text: String(hidden) }), " hidden characters right."]),
    el("p", { class: "note fill-legend" }, ["In each card: the hidden character on top, then what T5 wrote there (",
      el("mark", { class: "fill-ok", text: "green" }), " = right, ", el("mark", { class: "fill-bad", text: "pink" }),
      " = wrong, · = nothing; “extra” = written past the span's end), then how sure T5 was of what it wrote."]),
    el("div", { class: "mask-cards sp-cards" }, data.spans.map(spanCard)),
  );
  if (data.unknown_chars && data.unknown_chars.length) {
    node.appendChild(el("p", { class: "note", text: "Not in the model's vocabulary (read as [UNK]): " +
      data.unknown_chars.map((u) => charName(u.char) + " at " + u.position).join(", ") }));
  }
}
