/* GPT vs BERT on the same blank: POST /api/compare for one sentence and one position. The strip (both
   models' probability of each true character) is fetched when the text changes; moving the position
   only asks for that position's guesses. The longest sentence is the server's (limits.max_compare_chars
   from GET /api/models). URL: text, pos. Keys: ← → move the blank. The device computes it when the
   server is busy or away, and in the static copy (lib/compute.js, lib/engine_lessons.js). */
import { el, clear, $, debounce, typingTarget } from "../lib/dom.js";
import { visibleChar, charName, pct, num, clamp, len, cut, chars as textChars } from "../lib/text.js";
import { clearError } from "../lib/errors.js";
import { info, latest } from "../lib/api.js";
import { ask, badge, warmUp } from "../lib/compute.js";
import { onDevice, READERS } from "../lib/engine_lessons.js";
import { urlState } from "../lib/state.js";
import { bars, table } from "../lib/charts.js";

let maxChars = Infinity; // until /api/models answers (the server checks anyway)
const state = urlState({ text: "the king and the crown", pos: 4 });
const v = state.values;
let strip = null; // [{position, char, gpt, bert}] for the current text
const asks = latest(); // the latest answer wins

const textBox = $("#c-text");
const slider = $("#c-pos");

function sanitize() {
  v.text = cut(v.text, maxChars);
  const n = len(v.text);
  v.pos = clamp(Math.round(v.pos) || 0, 0, Math.max(0, n - 1));
}

function syncControls() {
  const chars = textChars(v.text);
  textBox.value = v.text;
  slider.max = String(Math.max(0, chars.length - 1));
  slider.value = String(v.pos);
  slider.disabled = chars.length === 0;
  $("#c-pos-out").textContent = chars.length ? v.pos + " (" + charName(chars[v.pos]) + ")" : "–";
}

function drawStrip() {
  const box = clear($("#c-strip"));
  const chars = textChars(v.text);
  chars.forEach((c, i) => {
    const s = strip && strip[i];
    const bar = (p, cls) => {
      const fill = el("span", { class: "c-mini " + cls, "aria-hidden": "true" });
      fill.style.height = (p === null || p === undefined ? 0 : clamp(p * 100, 0, 100)).toFixed(1) + "%";
      return el("span", { class: "c-mini-track" }, fill);
    };
    const label = charName(c) + " at " + i + (s ? ": GPT " + (s.gpt === null ? "nothing to read" : pct(s.gpt)) +
      ", BERT " + pct(s.bert) : "");
    box.appendChild(el("button", {
      type: "button", class: "ch c-ch" + (c === " " ? " is-space" : ""), "aria-pressed": i === v.pos ? "true" : "false",
      "aria-label": label, title: label, dataset: { index: String(i) },
      onclick: () => move(i),
    }, [el("span", { class: "ch-glyph", text: visibleChar(c) }),
      el("span", { class: "c-bars" }, [bar(s && s.gpt, "gpt"), bar(s && s.bert, "bert")])]));
  });
  const t = $("#c-strip-table");
  clear(t);
  if (strip) {
    t.appendChild(table("Probability of the true character at every position", ["Position", "Character", "GPT (left only)", "BERT (both sides)"],
      strip.map((s) => [String(s.position), charName(s.char), s.gpt === null ? "–" : pct(s.gpt, 2), pct(s.bert, 2)])));
  }
}

function card(node, g, trueChar) {
  $(".c-reads", node).textContent = "Reads " + g.reads + ".";
  const stats = clear($(".c-stats", node));
  const chart = clear($(".chart", node));
  if (!g.available) {
    stats.appendChild(el("dt", { text: "No guess" }));
    stats.appendChild(el("dd", { text: "GPT predicts each character from the ones before it; the first has none." }));
    return;
  }
  const item = (k, val, cls) => [el("dt", { text: k }), el("dd", { class: cls, text: val })];
  for (const node2 of [].concat(
    item("P(" + visibleChar(trueChar) + ")", g.p_true === null ? "–" : pct(g.p_true, 2), "c-p"),
    item("rank", g.rank === null ? "–" : String(g.rank), "c-rank"),
    item("entropy", num(g.entropy, 2) + " nats", "c-entropy"))) stats.appendChild(node2);
  bars(chart, g.top.map((t) => ({ char: t.char, prob: t.prob, marks: t.char === trueChar ? ["original"] : [] })),
    { label: "top guesses", caption: "Top guesses" });
}

function verdict(r) {
  const c = charName(r.char);
  if (!r.gpt.available) return "At position 0 only BERT can guess: it gives " + c + " " + pct(r.bert.p_true) + ".";
  if (r.bert.p_true === null) return "This character is outside the vocabulary ([UNK]); neither model can name it.";
  const g = r.gpt.p_true, b = r.bert.p_true;
  const ratio = b / Math.max(g, 1e-9);
  if (ratio >= 3) return "BERT is surer here: it gives " + c + " " + pct(b) + ", GPT only " + pct(g) + ". BERT also reads " +
    "the characters to the right, which GPT never sees; that may be what helps.";
  if (ratio <= 1 / 3) return "Here GPT is surer (" + pct(g) + " vs " + pct(b) + "), although BERT reads the same left side " +
    "and more. Seeing more is not everything: GPT and BERT were trained differently and are not equally strong. GPT " +
    "learned to continue long stretches of text; BERT learned to fill blanks in pairs of passages (A and B), and here it " +
    "reads just one passage.";
  return "GPT and BERT are about equally sure here: GPT " + pct(g) + ", BERT " + pct(b) + ".";
}

async function update(withStrip) {
  const chars = textChars(v.text);
  if (!chars.length) {
    $("#c-verdict").textContent = "Type a sentence.";
    return;
  }
  const current = asks.begin();
  const body = { text: v.text, position: v.pos, top_k: 5, strip: withStrip || !strip };
  try {
    const r = await ask("/api/compare", body, onDevice.compare); // the server, or this device
    if (!current()) return;
    clearError();
    if (r.strip) strip = r.strip;
    drawStrip();
    card($("#c-gpt"), r.gpt, r.char);
    card($("#c-bert"), r.bert, r.char);
    $("#c-verdict").textContent = verdict(r);
  } catch (err) { /* shown in the error box */ }
}

function move(i) {
  state.set({ pos: i });
  sanitize();
  state.write();
  syncControls();
  drawStrip();
  update(false);
  const b = document.querySelector('#c-strip [data-index="' + v.pos + '"]');
  if (b && document.activeElement && document.activeElement.closest && document.activeElement.closest("#c-strip")) b.focus();
}

const typed = debounce(() => { strip = null; update(true); }, 250);
textBox.addEventListener("input", () => {
  state.set({ text: textBox.value });
  sanitize();
  state.write();
  syncControls();
  strip = null;
  drawStrip();
  typed();
});
slider.addEventListener("input", () => move(Number(slider.value)));
$("#c-example").addEventListener("change", (e) => {
  if (!e.target.value) return;
  state.set({ text: e.target.value, pos: 0 });
  sanitize();
  syncControls();
  strip = null;
  update(true);
});
document.addEventListener("keydown", (e) => {
  if (typingTarget(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
    e.preventDefault();
    move(clamp(v.pos + (e.key === "ArrowRight" ? 1 : -1), 0, Math.max(0, len(v.text) - 1)));
  }
});

info().then((set) => {
  if (Number.isFinite(set.limits.max_compare_chars)) maxChars = set.limits.max_compare_chars;
  textBox.maxLength = maxChars;
  $("#c-max").textContent = String(maxChars);
}).catch(() => {}).finally(() => {
  sanitize();
  state.write();
  syncControls();
  drawStrip();
  update(true);
});
badge($("#c-verdict")); // where the answers are computed: this server or this device
warmUp(READERS); // a static copy loads them now; a server only with --models-on-phones
