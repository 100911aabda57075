/* The fine-tune lab's numbers in words: the plot's series, the table, the headline, the notes (sizes or
   arms skipped, a small test set), GPT's way with its answer counts, the snapshot heading.
   Every number shown is one the API returned: the trainer's summary (`summary` + `final`) once it is in,
   else `so_far` (marked as results so far, no verdict).
   API: ARM_TEXT, pct, numbersOf(detail), sizeKeys(numbers, detail), xOf(key, detail), series(detail, numbers, keys),
        renderTable(detail, numbers, keys), renderHeadline(detail), renderNotes(detail), skippedLines(list), renderGpt(detail),
        zeroLabel(numbers), readoutSentence(detail, numbers),
        overTimeHeading(detail) */
import { el, $ } from "../lib/dom.js";

export const ARMS = ["readout", "full", "probe", "scratch", "ngram"];
export const ARM_TEXT = {
  readout: "Readout: the model's own head (nothing trained)", full: "Pretrained, fine-tuned (LP-FT)",
  probe: "Linear probe (frozen)", scratch: "From scratch", ngram: "Character n-grams (no pretraining)",
};
const DODGE = { readout: -14, full: -7, probe: 0, scratch: 7, ngram: 14 }; // whiskers at one size, told apart

/* Scores always with one decimal (the table and the API's numbers compare digit for digit). */
export const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %");

export const metricOf = (detail) => detail.metric || (detail.start && detail.start.metric) || "accuracy";
export const metricWords = (detail) => (metricOf(detail) === "f1"
  ? "F1 of the rarer tag" : "held-out accuracy");

export function numbersOf(detail) {
  return detail.summary || detail.so_far || {};
}

/* x position of a size key: "all" is the job's whole training split. */
export function xOf(key, detail) {
  if (key === "all") return (detail.start && detail.start.n_train) || null;
  const n = Number(key);
  return Number.isFinite(n) ? n : null;
}

export function sizeKeys(numbers, detail) {
  const keys = new Set();
  for (const arm of Object.values(numbers)) for (const k of Object.keys(arm)) keys.add(k);
  return [...keys].sort((a, b) => (xOf(a, detail) ?? 1e12) - (xOf(b, detail) ?? 1e12));
}

const final = (detail) => (detail.summary && detail.final) || {};

/* The readout's zero-label score (size "0"), or null. */
export function zeroLabel(numbers) {
  const cell = numbers.readout && numbers.readout["0"];
  return cell && typeof cell.mean === "number" ? cell : null;
}

/* The first sentence of a result: what the model knew before any label (or with one threshold). */
export function readoutSentence(detail, numbers) {
  const words = metricOf(detail) === "f1" ? "F1 on the rarer tag" : "accuracy";
  const zero = zeroLabel(numbers);
  const major = detail.start && detail.start.majority;
  const base = major && typeof major.score === "number" ? ` (always answering “${major.label}”: ${pct(major.score)})` : "";
  if (zero) return `Before any label, the model already scores ${pct(zero.mean)} ${words} reading its own pretrained head${base}.`;
  const r = numbers.readout;
  const key = r && Object.keys(r).find((k) => r[k] && typeof r[k].mean === "number");
  if (key) return `Reading its own pretrained head with one threshold set on ${key} labelled examples, the model scores ` +
    `${pct(r[key].mean)} ${words}${base}.`;
  return "";
}

/* What the validation slice chose, said where it matters: runs still improving at their cap, the smaller
   scratch model, a regularisation at the grid's edge. */
function choiceNotes(detail, arm, key) {
  const rows = (detail.results || []).filter((r) => r.arm === arm && String(r.size) === key);
  const notes = [];
  const improving = rows.filter((r) => r.still_improving).length;
  if (improving) notes.push(`${improving} still improving at the step cap`);
  const small = rows.filter((r) => String(r.model || "").includes("smaller")).length;
  if (small) notes.push(`smaller model chosen ${small} of ${rows.length}`);
  const edge = rows.filter((r) => r.C_at_edge).length;
  if (edge) notes.push(`how strongly it was held back from memorising (C) at the end of the range tried ${edge} of ${rows.length}`);
  return notes.join(" · ");
}

/* Did every seed of this arm at this size give one answer to every held-out text? */
function sameAnswer(detail, arm, key, cell) {
  const counts = final(detail).same_answer;
  if (counts && counts[arm] && cell) return counts[arm][key] === cell.n;
  const rows = (detail.results || []).filter((r) => r.arm === arm && String(r.size) === key);
  return rows.length > 0 && rows.every((r) => r.same_answer === true);
}

export function series(detail, numbers, keys) {
  const out = ARMS.filter((a) => numbers[a]).map((arm) => ({ name: ARM_TEXT[arm], cls: "arm-" + arm, dodge: DODGE[arm],
    points: keys.filter((k) => k !== "0" && numbers[arm][k] && numbers[arm][k].mean !== null)
      .map((k) => ({ x: xOf(k, detail), ...numbers[arm][k] })) }));
  const zero = zeroLabel(numbers);
  if (zero) out.push({ name: "Readout with zero labels (a fixed rule)", cls: "arm-readout-zero", flat: zero.mean, points: [] });
  const major = (detail.start && detail.start.majority) || null;
  if (major && typeof major.score === "number") {
    out.push({ name: `Always “${major.label}” (one answer for every text)`, cls: "arm-majority", flat: major.score, points: [] });
  }
  return out;
}

export function renderLegend(list) {
  $("#ft-legend").replaceChildren(...list.map((s) => el("li", { class: s.cls }, [
    el("span", { class: "swatch" + (s.flat !== undefined ? " dashed" : "") }), s.name])));
}

/* Below the evidence minimum (app/contract/finetune_evidence.py) the seeds all score the same few test texts:
   a range over seeds would look like certainty those texts cannot give (issue 52 must 3), so none is shown. */
export function tooFewToTest(detail) {
  const plan = (detail.settings && detail.settings.plan) || null;
  const evidence = final(detail).evidence || (plan && plan.evidence) || null;
  return Boolean(evidence && !evidence.enough);
}

function cellText(detail, arm, key, cell) {
  if (!cell || cell.mean === null) return "–";
  const range = cell.lo !== null && cell.lo !== undefined && !tooFewToTest(detail);
  let text = pct(cell.mean) + (range ? ` [${pct(cell.lo)} – ${pct(cell.hi)}]` : "");
  if (sameAnswer(detail, arm, key, cell)) text += " · gives the same answer to every text";
  const steps = final(detail).steps;
  if (steps && steps[arm] && typeof steps[arm][key] === "number" && (arm === "full" || arm === "scratch")) {
    text += ` · ${Math.round(steps[arm][key])} training steps (mean)`;
  }
  return text;
}

export function renderTable(detail, numbers, keys) {
  const t = $("#ft-table");
  const seeds = (detail.start && detail.start.seeds) || (detail.settings && detail.settings.seeds) || "";
  const few = tooFewToTest(detail);
  t.replaceChildren(el("caption", { text: `${metricWords(detail)[0].toUpperCase() + metricWords(detail).slice(1)}: ` +
    (few ? `mean over ${seeds} seeds, no range: every seed is scored on the same ${final(detail).evidence?.n_test ??
      (detail.start || {}).n_test ?? "few"} test texts, too few for a range to mean anything`
      : `mean [95 % interval] over ${seeds} seeds`) + (detail.summary ? "" : " (results so far)") }));
  const by = detail.by === "step" ? "Pretraining step" : "Labelled examples";
  t.append(el("thead", {}, el("tr", {}, [el("th", { scope: "col", text: by }),
    ...keys.map((k) => el("th", { scope: "col", text: k }))])));
  const body = el("tbody");
  for (const arm of ARMS.filter((a) => numbers[a])) {
    body.append(el("tr", { "data-arm": arm }, [el("th", { scope: "row", text: ARM_TEXT[arm] }),
      ...keys.map((k) => {
        const notes = choiceNotes(detail, arm, k);
        return el("td", { "data-size": k }, [cellText(detail, arm, k, numbers[arm][k]),
          notes ? el("small", { class: "choice", text: notes }) : null]);
      })]));
  }
  const major = detail.start && detail.start.majority;
  if (major && detail.by !== "step") {
    body.append(el("tr", { "data-arm": "majority" }, [el("th", { scope: "row", text: `Always “${major.label}”` }),
      ...keys.map((k) => el("td", { "data-size": k, text: pct(major.score) }))]));
  }
  const g = detail.gpt_way;
  if (g && detail.by !== "step") {
    const score = metricOf(detail) === "f1" ? g.f1 : g.accuracy;
    body.append(el("tr", { "data-arm": "gpt" }, [el("th", { scope: "row", text: "GPT's way (prompted, no training)" }),
      ...keys.map((k) => el("td", { "data-size": k, text: typeof score === "number" ? pct(score) : "–" }))]));
  }
  t.append(body);
  const cpu = final(detail).cpu_seconds;
  $("#ft-cpu").textContent = cpu ? "CPU-seconds per arm (all sizes and seeds): " +
    Object.entries(cpu).map(([a, c]) => `${ARM_TEXT[a] || a} ${c}`).join(" · ") : "";
}

export function renderHeadline(detail) {
  const p = $("#ft-gap");
  if (detail.by === "step") { p.textContent = ""; return; }
  const head = final(detail).headline;
  const first = readoutSentence(detail, numbersOf(detail));
  const cls = /^class .+ labels$/.test((detail.settings && detail.settings.task_label) || "")
    ? `Trained on your class's labels: ${((detail.start && detail.start.labels) || []).map((l) => `“${l}”`).join(" or ")}. ` : "";
  const plan = (detail.settings && detail.settings.plan) || null;
  const evidence = final(detail).evidence || (plan && plan.evidence) || null;
  p.dataset.enough = evidence ? String(evidence.enough) : "";
  let rest = "", details = "";
  if (detail.summary && head && head.lead !== undefined) [rest, details] = [head.lead, head.details]; // below the minimum
  else if (detail.summary && head && head.text) rest = head.text;
  else if (evidence && !evidence.enough) rest = evidence.text; // below the minimum: no verdict is coming, said now
  else if (!detail.summary && detail.done) rest = "Results so far: the verdict (which differences are clear) comes when " +
    "every fine-tune is done.";
  p.textContent = [cls + first, rest].filter(Boolean).join(" ");
  if (details) p.append(" ", el("span", { class: "gap-details", text: details }));
}

const andList = (xs) => (xs.length < 2 ? String(xs[0]) : `${xs.slice(0, -1).join(", ")} and ${xs[xs.length - 1]}`);

/* The sizes and arms the trainer skips, in its words, sizes with the same reason in one sentence: the same
   sentences before Start (the plan, finetune_plan.js) and after (the run's notes). */
export function skippedLines(skipped) {
  const groups = [];
  for (const s of skipped || []) {
    const same = !s.arm && groups.find((g) => g.sizes && g.why === s.why);
    if (same) same.sizes.push(s.size);
    else groups.push(s.arm ? { arm: s.arm, why: s.why } : { sizes: [s.size], why: s.why });
  }
  // "Size 8 not run", never "8 labelled examples skipped": a size is a run, and no label is left out (issue 52 must 3)
  return groups.map((g) => (g.arm ? `${ARM_TEXT[g.arm] || g.arm} skipped: `
    : `${g.sizes.length > 1 ? "Sizes" : "Size"} ${andList(g.sizes)} not run: `) + g.why + ".");
}

export function renderNotes(detail) {
  const start = detail.start || {};
  const lines = [...(start.notes || []).map((n) => "Note: " + n + "."), ...skippedLines(start.skipped)];
  $("#ft-notes").replaceChildren(...lines.map((line) => el("li", { text: line })));
  $("#ft-notes").hidden = !lines.length;
}

export function renderGpt(detail) {
  const gw = detail.gpt_way;
  $("#ft-gpt").hidden = !gw || detail.by === "step";
  if (!gw) return;
  const score = metricOf(detail) === "f1" ? gw.f1 : gw.accuracy;
  let text = typeof score === "number"
    ? `GPT's held-out ${metricOf(detail) === "f1" ? "F1" : "accuracy"}: ${pct(score)}` +
      (gw.chance ? ` (always the most common answer: ${pct(metricOf(detail) === "f1" ? 0 : gw.chance)})` : "")
    : "not measured: " + (gw.why || gw.reason || gw.message || "no answer for this task");
  if (gw.answers) {
    text += ". Its answers: " + Object.entries(gw.answers).map(([l, n]) => `“${l}” ${n} times`).join(", ") +
      (gw.same_answer ? " — it gives the same answer to every text." : ".");
  }
  $("#ft-gpt-result").textContent = text;
  $("#ft-gpt-how").textContent = gw.method ? "How: " + gw.method : "";
}

/* The snapshot heading is a question unless the final snapshot's interval lies above step 0's. */
export function overTimeHeading(numbers) {
  const full = numbers.full || {};
  const steps = Object.keys(full).sort((a, b) => Number(a) - Number(b));
  if (steps.length < 2) return "Does pretraining pay off over time?";
  const first = full[steps[0]], last = full[steps[steps.length - 1]];
  const rises = first && last && typeof last.lo === "number" && typeof first.hi === "number" && last.lo > first.hi;
  return rises ? "Pretraining paid off over time: the last snapshot's interval lies above the first's"
    : "Does pretraining pay off over time? Not clearly here: the intervals overlap";
}
