/* T5's page pieces (its spec: app/contract/families.py; its model: training/t5.py). T5 reads a line
   with a few short spans hidden, each behind a sentinel (⟨0⟩, ⟨1⟩, …), and writes the spans back,
   each after its sentinel. The Train page shows that on its probe line, and the held-out rows.
   `device`: POST /api/spans on this device (lib/engine.js runs it), as app/routers/spans.py and
   app/tasks/t5.py compute it on the server. */
import { FIRST_CHAR, SEP, EngineError, softmaxRow } from "../lib/engine_core.js";
import { el, clear } from "../lib/dom.js";
import { num, pct } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { splits, splitName } from "../lib/evaluation.js";

const NAME = "t5";
const MAX_SENTINELS = 32; // app/contract/families.py T5_SENTINELS
const MAX_TEXT = 1000; // app/routers/spans.py

function checkSpans(body) {
  const text = body.text;
  if (typeof text !== "string" || Array.from(text).length < 1) throw new EngineError("text: String should have at least 1 character", "text");
  if (Array.from(text).length > MAX_TEXT) throw new EngineError("text: String should have at most " + MAX_TEXT + " characters", "text");
  const spans = body.spans;
  if (!Array.isArray(spans) || spans.length < 1 || spans.length > MAX_SENTINELS ||
      !spans.every((s) => Array.isArray(s) && s.length === 2 && s.every(Number.isInteger))) {
    throw new EngineError("spans: must be a list of 1 to " + MAX_SENTINELS + " [start, end] pairs of whole numbers", "spans");
  }
  const n = Array.from(text).length;
  let last = -1;
  spans.forEach(([start, end], k) => {
    if (!(start >= 0 && start < end && end <= n)) {
      throw new EngineError("span " + k + " [" + start + ", " + end + ") must be inside the text (0 to " + n + ") and hold a character", "spans");
    }
    if (start <= last) throw new EngineError("span " + k + " must start after span " + (k - 1) + " ends, with a kept character between", "spans");
    last = end;
  });
  return { text, spans };
}

/* app/tasks/t5.py T5.write: greedy, each step one full run over the prefix and what was written. */
async function spans(dev, body) {
  const engine = await dev.engine();
  const req = checkSpans(body);
  const config = engine.config(NAME);
  const size = engine.vocab.size;
  const [ids, unknown] = engine.vocab.encode(req.text);
  const hidden = req.spans.reduce((sum, [s, e]) => sum + e - s, 0);
  const need = ids.length + 2 * req.spans.length + 2;
  if (need > config.context) {
    throw new EngineError("the text with its sentinels and spans is " + need + " tokens; the model reads at most " + config.context, "text");
  }
  const prefix = [];
  let at = 0;
  req.spans.forEach(([s, e], k) => { prefix.push(...ids.slice(at, s), size + k); at = e; });
  prefix.push(...ids.slice(at), SEP);
  const seq = prefix.slice();
  const written = req.spans.map(() => []);
  const limit = hidden + req.spans.length + 8;
  let k = -1;
  while (seq.length < config.context && written.reduce((n, w) => n + w.length, 0) + req.spans.length < limit) {
    const mask = seq.map((_, i) => (i < prefix.length ? 1 : 0));
    const out = await engine.run(NAME, { input_ids: engine.int64(seq, [1, seq.length]), prefix_mask: engine.int64(mask, [1, seq.length]) });
    const width = out.logits.dims[2];
    const p = softmaxRow(out.logits.data, (seq.length - 1) * width, seq.length * width);
    let token = 0;
    for (let i = 1; i < p.length; i++) if (p[i] > p[token]) token = i;
    seq.push(token);
    if (token === SEP) break;
    if (token >= size) k = token - size;
    else if (k >= 0 && k < req.spans.length && token >= FIRST_CHAR) written[k].push({ char: engine.vocab.token(token), prob: p[token] });
  }
  const corrupted = prefix.slice(0, -1).map((t) => (t >= size ? "⟨" + (t - size) + "⟩" : engine.vocab.token(t))).join("");
  return { family: NAME, corrupted, spans: req.spans.map(([s, e], j) => ({ span: j, start: s, end: e,
    truth: ids.slice(s, e).map((t) => engine.vocab.token(t)).join(""), written: written[j] })), unknown_chars: unknown };
}

export default {
  name: NAME,
  chart: { caption: "T5 loss (the hidden spans written back)", yLabel: "loss (nats per token written)" },
  view: { title: "T5 writes back the hidden spans" },
  page: { href: "/spans", text: "Fill the missing spans" },

  /* The line as T5 reads it (each hidden span a ⟨k⟩), then each span: what it wrote, green where a
     character is right, pink where it is wrong. compact (a snapshot card): the spans only. */
  show(node, d, compact = false) {
    clear(node);
    if (!d) { node.append(el("pre", { class: "sample", text: "(no T5 in this run)" })); return; }
    if (!compact) node.append(el("pre", { class: "sample", text: d.corrupted }));
    const list = el("pre", { class: "sample" });
    for (const s of d.spans) {
      list.append("⟨" + s.span + "⟩ ");
      [...s.truth].forEach((ch, i) => {
        const got = [...s.written][i];
        list.append(el("mark", { class: got === ch ? "fill-ok" : "fill-bad", text: got === undefined ? "·" : got,
          title: "hidden: " + ch + (got === undefined ? "; nothing written" : "; written: " + got) }));
      });
      list.append("   ");
    }
    list.append(el("span", { class: "note", text: `right about ${d.correct} of ${d.hidden} hidden characters` }));
    node.append(list);
  },

  legend() {
    return el("p", { class: "note fill-legend" }, [el("mark", { class: "fill-ok", text: "green" }),
      " = a hidden character T5 wrote back right · ", el("mark", { class: "fill-bad", text: "pink" }),
      " = wrong (what it wrote is shown; · = nothing) · ⟨0⟩, ⟨1⟩ = where a span was hidden (a sentinel)"]);
  },

  /* The home page's model card: hidden characters written back right, against two baselines, each row
     saying how it was measured: written freely (what the /spans page shows, training/t5_free.py) and
     teacher-forced (as in training: after the true characters of the span so far, which no page shows). */
  cardTables(card) {
    const names = splits(card);
    const ev = (s) => card.evaluation[s] || {};
    const free = (e) => e.free_running || {};
    const rows = [
      ["Trained T5, writing on its own as the Spans page does: characters right", (e) => (free(e).span_chars ? pct(free(e).span_char_top1) : "–")],
      ["… and spans written back exactly", (e) => (free(e).spans ? pct(free(e).spans_exact) : "–")],
      ["Trained T5, shown the true characters of each span as it goes (as in training)", (e) => pct(e.span_char_top1 || 0)],
      ["Same architecture, random init (shown the true characters)", (e) => pct((e.random_init || {}).span_char_top1 || 0)],
      ["Always the most common character", (e) => pct((e.unigram_baseline || {}).span_char_top1 || 0)],
    ].map(([label, pick]) => [label].concat(names.map((s) => pick(ev(s)))));
    const lines = names.map((s) => free(ev(s)).windows).find(Number.isFinite);
    return [table("T5: hidden characters written back right on held-out plays, 15 % hidden in spans of 3 (" +
      names.map((s) => splitName(card, s)).join("; ") + (lines ? "; writing on its own: the first " + lines +
      " lines of each" : "") + ")", ["Model"].concat(names), rows, true)];
  },

  device: { routes: { "/api/spans": spans } },

  /* The attention page (app/tasks/t5.py attention_input, the same rule): up to 3 characters from a
     third of the way in are hidden behind ⟨0⟩; the prefix (the line as T5 reads it, then [SEP]) looks
     both ways, and ⟨0⟩ and the span written after it look left only. */
  mask: {
    kind: "prefix",
    code: "allowed = left | (prefix[:, :, None] & prefix[:, None, :])",
    words: "Prefix: the line with its hidden span (⟨0⟩ marks where) is read both ways, like BERT; the span " +
      "written back after it is written left to right, like GPT. One mask, two halves.",
    shape: "a full square on the prefix, then a triangle",
    layout(items, { special }) {
      const n = items.length, start = Math.floor(n / 3), end = Math.min(n, start + 3);
      const prefix = [...items.slice(0, start), special.sentinel(0), ...items.slice(end), special.SEP];
      const seq = [...prefix, special.sentinel(0), ...items.slice(start, end)];
      const P = prefix.length;
      return { seq, allowed: (i, j) => j <= i || (i < P && j < P), extra: { prefix_mask: seq.map((_, i) => (i < P ? 1 : 0)) },
        row: (i) => (i < start ? i : i >= end ? i - (end - start) + 1 : P + 1 + i - start), hidden: [start, end] };
    },
  },

  results(e) {
    const free = e.free_running ? [["T5", "hidden characters written back right, writing on its own (as the Spans page)",
      `${num(100 * e.free_running.span_char_top1, 1)} %`]] : [];
    return [...free, ["T5", "hidden characters written back right, shown the true characters so far (teacher forcing)",
      `${num(100 * e.span_char_top1, 1)} %`],
      ["T5", "always writing the most common character", `${num(100 * e.unigram_baseline.span_char_top1, 1)} %`]];
  },
};
