/* Live pretraining (/train): start a run (instructor), watch any run live over server-sent events
   (history first, so late joiners see the whole run), compare snapshots, open them in the applets.
   Once a run starts, the run is the first thing on screen: the start form folds away ("New run"
   brings it back) and "Start training" stays off until the run ends. Samples, snapshots and
   results: train_view.js; curves: train_curves.js.
   Everything the server sends is shown as text (textContent), never as markup.
   URL: run (the run on screen). */
import { el, clear, $ } from "../lib/dom.js";
import { num, thousands } from "../lib/text.js";
import { showError, clearError } from "../lib/errors.js";
import { api, families } from "../lib/api.js";
import { urlState } from "../lib/state.js";
import { listen } from "../lib/stream.js";
import { draw, layout } from "./train_curves.js";
import { clock, stepsText, showSample, renderSnapshots, showMetrics, views, clearViews } from "./train_view.js";
import { know, label, pieces } from "../families/index.js";

const RUNNING = ["queued", "running"];
const state = urlState({ run: "" });
let info = null; // GET /api/runs
let stream = null; // EventSource of the run on screen
let view = null; // the run on screen: {id, curves, held, snapshots, run, progress, families, finished}
let preset = null;
let fileText = null;
let drawQueued = false;
let lastActive = null; // a run that starts while the page is open is shown at once
let starting = false; // between "Start training" and the server's answer
let formOpen = null; // the start form: folded away while a run is on (null: not decided yet)
let known = []; // the server's model families (GET /api/models: families), in its order

/* ---------- runs list and the start form ---------- */
async function refresh() {
  info = await api("/api/runs", { quiet: true }).catch(() => null);
  if (!info) return;
  const canTrain = info.training_available && !info.storage_problem;
  const off = $("#t-disabled");
  off.hidden = canTrain;
  off.textContent = info.enable || info.storage_problem || "";
  if (formOpen === null) formOpen = !info.active; // a run is going: the run first
  showForm();
  $("#t-login").hidden = info.instructor || !canTrain;
  renderPresets();
  renderRuns();
  if (!view && !starting) {
    const id = state.values.run || info.active || (info.runs[0] && info.runs[0].id);
    if (id) watch(id);
  } else if (info.active && info.active !== lastActive && info.active !== view.id && !starting) {
    watch(info.active);
  }
  lastActive = info.active;
}

/* The form is for an instructor who can train; it folds away while a run is on screen and going. */
function showForm() {
  const canStart = info && info.training_available && !info.storage_problem && info.instructor;
  $("#t-start").hidden = !(canStart && formOpen);
  $("#t-new").hidden = !(canStart && !formOpen);
  const going = starting || Boolean(info && info.active);
  $("#t-go").disabled = going;
  $("#t-start-note").textContent = starting ? "Starting…" : going ? "A run is going: wait for it to end, or cancel it." : "";
}

function renderPresets() {
  if ($("#t-presets").childElementCount === info.presets.length) return; // keep focus and choice
  const box = clear($("#t-presets"));
  if (!preset && info.presets.length) preset = (info.presets.find((p) => p.name === "1min") || info.presets[0]).name;
  for (const p of info.presets) {
    const c = known.map((f) => p[f.name]).find(Boolean); // the first family's size (they share it)
    const size = c ? `${c.n_layer} layers × ${c.n_embd}` : "";
    box.append(el("label", {}, [
      el("input", { type: "radio", name: "t-preset", value: p.name, checked: p.name === preset,
                    onchange: () => { preset = p.name; } }),
      ` ${p.name === "tiny" ? "tiny (tests)" : num(p.minutes, 0) + " min"} `, el("span", { class: "hint", text: size }),
    ]));
  }
}

function renderRuns() {
  const list = clear($("#t-runs"));
  if (!info.runs.length) list.append(el("li", { class: "note", text: "No runs yet." }));
  for (const r of info.runs) {
    const when = new Date(r.created * 1000).toLocaleString();
    list.append(el("li", {}, [
      el("a", { href: "?run=" + encodeURIComponent(r.id), "aria-current": view && view.id === r.id ? "true" : null,
                onclick: (e) => { e.preventDefault(); watch(r.id); } }, r.name),
      ` · ${r.status} · ${when} · ${(r.settings.families || []).join(" + ")} · ${num(r.settings.minutes, 1)} min`,
    ]));
  }
}

function source() {
  return document.querySelector("input[name=t-source]:checked").value;
}

function onSource() {
  $("#t-paste-box").hidden = source() !== "paste";
  $("#t-file-box").hidden = source() !== "file";
}

async function onFile() {
  fileText = null;
  const file = $("#t-file").files[0];
  const note = $("#t-file-info");
  if (!file) return;
  if (file.size > info.limits.max_corpus_bytes) {
    note.textContent = `${thousands(file.size)} bytes: over the limit of ${thousands(info.limits.max_corpus_bytes)} bytes`;
    return;
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  if (bytes.includes(0)) { note.textContent = "this file looks binary (it holds NUL bytes): choose a plain text file"; return; }
  try {
    fileText = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    note.textContent = `${thousands(fileText.length)} characters`;
  } catch (err) {
    note.textContent = "this file is not UTF-8 text: save it as UTF-8 plain text and choose it again";
  }
}

async function start() {
  clearError();
  const body = { families: [...document.querySelectorAll("#t-families input:checked")].map((box) => box.value), preset };
  if (!body.families.length) {
    showError("choose at least one model to train: " + known.filter((f) => f.trainable).map((f) => f.label).join(", "));
    return;
  }
  if (source() === "paste") body.corpus = $("#t-text").value;
  if (source() === "file") {
    if (fileText === null) { showError($("#t-file-info").textContent || "choose a UTF-8 .txt file first"); return; }
    body.corpus = fileText;
  }
  const name = $("#t-name").value.trim() || (source() === "file" && $("#t-file").files[0] ? $("#t-file").files[0].name.replace(/\.txt$/i, "") : "");
  if (name) body.name = name.slice(0, 60);
  const previous = view && view.id;
  starting = true;
  formOpen = false; // the run in the form's place, at once: the first thing the class sees
  showForm();
  window.scrollTo({ top: 0 });
  clearRun(); // nothing of the previous run stays under the new one's name
  view = null;
  $("#t-run-name").textContent = name ? name.slice(0, 60) : "new run";
  $("#t-status").textContent = "starting";
  $("#t-status").dataset.status = "queued";
  try {
    const run = await api("/api/runs", { body });
    watch(run.id, run.name);
  } catch (err) {
    formOpen = true; // api() has shown the server's sentence, above the form to mend
    if (previous) watch(previous);
    else clearRun();
  } finally {
    starting = false;
    await refresh();
    showForm();
  }
}

async function cancelOrDelete() {
  if (!view) return;
  const running = view.run && RUNNING.includes(view.run.status);
  if (!running && !window.confirm("Delete this run and its models?")) return;
  try {
    await api("/api/runs/" + encodeURIComponent(view.id), { method: "DELETE" });
    if (!running) { view = null; state.set({ run: "" }); clearRun(); }
    refresh();
  } catch (err) { /* shown */ }
}

function newRun() {
  formOpen = true;
  showForm();
  $("#t-start").scrollIntoView({ block: "start" });
  $("#t-text").focus();
}

/* ---------- one run, live ---------- */
function clearRun() {
  if (stream) stream.close();
  stream = null;
  clearViews();
  for (const id of ["#t-snapshots", "#t-metrics", "#t-commands", "#t-stats", "#t-reason", "#t-sample-step"]) clear($(id));
  $("#t-end").hidden = true;
  $("#t-run-name").textContent = "none yet";
  $("#t-status").textContent = "";
  delete $("#t-status").dataset.status;
  $("#t-bar").style.width = "0";
  $("#t-cancel").hidden = true;
  $("#t-delete").hidden = true;
  draw(null);
}

function watch(id, name) {
  clearRun();
  if (name) $("#t-run-name").textContent = name; // until its status comes
  view = { id, curves: {}, held: {}, snapshots: new Map(), run: null, progress: {}, families: null, finished: null };
  state.set({ run: id });
  if (info) renderRuns();
  draw(view);
  const mine = view;
  const on = (fn) => (e) => { if (view === mine) fn(e); }; // a late event of a run no longer on screen is dropped
  stream = listen("/api/runs/" + encodeURIComponent(id) + "/events", {
    status: on(onStatus),
    start: on((e) => { arrange(e.families); $("#t-stats").textContent = "Loading PyTorch and the text…"; }),
    models: on((e) => { view.models = e.models; view.commands = e.commands; }),
    progress: on(onProgress),
    eval: on(onEval),
    sample: on((e) => showSample(view, e)),
    snapshot: on((e) => { view.snapshots.set(e.name, e); renderSnapshots(view); }),
    exporting: on(() => { view.exporting = true; renderStats(); }),
    finished: on(showFinished),
    error: on((e) => { if (e && e.message) $("#t-reason").textContent = e.message; }),
  });
  stream.onerror = () => { if (view && view.run && !RUNNING.includes(view.run.status)) stream.close(); };
}

function onStatus(run) {
  view.run = run;
  if (run.status === "deleted") { stream.close(); return; }
  $("#t-run-name").textContent = run.name;
  const badge = $("#t-status");
  badge.textContent = run.status;
  badge.dataset.status = run.status;
  const running = RUNNING.includes(run.status);
  const instructor = info && info.instructor;
  $("#t-cancel").hidden = !(instructor && running);
  $("#t-delete").hidden = !(instructor && !running && !run.shipped);
  $("#t-reason").textContent = run.shipped ? "An example run that comes with the app (read-only): " +
    "its snapshots show the models learning, with no training needed." : run.reason || "";
  if (!view.families && run.settings) arrange(run.settings.families);
  if (!running) {
    stream.close();
    if (run.status === "finished") $("#t-bar").style.width = "100%";
    refresh();
  }
  renderStats();
}

/* A progress line: values not known yet (no loss in the first second, 0 tokens/s from a model
   that had no turn) keep the last known ones instead of showing "–" or 0. */
function onProgress(e) {
  const p = view.progress[e.family] || {};
  p.step = e.step;
  const train = curve(e.family).train;
  if (Number.isFinite(e.loss)) {
    p.loss = e.loss;
    if (!train.length || train[train.length - 1][0] !== e.step) train.push([e.step, e.loss]); // a held value: one point
  }
  if (e.tokens_per_s > 0) p.tokens_per_s = e.tokens_per_s;
  view.progress[e.family] = p;
  view.clock = { elapsed: e.elapsed_s, remaining: e.remaining_s };
  $("#t-bar").style.width = `${Math.round(100 * e.fraction)}%`;
  renderStats();
  queueDraw();
}

function onEval(e) {
  curve(e.family).val.push([e.step, e.val_loss]);
  const h = pieces(e.family).heldOut; // the family's own held-out measure, if its piece has one
  const point = h && h.point(e);
  if (point) (view.held[e.family] ||= []).push([e.step, ...point]);
  queueDraw();
  if (view.snapshots.size) renderSnapshots(view); // the best snapshot may change
}

/* The line under the bar: live numbers while it runs, each model's steps once it has stopped. */
function renderStats() {
  const node = $("#t-stats");
  const status = view.run ? view.run.status : "running";
  const steps = {};
  for (const [fam, p] of Object.entries(view.progress)) steps[fam] = p.step;
  const done = stepsText(steps, view.families);
  if (view.finished) return;
  if (!RUNNING.includes(status)) {
    node.textContent = `Stopped (${status})` + (done ? ` at ${done}` : "") +
      (view.clock ? ` after ${clock(view.clock.elapsed)} of training.` : ".");
    return;
  }
  if (view.exporting) { node.textContent = "Training done: evaluating on held-out text and exporting the models…"; return; }
  if (!Object.keys(view.progress).length) return;
  const parts = Object.entries(view.progress).map(([fam, p]) => [`${label(fam)} step ${thousands(p.step)}`,
    p.loss !== undefined ? `loss ${num(p.loss, 3)}` : null,
    p.tokens_per_s !== undefined ? `${thousands(p.tokens_per_s)} tokens/s` : null].filter(Boolean).join(" · "));
  const c = view.clock;
  node.textContent = parts.join("   |   ") + (c ? `   |   elapsed ${clock(c.elapsed)}, remaining ${clock(c.remaining)}` : "");
}

function showFinished(e) {
  view.finished = e;
  $("#t-end").hidden = false;
  $("#t-stats").textContent = `Finished after ${clock(e.train_seconds || 0)} of training: ${stepsText(e.steps, view.families)}; ` +
    `the final models were playable ${num(e.playable_after_s || 0, 1)} s later.`;
  showMetrics(e);
  for (const [fam, m] of Object.entries(e.metrics || {})) { // a run recorded before live held-out points: its final one
    const h = pieces(fam).heldOut;
    if (!h || (view.held[fam] || []).length || !e.steps || e.steps[fam] === undefined) continue;
    view.held[fam] = [[e.steps[fam], ...h.final(m)]];
    queueDraw();
  }
}

/* The run's families: a loss figure and a live view each (the order the run names them). */
function arrange(names) {
  if (!names || !names.length) return;
  view.families = names;
  layout(names);
  views(names);
  queueDraw();
}

function curve(fam) {
  if (!view.curves[fam]) view.curves[fam] = { train: [], val: [] };
  return view.curves[fam];
}

/* The form's model checkboxes: every family the server can train, each with what it learns.
   GPT and BERT (the lesson's pair) start ticked; a family a set can do without (ELECTRA) does not. */
function renderFamilies() {
  const box = clear($("#t-families"));
  for (const f of known.filter((spec) => spec.trainable)) {
    box.append(el("label", {}, [el("input", { type: "checkbox", value: f.name, id: "t-family-" + f.name, checked: !f.optional }),
      ` ${f.label} `, el("span", { class: "hint", text: `(${f.objective})` })]));
  }
}

function queueDraw() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(() => { drawQueued = false; draw(view); });
}

function init() {
  for (const r of document.querySelectorAll("input[name=t-source]")) r.addEventListener("change", onSource);
  $("#t-file").addEventListener("change", onFile);
  $("#t-text").addEventListener("input", () => { $("#t-text-count").textContent = thousands($("#t-text").value.length); });
  $("#t-go").addEventListener("click", start);
  $("#t-new").addEventListener("click", newRun);
  $("#t-cancel").addEventListener("click", cancelOrDelete);
  $("#t-delete").addEventListener("click", cancelOrDelete);
  families().then((list) => {
    known = list;
    know(list);
    renderFamilies();
    if (info) { clear($("#t-presets")); renderPresets(); } // the presets' size hints name a family's size
    if (!view || !view.families) { // before a run is on screen: the lesson's pair, empty
      const names = known.filter((f) => f.trainable && !f.optional).map((f) => f.name);
      layout(names);
      views(names);
    }
    draw(view);
  }).catch(() => {});
  refresh();
  setInterval(refresh, 5000);
}

init();
