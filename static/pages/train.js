/* Live pretraining (/train): start a run (instructor), watch any run live over server-sent events
   (history first, so late joiners see the whole run), compare snapshots, open them in the applets.
   Everything the server sends is shown as text (textContent), never as markup.
   URL: run (the run on screen). */
import { el, clear, $ } from "../lib/dom.js";
import { num, thousands } from "../lib/text.js";
import { showError, clearError } from "../lib/errors.js";
import { api } from "../lib/api.js";
import { urlState } from "../lib/state.js";
import { listen } from "../lib/stream.js";
import { lossChart } from "../lib/charts.js";

const state = urlState({ run: "" });
let info = null; // GET /api/runs
let stream = null; // EventSource of the run on screen
let view = null; // {id, curves, snapshots, run}
let preset = null;
let fileText = null;
let drawQueued = false;
let lastActive = null; // a run that starts while the page is open is shown at once

/* ---------- runs list and the start form ---------- */
async function refresh() {
  info = await api("/api/runs", { quiet: true }).catch(() => null);
  if (!info) return;
  const canTrain = info.training_available && !info.storage_problem;
  const off = $("#t-disabled");
  off.hidden = canTrain;
  off.textContent = info.enable || info.storage_problem || "";
  $("#t-start").hidden = !(canTrain && info.instructor);
  $("#t-login").hidden = info.instructor || !canTrain;
  renderPresets();
  renderRuns();
  if (!view) {
    const id = state.values.run || info.active || (info.runs[0] && info.runs[0].id);
    if (id) watch(id);
  } else if (info.active && info.active !== lastActive && info.active !== view.id) {
    watch(info.active);
  }
  lastActive = info.active;
}

function renderPresets() {
  if ($("#t-presets").childElementCount === info.presets.length) return; // keep focus and choice
  const box = clear($("#t-presets"));
  if (!preset && info.presets.length) preset = (info.presets.find((p) => p.name === "1min") || info.presets[0]).name;
  for (const p of info.presets) {
    const size = p.gpt ? `${p.gpt.n_layer} layers × ${p.gpt.n_embd}` : "";
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
  const body = { families: [], preset };
  if ($("#t-gpt").checked) body.families.push("gpt");
  if ($("#t-bert").checked) body.families.push("bert");
  if (!body.families.length) { showError("choose GPT, BERT or both"); return; }
  if (source() === "paste") body.corpus = $("#t-text").value;
  if (source() === "file") {
    if (fileText === null) { showError($("#t-file-info").textContent || "choose a UTF-8 .txt file first"); return; }
    body.corpus = fileText;
  }
  const name = $("#t-name").value.trim() || (source() === "file" && $("#t-file").files[0] ? $("#t-file").files[0].name.replace(/\.txt$/i, "") : "");
  if (name) body.name = name.slice(0, 60);
  const button = $("#t-go");
  button.disabled = true;
  try {
    const run = await api("/api/runs", { body });
    $("#t-start-note").textContent = "Started.";
    watch(run.id);
    refresh();
  } catch (err) {
    /* api() has shown the server's sentence */
  } finally {
    button.disabled = false;
  }
}

async function cancelOrDelete() {
  if (!view) return;
  const running = view.run && ["queued", "running"].includes(view.run.status);
  if (!running && !window.confirm("Delete this run and its models?")) return;
  try {
    await api("/api/runs/" + encodeURIComponent(view.id), { method: "DELETE" });
    if (!running) { view = null; state.set({ run: "" }); clearRun(); }
    refresh();
  } catch (err) { /* shown */ }
}

/* ---------- one run, live ---------- */
function clearRun() {
  if (stream) stream.close();
  stream = null;
  for (const id of ["#t-gpt-sample", "#t-bert-masked", "#t-bert-fill", "#t-snapshots", "#t-metrics", "#t-commands", "#t-stats", "#t-reason"]) clear($(id));
  $("#t-end").hidden = true;
  $("#t-run-name").textContent = "none yet";
  $("#t-status").textContent = "";
  $("#t-bar").style.width = "0";
  draw();
}

function watch(id) {
  clearRun();
  view = { id, curves: { gpt: { train: [], val: [] }, bert: { train: [], val: [] } }, snapshots: new Map(), run: null, fractions: {} };
  state.set({ run: id });
  if (info) renderRuns();
  stream = listen("/api/runs/" + encodeURIComponent(id) + "/events", {
    status: onStatus,
    start: (e) => { $("#t-stats").textContent = "Loading PyTorch and the text…"; view.families = e.families; },
    models: (e) => { view.models = e.models; view.commands = e.commands; },
    progress: onProgress,
    eval: (e) => { view.curves[e.family].val.push([e.step, e.val_loss]); queueDraw(); },
    sample: showSample,
    snapshot: (e) => { view.snapshots.set(e.name, e); renderSnapshots(); },
    exporting: () => { $("#t-stats").textContent = "Training done: evaluating on held-out text and exporting the models…"; },
    finished: showFinished,
    error: (e) => { if (e && e.message) $("#t-reason").textContent = e.message; },
  });
  stream.onerror = () => { if (view && view.run && !["queued", "running"].includes(view.run.status)) stream.close(); };
}

function onStatus(run) {
  if (!view) return;
  view.run = run;
  if (run.status === "deleted") { stream.close(); return; }
  $("#t-run-name").textContent = run.name;
  const badge = $("#t-status");
  badge.textContent = run.status;
  badge.dataset.status = run.status;
  $("#t-reason").textContent = run.reason || "";
  const running = ["queued", "running"].includes(run.status);
  const instructor = info && info.instructor;
  $("#t-cancel").hidden = !(instructor && running);
  $("#t-delete").hidden = !(instructor && !running && !run.shipped);
  $("#t-reason").textContent = run.shipped ? "An example run that comes with the app (read-only): " +
    "its snapshots show the models learning, with no training needed." : run.reason || "";
  if (!running) {
    stream.close();
    if (run.status === "finished") $("#t-bar").style.width = "100%";
    refresh();
  }
}

function onProgress(e) {
  view.curves[e.family].train.push([e.step, e.loss]);
  view.fractions[e.family] = e;
  const parts = Object.entries(view.fractions).map(([fam, p]) =>
    `${fam.toUpperCase()} step ${thousands(p.step)} · loss ${p.loss === null ? "–" : num(p.loss, 3)} · ${thousands(p.tokens_per_s)} tokens/s`);
  $("#t-stats").textContent = parts.join("   |   ") + `   |   elapsed ${clock(e.elapsed_s)}, remaining ${clock(e.remaining_s)}`;
  $("#t-bar").style.width = `${Math.round(100 * e.fraction)}%`;
  queueDraw();
}

function clock(s) {
  const m = Math.floor(s / 60);
  return `${m}:${String(Math.floor(s % 60)).padStart(2, "0")}`;
}

function showSample(e) {
  $("#t-sample-step").textContent = `(step ${thousands(e.step)}, ${clock(e.elapsed_s || 0)})`;
  fillSample($("#t-gpt-sample"), e.gpt);
  fillBert($("#t-bert-masked"), $("#t-bert-fill"), e.bert);
}

function fillSample(node, g) {
  clear(node);
  if (!g) { node.textContent = "(no GPT in this run)"; return; }
  node.append(el("strong", { text: g.prompt }), g.text);
}

function fillBert(maskedNode, fillNode, b) {
  clear(maskedNode);
  clear(fillNode);
  if (!b) { maskedNode.textContent = "(no BERT in this run)"; return; }
  maskedNode.textContent = b.masked;
  const at = new Map(b.guesses.map((g) => [g.position, g]));
  [...b.filled].forEach((ch, i) => {
    const g = at.get(i);
    fillNode.append(g ? el("mark", { class: g.char === g.truth ? "fill-ok" : "fill-bad",
                                     title: `guess ${g.char} (${num(100 * g.prob, 0)} %), truth ${g.truth}`, text: ch }) : ch);
  });
  fillNode.append(el("span", { class: "note", text: `   ${b.correct} of ${b.guesses.length} right` }));
}

function renderSnapshots() {
  const box = clear($("#t-snapshots"));
  const items = [...view.snapshots.values()].sort((a, b) => (a.final - b.final) || (a.step - b.step));
  for (const s of items) {
    const id = s.final ? view.id : `${view.id}@${s.step}`;
    const card = el("div", { class: "snapshot" }, [el("h3", { text: s.final ? `Final (step ${thousands(s.step)})` : `Step ${thousands(s.step)} (${num(100 * s.fraction, 0)} %)` })]);
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

function showFinished(e) {
  $("#t-end").hidden = false;
  const steps = Object.entries(e.steps || {}).map(([fam, n]) => `${fam.toUpperCase()} ${thousands(n)} steps`).join(", ");
  $("#t-stats").textContent = `Finished: ${steps} in ${clock(e.train_seconds || 0)} of training; ` +
    `the final models were playable ${num(e.playable_after_s || 0, 1)} s later.`;
  const box = clear($("#t-metrics"));
  const rows = [];
  if (e.metrics.gpt) rows.push(["GPT", "nats per character (perplexity)", `${num(e.metrics.gpt.nats_per_char, 3)} (${num(e.metrics.gpt.perplexity, 2)})`]);
  if (e.metrics.bert) {
    const b = e.metrics.bert;
    rows.push(["BERT", "masked top-1 / top-5", `${num(100 * b.masked_top1, 1)} % / ${num(100 * b.masked_top5, 1)} %`]);
    rows.push(["BERT", "unigram baseline top-1", `${num(100 * b.unigram_baseline.masked_top1, 1)} %`]);
    if (b.nsp_accuracy !== undefined) rows.push(["BERT", "NSP accuracy", `${num(100 * b.nsp_accuracy, 1)} %`]);
  }
  box.append(el("table", {}, [el("caption", { text: "On the run's own held-out part of the text (never trained on)" }),
    el("tr", {}, ["model", "metric", "value"].map((h) => el("th", { text: h }))),
    ...rows.map((r) => el("tr", {}, r.map((c) => el("td", { text: c }))))]));
  const cmds = e.commands || {};
  $("#t-commands").textContent = Object.entries(cmds).map(([k, v]) => `# ${k}\n${v}`).join("\n\n");
}

/* ---------- loss curves (lib/charts.js draws them) ---------- */
function queueDraw() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(() => { drawQueued = false; draw(); });
}

const Y_LABEL = { gpt: "loss (nats per char)", bert: "loss (MLM + NSP, nats)" };

function draw() {
  for (const fam of ["gpt", "bert"]) {
    const fig = $("#t-chart-" + fam);
    const old = fig.querySelector("svg");
    if (old) old.remove();
    const c = view ? view.curves[fam] : { train: [], val: [] };
    fig.append(lossChart({ train: c.train, val: c.val }, { id: "t-curve-" + fam, width: 420, height: 240,
      title: fam.toUpperCase() + " loss curve", yLabel: Y_LABEL[fam], empty: "No " + fam.toUpperCase() + " curve yet",
      trainLabel: "training loss (solid, ●)", valLabel: "validation loss, held-out text (dashed, ○)" }));
  }
}

function init() {
  for (const r of document.querySelectorAll("input[name=t-source]")) r.addEventListener("change", onSource);
  $("#t-file").addEventListener("change", onFile);
  $("#t-text").addEventListener("input", () => { $("#t-text-count").textContent = thousands($("#t-text").value.length); });
  $("#t-go").addEventListener("click", start);
  $("#t-cancel").addEventListener("click", cancelOrDelete);
  $("#t-delete").addEventListener("click", cancelOrDelete);
  draw();
  refresh();
  setInterval(refresh, 5000);
}

init();
