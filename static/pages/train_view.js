/* What the Train page shows of one run, besides its curves: the live views (each family's own:
   static/families/), the snapshots side by side (the one with the lowest validation loss marked ★),
   and the held-out results. Every step shown is one model's own (the models take turns, so their
   counts differ). Everything the server sends is shown as text (textContent), never as markup.
   views(names)           one live-view box per family of the run, in order
   showSample(view, e)    a sample event into those boxes
   renderSnapshots(view)  the snapshot cards;  showMetrics(e)  the held-out results table */
import { el, clear, $ } from "../lib/dom.js";
import { num, thousands } from "../lib/text.js";
import { label, pieces } from "../families/index.js";

export function clock(s) {
  const m = Math.floor(s / 60);
  return `${m}:${String(Math.floor(s % 60)).padStart(2, "0")}`;
}

/* "GPT step 40 · BERT step 20" from {gpt: 40, bert: 20} (in the run's family order). */
export function stepsText(steps, families) {
  const order = (families && families.length ? families : Object.keys(steps || {})).filter((f) => steps && steps[f] !== undefined);
  return order.map((f) => `${label(f)} step ${thousands(steps[f])}`).join(" · ");
}

/* Each model's steps at a sample: the event's own (`steps`), else the latest progress lines. */
function sampleSteps(view, e) {
  if (e.steps) return e.steps;
  const out = {};
  for (const [fam, p] of Object.entries(view.progress)) out[fam] = p.step;
  return out;
}

let boxes = []; // the families with a live-view box, in order

export function views(names) {
  if (names.join() === boxes.join()) return;
  const grid = clear($("#t-views"));
  for (const fam of names) {
    const part = pieces(fam);
    grid.append(el("div", {}, [el("h3", { text: part.view.title }), el("div", { id: "t-view-" + fam }),
      part.legend ? part.legend() : ""]));
  }
  boxes = [...names];
}

export function showSample(view, e) {
  $("#t-sample-step").textContent = `(${stepsText(sampleSteps(view, e), view.families)}, ${clock(e.elapsed_s || 0)})`;
  for (const fam of boxes) pieces(fam).show($("#t-view-" + fam), e[fam]);
}

export function clearViews() {
  for (const fam of boxes) clear($("#t-view-" + fam));
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
  const names = view.families || Object.keys(view.curves);
  const best = {};
  for (const fam of names) {
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
        card.append(el("p", { class: "best-mark", text: `★ lowest ${label(fam)} validation loss (${num(snapshotLoss(view, s, fam), 3)})` }));
      }
    }
    const links = [];
    for (const fam of names) {
      const part = pieces(fam);
      const sample = el("div", { class: "snapshot-view" });
      part.show(sample, s.sample && s.sample[fam], true);
      card.append(sample);
      if (part.page) links.push(el("a", { href: part.page.href + "?model=" + encodeURIComponent(id), text: part.page.text }), " · ");
    }
    card.append(el("p", {}, [...links, el("code", { text: id })]));
    box.append(card);
  }
}

export function showMetrics(e) {
  const box = clear($("#t-metrics"));
  const rows = Object.entries(e.metrics || {}).flatMap(([fam, m]) => pieces(fam).results(m));
  box.append(el("table", {}, [el("caption", { text: "On the run's own held-out part of the text (never trained on)" }),
    el("tr", {}, ["model", "metric", "value"].map((h) => el("th", { text: h }))),
    ...rows.map((r) => el("tr", {}, r.map((c) => el("td", { text: c }))))]));
  const cmds = e.commands || {};
  $("#t-commands").textContent = Object.entries(cmds).map(([k, v]) => `# ${k}\n${v}`).join("\n\n");
}
