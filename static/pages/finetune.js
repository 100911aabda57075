/* The fine-tune lab (/finetune): start a fine-tune (instructor), watch its label-efficiency plot fill in
   live (GET /api/finetunes/{id}/events), read the same numbers in a table, try the exported classifiers.
   Every number drawn is one the API returned (the job's `summary`, or `so_far` until it arrives). */
import { el, $ } from "../lib/dom.js";
import { showError, clearError } from "../lib/errors.js";
import { api, errorOf } from "../lib/api.js";
import { plot } from "./finetune_plot.js";
import { drawAnswer } from "./finetune_answer.js";
import { showPlan } from "./finetune_plan.js";
import { handoffWords, labelCounts } from "./finetune_handoff.js";
import { chosenReadout, renderReadout } from "./finetune_readout.js";
import { ARM_TEXT, metricOf, metricWords, numbersOf, overTimeHeading, pct, renderGpt, renderHeadline, renderLegend,
  renderNotes, renderTable, series as seriesOf, sizeKeys, tooFewToTest, xOf } from "./finetune_results.js";

/* ---------- one job on screen ---------- */
const view = { id: null, detail: null, source: null, instructor: false, runs: {}, classTask: null, tasks: {}, upload: null,
  uploadText: null };

async function renderOverTime(detail) {
  const box = $("#ft-over-time");
  box.hidden = detail.by !== "step";
  if (box.hidden || !detail.settings.run) return;
  const run = detail.settings.run;
  if (!view.runs[run]) {
    view.runs[run] = Promise.all([api("/api/runs/" + encodeURIComponent(run), { model: false }),
      api("/api/models/" + encodeURIComponent(run), { model: false, quiet: true }).catch(() => null)]);
  }
  const [info, set] = await view.runs[run];
  const curve = ((set && set.cards && set.cards.bert && set.cards.bert.curves) || [])
    .filter((c) => typeof c.val_loss === "number");
  const losses = curve.map((c) => c.val_loss);
  plot($("#ft-loss-plot"), [{ name: "BERT validation loss", cls: "arm-loss",
    points: curve.map((c) => ({ x: c.step, mean: c.val_loss, lo: null, hi: null })) }], {
    label: "Pretraining loss against steps", xLabel: "BERT pretraining steps", logX: false,
    yRange: [Math.min(...losses, 0), Math.max(...losses, 1)], yTick: (y) => y.toFixed(2), empty: "no loss curve" });
  void info;
}

function render(detail) {
  view.detail = detail;
  const st = detail.settings || {};
  $("#ft-job-name").textContent = `${st.task_label} on ${st.model_name}`;
  const status = $("#ft-status");
  status.textContent = detail.status;
  status.dataset.status = detail.status;
  $("#ft-reason").textContent = detail.reason || detail.error || "";
  const total = detail.total || 0;
  $("#ft-bar").dataset.fraction = total ? String(detail.done / total) : "0";
  $("#ft-bar").style.width = total ? (100 * detail.done / total).toFixed(1) + "%" : "0%";
  const start = detail.start || {};
  $("#ft-progress").textContent = total
    ? `${detail.done} of ${total} fine-tunes done · ${start.kind === "token" ? "per-character" : "whole-text"} task, ` +
      `labels ${(start.labels || []).join(", ")} · ${start.n_train} training and ${start.n_test} held-out examples · ` +
      `scored by ${metricOf(detail) === "f1" ? "F1 of the rarer tag" : "accuracy"}`
    : "starting…";
  $("#ft-how").textContent = start.how || "";
  const active = detail.status === "queued" || detail.status === "running";
  renderTimeLeft(detail, active);
  $("#ft-cancel").hidden = !(view.instructor && active);
  $("#ft-delete").hidden = !(view.instructor && !active);
  const numbers = numbersOf(detail);
  const keys = sizeKeys(numbers, detail);
  const lines = seriesOf(detail, numbers, keys);
  const steps = detail.by === "step";
  const words = metricWords(detail);
  // a log scale needs two sizes to space; below the evidence minimum the whiskers (seeds only) are not drawn
  const log = !steps && new Set(lines.flatMap((s) => (s.points || []).map((q) => q.x)).filter((x) => x > 0)).size > 1;
  const few = tooFewToTest(detail);
  const drawn = few ? lines.map((s) => (s.points ? { ...s, points: s.points.map((q) => ({ ...q, lo: null, hi: null })) } : s))
    : lines;
  const what = few ? "mean over the seeds (no range: too few test texts)" : "mean and 95 % interval";
  $("#ft-plot-caption").textContent = steps
    ? `The pretrained model's ${words} against the pretraining steps of the snapshot fine-tuned: ${what}`
    : `${words[0].toUpperCase() + words.slice(1)} against the number of labelled examples: ${what} per arm`;
  plot($("#ft-plot"), drawn, { label: `${words} per arm`, logX: log, yRange: [0, 1],
    xLabel: steps ? "pretraining steps" : "labelled examples" + (log ? " (log scale)" : ""),
    yTick: (y) => Math.round(100 * y) + " %",
    xTick: (x) => (!steps && x === xOf("all", detail) ? `all (${x})` : String(x)), // the table's column name
    empty: detail.done ? "" : "the first point appears when the first fine-tune finishes" });
  renderLegend(lines);
  renderTable(detail, numbers, keys);
  renderHeadline(detail);
  renderNotes(detail);
  renderGpt(detail);
  $("#ft-over-time-h").textContent = overTimeHeading(numbers);
  renderOverTime(detail).catch((e) => showError(e.message));
  const ready = (detail.classifiers || []).filter((c) => c.model);
  $("#ft-classify").disabled = !ready.length;
  $("#ft-answers").dataset.ready = String(ready.length);
}

/* How long is left, in the trainer's words: its estimate at the start, then after each finished fine-tune the
   estimate scaled by what the finished ones took (app/contract/finetune_cost.py, training/finetune/progress.py). */
function renderTimeLeft(detail, active) {
  const box = $("#ft-time-left");
  const last = [...(detail.results || [])].reverse().find((r) => r.time_left);
  const left = last ? last.time_left : ((detail.start || {}).estimate || {}).time_left;
  box.hidden = !(active && left);
  box.textContent = box.hidden ? "" : left.text[0].toUpperCase() + left.text.slice(1) +
    (last ? " (the estimate at the start, corrected by how long the finished fine-tunes took)." : " (the estimate at the start).");
}

function watch(id) {
  view.source?.close();
  view.id = id;
  document.documentElement.classList.add("ft-has-job"); // the projector shows this job, not the lab's answer
  const url = new URL(location.href);
  url.searchParams.set("job", id);
  history.replaceState(null, "", url);
  const source = new EventSource("/api/finetunes/" + encodeURIComponent(id) + "/events");
  view.source = source;
  source.addEventListener("status", (e) => {
    const detail = JSON.parse(e.data);
    if (detail.status === "deleted") { source.close(); loadJobs(); return; }
    render(detail);
    if (!["queued", "running", "cancelling"].includes(detail.status)) { source.close(); loadJobs(); }
  });
  source.onerror = () => { if (source.readyState === EventSource.CLOSED) showError("lost the fine-tune's stream"); };
}

/* ---------- try it ---------- */
function capitalsLabel(labels) {
  return labels.find((l) => ["1", "upper", "U", "capital"].includes(l)) || null;
}

function answerCard(c, out) {
  const head = el("h3", { text: `${ARM_TEXT[c.arm] || c.arm}` + (typeof out.accuracy === "number" ? ` · held-out ${pct(out.accuracy)}` : "") });
  if (out.kind === "sequence") {
    const rows = out.labels.map((label, i) => el("li", { class: "bar-row" + (label === out.prediction ? " is-best" : "") }, [
      el("span", { class: "bar-label", text: label }),
      el("meter", { min: 0, max: 1, value: out.probabilities[i], "aria-label": label }),
      el("span", { class: "bar-value", text: pct(out.probabilities[i]) })]));
    return el("div", { class: "answer", "data-arm": c.arm }, [head,
      el("p", { class: "prediction", text: "Answer: " + out.prediction }), el("ul", { class: "bars" }, rows)]);
  }
  const cap = capitalsLabel(out.labels);
  const chars = out.characters.map((ch) => {
    const p = Math.max(...ch.probabilities);
    const shown = cap && ch.prediction === cap ? ch.char.toUpperCase() : ch.char;
    return el("span", { class: "char-tag", title: `${JSON.stringify(ch.char)}: ${ch.prediction} (${pct(p)})`,
      "data-label": ch.prediction }, [el("span", { class: "c", text: shown }), el("span", { class: "t", text: ch.prediction })]);
  });
  return el("div", { class: "answer", "data-arm": c.arm }, [head,
    cap ? el("p", { class: "prediction", text: "Restored: " + out.characters.map((ch) => (ch.prediction === cap ? ch.char.toUpperCase() : ch.char)).join("") }) : null,
    el("p", { class: "chars" }, chars)]);
}

async function classify() {
  const text = $("#ft-text").value;
  const box = $("#ft-answers");
  const ready = ((view.detail && view.detail.classifiers) || []).filter((c) => c.model);
  if (!text.trim() || !ready.length) return;
  clearError();
  const outs = {};
  const cards = await Promise.all(ready.map(async (c) => {
    try {
      outs[c.arm] = await api("/api/classify", { body: { model: c.model, text }, model: false, quiet: true });
      return answerCard(c, outs[c.arm]);
    } catch (e) {
      return el("div", { class: "answer", "data-arm": c.arm }, [el("h3", { text: ARM_TEXT[c.arm] || c.arm }),
        el("p", { class: "error-box", text: e.message })]);
    }
  }));
  box.replaceChildren(...cards);
  if (outs.full && outs.probe && sameAnswers(outs.full, outs.probe)) {
    box.append(el("p", { class: "note", id: "ft-same-note", text: "LP-FT and the linear probe answer exactly alike here: " +
      "LP-FT starts from the probe, and its validation slice kept 0 steps of fine-tuning, so it is the probe." }));
  }
}

/* Two classifiers' answers, probability for probability (LP-FT that kept no fine-tuning step is its probe). */
function sameAnswers(a, b) {
  const probs = (o) => JSON.stringify(o.kind === "sequence" ? o.probabilities : o.characters.map((ch) => ch.probabilities));
  return probs(a) === probs(b);
}

/* ---------- the list and the start form ---------- */
async function loadJobs() {
  const data = await api("/api/finetunes", { model: false });
  view.instructor = data.instructor;
  const list = $("#ft-jobs");
  list.replaceChildren(...data.finetunes.map((j) => el("li", {}, [
    el("a", { href: "?job=" + encodeURIComponent(j.id), "data-job": j.id,
      text: `${j.settings.task_label} on ${j.settings.model_name}` }), " ", el("span", { class: "badge", text: j.status })])));
  if (!data.finetunes.length) list.append(el("li", { class: "note", text: "No fine-tunes yet." }));
  return data;
}

async function setUpStart(data) {
  $("#ft-login").hidden = data.instructor;
  if (!data.instructor) return;
  if (!data.training_available) {
    $("#ft-disabled").hidden = false;
    $("#ft-disabled").textContent = "Fine-tuning needs the train extra on the server: pip install -e \".[train]\"";
    return;
  }
  const [models, tasks] = await Promise.all([api("/api/models", { model: false }), api("/api/tasks", { model: false })]);
  const tuned = (models.families || []).filter((f) => f.pages.includes("finetune")).map((f) => f.name); // the family the lab fine-tunes
  const berts = models.sets.filter((s) => tuned.every((name) => (s.families || []).includes(name)));
  $("#ft-model").replaceChildren(...berts.map((s) => el("option", { value: s.id, "data-run": s.run || "", text: s.name })));
  for (const t of tasks.tasks) view.tasks[t.name] = t;
  $("#ft-task").replaceChildren(...tasks.tasks.map((t) => el("option", { value: t.name,
    text: t.title || t.description ? `${t.name}: ${t.title || t.description}` : t.name })),
  el("option", { value: "", text: "Upload a task file…" }));
  const params = new URLSearchParams(location.search);
  if (berts.some((s) => s.id === params.get("model"))) $("#ft-model").value = params.get("model");
  if (params.get("snapshots") === "1") $("#ft-snapshots").checked = true;
  const sync = () => {
    $("#ft-upload-box").hidden = $("#ft-task").value !== "";
    renderReadout($("#ft-task").value === "" ? view.upload : null); // an upload or the class's labels: its readouts
    readoutArmFollows();
    const fromRun = !!$("#ft-model").selectedOptions[0]?.dataset.run;
    $("#ft-snapshots").disabled = !fromRun;
    if (!fromRun) $("#ft-snapshots").checked = false;
    askPlan();
  };
  $("#ft-task").addEventListener("change", sync);
  $("#ft-model").addEventListener("change", sync);
  for (const sel of ["#ft-sizes", "#ft-seeds"]) $(sel).addEventListener("input", askPlan);
  $("#ft-snapshots").addEventListener("change", askPlan);
  for (const box of document.querySelectorAll("input[name=ft-arm]")) box.addEventListener("change", askPlan);
  $("#ft-readout-choices").addEventListener("change", () => { readoutArmFollows(); askPlan(); });
  $("#ft-file").addEventListener("change", async () => {
    const file = $("#ft-file").files[0];
    view.uploadText = file ? await file.text() : null;
    view.upload = file ? labelCounts(view.uploadText) : null;
    $("#ft-file-info").textContent = view.upload ? handoffWords(view.upload) : "";
    renderReadout(view.upload);
    readoutArmFollows();
    askPlan();
  });
  sync();
  $("#ft-start").hidden = false;
  if (params.get("class")) {
    await classLabels(params.get("class"), sync, data.limits.handoff);
    bringIntoView("#ft-start"); // the class came for the form: not 2,500 px of lesson above it
  }
}

/* For an upload or the class's labels the readout arm follows the readout chosen for them: ticked when one
   is read, not while "None" is chosen (a ticked arm the plan can only call skipped contradicts the choice). */
function readoutArmFollows() {
  if ($("#ft-readout-box").hidden) return;
  const chosen = chosenReadout(), own = view.upload && view.upload.declared;
  $("input[name=ft-arm][value=readout]").checked = chosen === undefined ? own !== undefined && own !== "none" : chosen !== "none";
}

/* A link that names what it is for (?class=, ?job=) opens there; on the projector the page is a stage. */
function bringIntoView(selector) {
  if (!document.documentElement.classList.contains("projector")) $(selector).scrollIntoView({ block: "start" });
}

/* Label together -> fine-tune: /finetune?class=CODE (the class page's button) takes the session's
   pooled labels (GET /api/sessions/{code}/labels.jsonl, instructor only) as the uploaded task file;
   choosing a file instead replaces them. The grid starts as the hand-off's (the server's `grid`: every arm,
   sizes 8 and all, 3 seeds: about 2 minutes on a 2-core laptop for 20-30 lines), and the plan says the time. */
async function classLabels(code, sync, grid) {
  const info = $("#ft-file-info");
  $("#ft-task").value = "";
  if (grid) {
    $("#ft-sizes").value = grid.sizes.join(",");
    $("#ft-seeds").value = String(grid.seeds);
    for (const box of document.querySelectorAll("input[name=ft-arm]")) box.checked = grid.arms.includes(box.value);
  }
  sync();
  try {
    const r = await fetch("/api/sessions/" + encodeURIComponent(code) + "/labels.jsonl", { credentials: "same-origin" });
    if (!r.ok) throw await errorOf(r);
    const text = await r.text();
    const n = text.split("\n").filter((line) => line.trim()).length;
    view.classTask = { text, name: "class " + code + " labels", lines: n };
    view.upload = labelCounts(text);
    info.dataset.class = code;
    $("#ft-task").querySelector("option[value='']").textContent = `The pooled labels of class ${code} (or upload a task file…)`;
    info.textContent = `The pooled labels of class ${code}: ${n} labelled line${n === 1 ? "" : "s"} ` +
      `(the class's majority per line). ${handoffWords(view.upload)}` +
      (Object.keys(view.upload.counts).length > 1 ? " Start fine-tuning, or choose a file to use instead." : "");
    renderReadout(view.upload);
    readoutArmFollows();
    askPlan();
  } catch (e) {
    view.classTask = null;
    info.textContent = `The labels of class ${code} could not be loaded: ${e.message}`;
  }
}

/* What the server's plan is asked about: the start as Start would send it (task, sizes, model, arms, seeds,
   and for an upload the readout chosen). */
function planRequest() {
  if ($("#ft-snapshots").checked) return null;
  const sizes = $("#ft-sizes").value.split(",").map((s) => s.trim()).filter(Boolean)
    .map((s) => (s === "all" ? "all" : /^\d+$/.test(s) ? Number(s) : s));
  const arms = [...document.querySelectorAll("input[name=ft-arm]:checked")].map((i) => i.value);
  if (!sizes.length || !arms.length) return null;
  const seeds = /^\d+$/.test($("#ft-seeds").value.trim()) ? Number($("#ft-seeds").value) : $("#ft-seeds").value;
  const common = { sizes, arms, seeds, model: $("#ft-model").value || null };
  if ($("#ft-task").value) return { task: $("#ft-task").value, ...common };
  const text = view.uploadText ?? (view.classTask && view.classTask.text);
  if (!text) return null;
  const readout = chosenReadout();
  return { task_text: text, ...common, ...(readout !== undefined ? { readout } : {}) };
}

/* Before Start: a single label is said (and Start waits); otherwise the server's plan says which sizes and
   arms will be skipped, whether the test part can carry a comparison, and how long it will take here
   (finetune_plan.js). */
function askPlan() {
  const shipped = view.tasks[$("#ft-task").value];
  const up = shipped ? null : view.upload;
  const oneClass = !!up && Object.keys(up.counts).length < 2;
  $("#ft-go").disabled = oneClass;
  showPlan(oneClass ? null : planRequest());
  if (oneClass) $("#ft-estimate").textContent = handoffWords(up);
}

async function start() {
  const note = $("#ft-start-note");
  const sizes = $("#ft-sizes").value.split(",").map((s) => s.trim()).filter(Boolean)
    .map((s) => (s === "all" ? "all" : Number(s)));
  const body = { model: $("#ft-model").value, arms: [...document.querySelectorAll("input[name=ft-arm]:checked")].map((i) => i.value),
    sizes, seeds: Number($("#ft-seeds").value), snapshots: $("#ft-snapshots").checked };
  if ($("#ft-task").value) body.task = $("#ft-task").value;
  else {
    const file = $("#ft-file").files[0];
    if (file) {
      body.task_text = await file.text();
      body.task_name = file.name.replace(/\.[^.]*$/, "").slice(0, 60) || "uploaded task";
    } else if (view.classTask) {
      body.task_text = view.classTask.text;
      body.task_name = view.classTask.name;
    } else { note.textContent = "Choose a task file first."; return; }
    const readout = chosenReadout(); // the readout chosen for these labels (issue 42), over the file's own
    if (readout !== undefined) body.readout = readout;
  }
  note.textContent = "starting…";
  try {
    const job = await api("/api/finetunes", { body, model: false, quiet: true });
    note.textContent = "";
    await loadJobs();
    watch(job.id);
    bringIntoView("#ft-job"); // its progress, then its results, are drawn there
  } catch (e) {
    note.textContent = e.message;
  }
}

async function main() {
  drawAnswer(); // the answer first: from the page's own table, before any request
  $("#ft-go").addEventListener("click", start);
  $("#ft-classify").addEventListener("click", classify);
  $("#ft-text").addEventListener("keydown", (e) => { if (e.key === "Enter") classify(); });
  $("#ft-cancel").addEventListener("click", async () => {
    await api("/api/finetunes/" + encodeURIComponent(view.id), { method: "DELETE", model: false }).catch(() => null);
  });
  $("#ft-delete").addEventListener("click", async () => {
    await api("/api/finetunes/" + encodeURIComponent(view.id), { method: "DELETE", model: false }).catch(() => null);
    history.replaceState(null, "", location.pathname);
    location.reload();
  });
  const data = await loadJobs();
  await setUpStart(data);
  const wanted = new URLSearchParams(location.search).get("job");
  const id = wanted || (data.active) || (data.finetunes[0] && data.finetunes[0].id);
  if (wanted && !new URLSearchParams(location.search).get("class")) bringIntoView("#ft-job");
  if (id) watch(id);
  else plot($("#ft-plot"), [], { label: "Held-out accuracy per arm", yRange: [0, 1], yTick: String, xLabel: "",
    empty: "no fine-tune yet: the instructor starts one above" });
}

main().catch((e) => showError(e.message));
