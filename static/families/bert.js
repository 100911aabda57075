/* BERT's page pieces (its spec: app/contract/families.py): the Train page's live fill of the probe
   line (green right, pink wrong) and its held-out result rows. `device`: what BERT computes on this
   device (lib/engine.js runs it), as app/tasks/bert.py and app/routers/{mask_fill,nsp}.py compute it
   on the server: Mask-Fill, the NSP quiz (the static copy's), its side of GPT vs BERT and of the
   attention page; `forward` is ELECTRA's generator (static/families/electra.js). */
import { FIRST_CHAR, CLS, SEP, MASK, PAD, EngineError, maskedInput, ranked, softmaxRow, checkMaskFill } from "../lib/engine_core.js";
import { el, clear } from "../lib/dom.js";
import { num, pct, thousands, visibleChar } from "../lib/text.js";
import { table } from "../lib/charts.js";
import { splits, splitName } from "../lib/evaluation.js";

const NAME = "bert";

/* BERT's outputs (mlm_logits, nsp_logits) of one run over `batch` (sequences of one length, [CLS] and [SEP] included). */
export async function forward(engine, batch, types = null) {
  const width = batch[0].length;
  const flat = batch.flat();
  const out = await engine.run(NAME, { input_ids: engine.int64(flat, [batch.length, width]),
    token_type_ids: engine.int64(types || new Array(flat.length).fill(0), [batch.length, width]) });
  return out;
}

/* app/routers/mask_fill.py + app/tasks/bert.py BERT.fill */
async function maskFill(dev, body) {
  const engine = await dev.engine();
  const req = checkMaskFill(body, engine.vocab);
  const config = engine.config(NAME);
  const input = maskedInput(engine.vocab, req.text, req.positions, config.context);
  const mlm = (await forward(engine, [[CLS, ...input.ids, SEP]])).mlm_logits.data;
  const v = config.vocab_size;
  const masks = input.masks.map((pos, j) => {
    const row = (pos + 1) * v;
    const p = softmaxRow(mlm, row + FIRST_CHAR, row + v);
    const entry = { position: pos, predictions: ranked(engine.vocab, p, req.top_k), original: null };
    if (input.originals && input.originals[j] >= FIRST_CHAR) {
      const po = p[input.originals[j] - FIRST_CHAR];
      entry.original = { char: engine.vocab.token(input.originals[j]), prob: po, rank: p.filter((x) => x > po).length + 1 };
    }
    return entry;
  });
  return { tokens: input.ids.map((t) => engine.vocab.token(t)), unknown_chars: input.unknown, masks };
}

/* ---------- next-sentence prediction (app/routers/nsp.py; app/tasks/bert.py p_is_next) ---------- */
const label = (isNext) => (isNext ? "IsNext" : "NotNext");

async function pIsNext(engine, a, b) {
  const ids = [CLS, ...a, SEP, ...b, SEP];
  const out = await forward(engine, [ids], ids.map((_, i) => (i < a.length + 2 ? 0 : 1)));
  return softmaxRow(out.nsp_logits.data, 0, 2)[0];
}

function pairIds(engine, a, b) {
  for (const [name, text] of [["a", a], ["b", b]]) {
    if (typeof text !== "string" || Array.from(text).length < 1) throw new EngineError(name + ": String should have at least 1 character", name);
  }
  const context = engine.config(NAME).context;
  const room = context - 3;
  const [na, nb] = [Array.from(a).length, Array.from(b).length];
  if (na + nb > room) {
    throw new EngineError("a and b together are " + (na + nb) + " characters; BERT reads at most " + room +
      " (its context of " + context + " minus [CLS] and two [SEP])", na >= room ? "a" : "b");
  }
  const [aIds, aUnknown] = engine.vocab.encode(a);
  const [bIds, bUnknown] = engine.vocab.encode(b);
  const unknown = aUnknown.map((u) => Object.assign({}, u, { segment: "a" })).concat(bUnknown.map((u) => Object.assign({}, u, { segment: "b" })));
  return [aIds, bIds, unknown];
}

async function predict(dev, body) {
  const engine = await dev.engine();
  const [a, b, unknown] = pairIds(engine, body.a, body.b);
  const p = await pIsNext(engine, a, b);
  return { p_is_next: p, prediction: label(p >= 0.5), unknown_chars: unknown };
}

const banks = new Map(); // quiz URL -> its items (read once per page)
async function bankOf(dev) {
  const url = (await dev.manifest()).quiz;
  if (!url) throw new EngineError("this copy of the playground has no NSP quiz", null, 503);
  if (!banks.has(url)) {
    const reading = fetch(url).then((r) => {
      if (!r.ok) throw new EngineError("the NSP quiz could not be downloaded (HTTP " + r.status + ")", null, 503);
      return r.json();
    }).then((data) => data.items);
    banks.set(url, reading);
    reading.catch(() => banks.delete(url));
  }
  return banks.get(url);
}

/* A question from the set's nsp_quiz.json (shipped beside its models: manifest.quiz); no model needed. */
async function question(dev, body, opts = {}) {
  const bank = await bankOf(dev);
  const raw = opts.params && opts.params.index;
  const index = raw === undefined ? Math.floor(Math.random() * bank.length) : Number(raw);
  if (!(Number.isInteger(index) && index >= 0 && index < bank.length)) {
    throw new EngineError("index must be between 0 and " + (bank.length - 1), "index");
  }
  const item = bank[index];
  return { id: item.id, index, a: item.a, b: item.b, count: bank.length };
}

async function answer(dev, body, opts) {
  const bank = await bankOf(dev);
  const id = decodeURIComponent((opts.path.match(/^\/api\/nsp\/quiz\/([^/]+)\/answer$/) || [])[1] || "");
  const item = bank.find((it) => it.id === id);
  if (!item) throw new EngineError("no quiz item with id '" + id + "'", "id", 404);
  if (body.guess !== "IsNext" && body.guess !== "NotNext") throw new EngineError("guess: Input should be 'IsNext' or 'NotNext'", "guess");
  const engine = await dev.engine();
  const [a, b] = pairIds(engine, item.a, item.b);
  const p = await pIsNext(engine, a, b);
  const truth = label(!!item.is_next);
  return { id: item.id, correct: body.guess === truth, truth, p_is_next: p, model_guess: label(p >= 0.5),
    model_correct: label(p >= 0.5) === truth, source_a: item.source_a || "", source_b: item.source_b || "" };
}

/* GPT vs BERT (app/tasks/bert.py compare_*): BERT reads both sides of a masked position. */
const compare = {
  room: (config) => ({ chars: config.context - 2, why: "its context of " + config.context + " minus [CLS] and [SEP]" }),
  async guess(engine, ids, pos) {
    const masked = [CLS, ...ids, SEP];
    masked[pos + 1] = MASK;
    const v = engine.config(NAME).vocab_size;
    const b = (await forward(engine, [masked])).mlm_logits.data;
    const row = (pos + 1) * v;
    const n = ids.length;
    return { probs: softmaxRow(b, row + FIRST_CHAR, row + v),
      reads: pos + " character" + (pos !== 1 ? "s" : "") + " to the left and " + (n - pos - 1) + " to the right" };
  },
  /* p(true character i) with it masked, from both sides, at every i: one batch row per position. */
  async strip(engine, ids) {
    const n = ids.length;
    const v = engine.config(NAME).vocab_size;
    const b = (await forward(engine, ids.map((_, i) => { const s = [CLS, ...ids, SEP]; s[i + 1] = MASK; return s; }))).mlm_logits.data;
    return ids.map((t, i) => {
      const row = (i * (n + 2) + i + 1) * v;
      return t >= FIRST_CHAR ? softmaxRow(b, row + FIRST_CHAR, row + v)[t - FIRST_CHAR] : 0;
    });
  },
};

export default {
  name: NAME,
  chart: { caption: "BERT loss (masked characters + NSP)", yLabel: "loss (MLM + NSP, nats)" },
  /* The Train page's held-out figure (static/pages/train_curves.js): masked top-1 on held-out text at
     each evaluation (training/live/metrics.py: the eval event's val_masked_top1 and its unigram
     baseline), or, for a run recorded before those points, its final metrics. */
  heldOut: {
    caption: "BERT's guesses on held-out text",
    title: "BERT: hidden characters guessed right", yLabel: "% right (top-1)",
    desc: "BERT's top guess for hidden characters of held-out text, in percent right, against training step, " +
      "and a flat dashed line for always guessing the most common character.",
    trainLabel: "BERT, held-out text (solid, ●)", valLabel: "always the most common character (dashed)",
    now: "of hidden characters right", baseNow: "always guessing the most common character",
    point: (e) => Number.isFinite(e.val_masked_top1)
      ? [e.val_masked_top1, Number.isFinite(e.val_masked_top1_unigram) ? e.val_masked_top1_unigram : null] : null,
    final: (m) => [m.masked_top1, m.unigram_baseline ? m.unigram_baseline.masked_top1 : null],
  },
  view: { title: "BERT fills the blanks" },
  page: { href: "/mask-fill", text: "Mask-Fill" },

  /* The probe line with its blanks, then BERT's guesses: green right, pink wrong; a guessed space
     or line break drawn. compact (a snapshot card): the guesses only. */
  show(node, b, compact = false) {
    clear(node);
    if (!b) { node.append(el("pre", { class: "sample", text: "(no BERT in this run)" })); return; }
    const fill = el("pre", { class: "sample" });
    const at = new Map(b.guesses.map((g) => [g.position, g]));
    [...b.filled].forEach((ch, i) => {
      const g = at.get(i);
      if (!g) { fill.append(ch); return; }
      const ok = g.char === g.truth;
      fill.append(el("mark", { class: ok ? "fill-ok" : "fill-bad", text: visibleChar(g.char),
        title: `guess ${visibleChar(g.char)} (${num(100 * g.prob, 0)} %), truth ${visibleChar(g.truth)}` }));
    });
    fill.append(el("span", { class: "note", text: `   ${b.correct} of ${b.guesses.length} right` }));
    if (!compact) node.append(el("pre", { class: "sample", text: b.masked }));
    node.append(fill);
  },

  legend() {
    return el("p", { class: "note fill-legend" }, [el("mark", { class: "fill-ok", text: "green" }), " = BERT's guess is right · ",
      el("mark", { class: "fill-bad", text: "pink" }), " = wrong (its guess is shown) · ",
      el("mark", { class: "fill-bad", text: "␣" }), " a space, ", el("mark", { class: "fill-bad", text: "⏎" }), " a line break"]);
  },

  /* The home page's model card: masked-character accuracy against two baselines, NSP, the quiz. */
  cardTables(card) {
    const names = splits(card);
    const head = ["Model"];
    for (const s of names) head.push("Top-1 (" + s + ")", "Top-5 (" + s + ")");
    const row = (label, pick) => [label].concat(...names.map((s) => {
      const e = pick(card.evaluation[s]) || {};
      return [pct(e.masked_top1 || 0), pct(e.masked_top5 || 0)];
    }));
    const masked = table("BERT masked-character accuracy on held-out plays (" + names.map((s) => splitName(card, s)).join("; ") +
      "; higher is better)", head, [
      row("Trained BERT", (e) => e),
      row("Same architecture, random init", (e) => e.random_init),
      row("Unigram baseline (most frequent chars)", (e) => e.unigram_baseline),
    ], true);
    const pairs = names.map((s) => card.evaluation[s].nsp_pairs).filter(Number.isFinite);
    const nsp = table("Next-sentence prediction accuracy on balanced pairs from held-out plays (" +
      (pairs.length ? thousands(pairs[0]) + " pairs per split, " : "") + "half true continuations, half from " +
      "elsewhere; chance = 50 %)", ["Model"].concat(names),
      [["Trained BERT"].concat(names.map((s) => pct(card.evaluation[s].nsp_accuracy || 0))),
        ["Random init"].concat(names.map((s) => pct((card.evaluation[s].random_init || {}).nsp_accuracy || 0)))], true);
    const out = [masked, nsp];
    const quiz = card.quiz;
    if (quiz && Number.isFinite(quiz.accuracy)) {
      const items = quiz.items || quiz.n || quiz.count;
      out.push(el("p", { class: "quiz-figure" }, ["On the NSP Quiz's own question bank" +
        (Number.isFinite(items) ? " (" + thousands(items) + " questions)" : "") + ", BERT answers ",
        el("strong", { text: pct(quiz.accuracy) }), " correctly (the figure the quiz page compares you with)."]));
    }
    return out;
  },

  device: {
    routes: { "/api/mask-fill": maskFill, "/api/nsp/predict": predict, "/api/nsp/quiz": question,
      "/api/nsp/quiz/{id}/answer": answer },
    compare,
  },

  /* The attention page: [CLS] text [SEP] and `pad` [PAD] slots, one segment; every position may look
     at every other one but the [PAD]s (the padding mask). special: the ids (or labels) of the specials. */
  mask: {
    kind: "bidirectional",
    code: "attn_mask = (idx != pad_id)[:, None, None, :]",
    words: "Bidirectional: every character may look at every other one, left and right; only [PAD] slots " +
      "(padding: empty places that fill a batch up to one length) are hidden. That is why BERT can fill a " +
      "[MASK] from both sides, but cannot write ahead.",
    shape: "every column but the [PAD] ones",
    layout(items, { pad, special }) {
      const seq = [special.CLS, ...items, special.SEP, ...new Array(pad).fill(special.PAD)];
      return { seq, allowed: (i, j) => seq[j] !== special.PAD, extra: { token_type_ids: seq.map(() => 0) }, row: (i) => i + 1 };
    },
  },

  results(b) {
    const rows = [["BERT", "hidden characters guessed right: top-1 / top-5", `${num(100 * b.masked_top1, 1)} % / ${num(100 * b.masked_top5, 1)} %`],
      ["BERT", "always guessing the most common character (top-1)", `${num(100 * b.unigram_baseline.masked_top1, 1)} %`]];
    if (b.nsp_accuracy !== undefined) {
      rows.push(["BERT", "NSP accuracy: is B the next part? (50 % = chance, a coin flip)", `${num(100 * b.nsp_accuracy, 1)} %`]);
    }
    return rows;
  },
};
