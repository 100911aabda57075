/* What the Train page shows of one run, besides its curves: the live samples, the snapshots side
   by side (the one with the lowest validation loss marked ★), and the held-out results. Every
   step shown is one model's own (GPT and BERT take turns, so their counts differ).
   Everything the server sends is shown as text (textContent), never as markup. */
import { el, clear, $ } from "../lib/dom.js";
import { num, thousands, visibleChar } from "../lib/text.js";

const NAME = { gpt: "GPT", bert: "BERT", electra: "ELECTRA" };

export function clock(s) {
  const m = Math.floor(s / 60);
  return `${m}:${String(Math.floor(s % 60)).padStart(2, "0")}`;
}

/* "GPT step 40 · BERT step 20" from {gpt: 40, bert: 20} (in the run's family order). */
export function stepsText(steps, families) {
  const order = (families && families.length ? families : Object.keys(steps || {})).filter((f) => steps && steps[f] !== undefined);
  return order.map((f) => `${NAME[f] || f.toUpperCase()} step ${thousands(steps[f])}`).join(" · ");
}

/* Each model's steps at a sample: the event's own (`steps`), else the latest progress lines. */
function sampleSteps(view, e) {
  if (e.steps) return e.steps;
  const out = {};
  for (const [fam, p] of Object.entries(view.progress)) out[fam] = p.step;
  return out;
}

export function showSample(view, e) {
  $("#t-sample-step").textContent = `(${stepsText(sampleSteps(view, e), view.families)}, ${clock(e.elapsed_s || 0)})`;
  fillSample($("#t-gpt-sample"), e.gpt);
  fillBert($("#t-bert-masked"), $("#t-bert-fill"), e.bert);
}

export function fillSample(node, g) {
  clear(node);
  if (!g) { node.textContent = "(no GPT in this run)"; return; }
  node.append(el("strong", { text: g.prompt }), g.text);
}

/* The probe with BERT's guesses: green right, pink wrong; a guessed space or line break drawn. */
export function fillBert(maskedNode, fillNode, b) {
  clear(maskedNode);
  clear(fillNode);
  if (!b) { maskedNode.textContent = "(no BERT in this run)"; return; }
  maskedNode.textContent = b.masked;
  const at = new Map(b.guesses.map((g) => [g.position, g]));
  [...b.filled].forEach((ch, i) => {
    const g = at.get(i);
    if (!g) { fillNode.append(ch); return; }
    const ok = g.char === g.truth;
    fillNode.append(el("mark", { class: ok ? "fill-ok" : "fill-bad", text: visibleChar(g.char),
      title: `guess ${visibleChar(g.char)} (${num(100 * g.prob, 0)} %), truth ${visibleChar(g.truth)}` }));
  });
  fillNode.append(el("span", { class: "note", text: `   ${b.correct} of ${b.guesses.length} right` }));
}

export function legend() {
  return el("p", { class: "note fill-legend" }, [el("mark", { class: "fill-ok", text: "green" }), " = BERT's guess is right · ",
    el("mark", { class: "fill-bad", text: "pink" }), " = wrong (its guess is shown) · ",
    el("mark", { class: "fill-bad", text: "␣" }), " a space, ", el("mark", { class: "fill-bad", text: "⏎" }), " a line break"]);
}

/* A snapshot's validation loss per family: the event's own, else (a run recorded before snapshots
   carried it) the evaluation nearest its step. */
function snapshotLoss(view, s, fam) {
  const own = s.validation_loss && s.validation_loss[fam];
  if (Number.isFinite(own)) return own;
  const step = s.steps && s.steps[fam];
  const val = view.curves[fam] ? view.curves[fam].val : [];
  if (!Number.isFinite(step) || !val.length) return null;
  return val.reduce((a, p) => (Math.abs(p[0] - step) < Math.abs(a[0] - step) ? p : a))[1];
}

export function renderSnapshots(view) {
  const box = clear($("#t-snapshots"));
  const items = [...view.snapshots.values()].sort((a, b) => (a.final - b.final) || (a.step - b.step));
  const best = {};
  for (const fam of ["gpt", "bert"]) {
    const scored = items.map((s) => [s, snapshotLoss(view, s, fam)]).filter((p) => Number.isFinite(p[1]));
    if (scored.length > 1) best[fam] = scored.reduce((a, b) => (b[1] < a[1] ? b : a))[0];
  }
  for (const s of items) {
    const id = s.final ? view.id : `${view.id}@${s.step}`;
    const title = s.final ? "Final" : `At ${num(100 * s.fraction, 0)} % of the time`;
    const card = el("div", { class: "snapshot", dataset: { step: String(s.step) } }, [
      el("h3", { text: title }), el("p", { class: "hint", text: stepsText(s.steps, view.families) })]);
    for (const fam of Object.keys(best)) {
      if (best[fam] === s) {
        card.classList.add("best");
        card.append(el("p", { class: "best-mark", text: `★ lowest ${NAME[fam]} validation loss (${num(snapshotLoss(view, s, fam), 3)})` }));
      }
    }
    const g = el("pre", { class: "sample" });
    fillSample(g, s.sample && s.sample.gpt);
    const bm = el("pre", { class: "sample" });
    const bf = el("pre", { class: "sample" });
    fillBert(bm, bf, s.sample && s.sample.bert);
    card.append(g, bf, el("p", {}, [
      el("a", { href: "/generate?model=" + encodeURIComponent(id), text: "Generation" }), " · ",
      el("a", { href: "/mask-fill?model=" + encodeURIComponent(id), text: "Mask-Fill" }), " · ",
      el("code", { text: id })]));
    box.append(card);
  }
}

export function showMetrics(e) {
  const box = clear($("#t-metrics"));
  const rows = [];
  if (e.metrics.gpt) rows.push(["GPT", "nats per character (perplexity)", `${num(e.metrics.gpt.nats_per_char, 3)} (${num(e.metrics.gpt.perplexity, 2)})`]);
  if (e.metrics.bert) {
    const b = e.metrics.bert;
    rows.push(["BERT", "hidden characters guessed right: top-1 / top-5", `${num(100 * b.masked_top1, 1)} % / ${num(100 * b.masked_top5, 1)} %`]);
    rows.push(["BERT", "always guessing the most common character (top-1)", `${num(100 * b.unigram_baseline.masked_top1, 1)} %`]);
    if (b.nsp_accuracy !== undefined) {
      rows.push(["BERT", "NSP accuracy: is B the next part? (50 % = chance, a coin flip)", `${num(100 * b.nsp_accuracy, 1)} %`]);
    }
  }
  box.append(el("table", {}, [el("caption", { text: "On the run's own held-out part of the text (never trained on)" }),
    el("tr", {}, ["model", "metric", "value"].map((h) => el("th", { text: h }))),
    ...rows.map((r) => el("tr", {}, r.map((c) => el("td", { text: c }))))]));
  const cmds = e.commands || {};
  $("#t-commands").textContent = Object.entries(cmds).map(([k, v]) => `# ${k}\n${v}`).join("\n\n");
}
