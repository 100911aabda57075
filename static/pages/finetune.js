/* The fine-tune lab (/finetune): start a fine-tune (instructor), watch its label-efficiency plot fill in
   live (GET /api/finetunes/{id}/events), read the same numbers in a table, try the exported classifiers.
   Every number drawn is one the API returned (the job's `summary`, or `so_far` until it arrives). */
import { el, svg, $ } from "../lib/dom.js";
import { showError, clearError } from "../lib/errors.js";
import { api, errorOf } from "../lib/api.js";

const ARM_TEXT = { full: "Pretrained + fine-tuned", probe: "Linear probe (frozen)", scratch: "From scratch" };
const ARMS = ["full", "probe", "scratch"];

/* Accuracies always with one decimal (the table and the API's numbers compare digit for digit). */
const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %");

/* ---------- the numbers: the API's summary, else its results so far ---------- */
function table(detail) {
  return detail.summary || detail.so_far || {};
}

/* x position of a size key: "all" is the job's whole training split. */
function xOf(key, detail) {
  if (key === "all") return (detail.start && detail.start.n_train) || null;
  const n = Number(key);
  return Number.isFinite(n) ? n : null;
}

function sortedKeys(numbers, detail) {
  const keys = new Set();
  for (const arm of Object.values(numbers)) for (const k of Object.keys(arm)) keys.add(k);
  return [...keys].sort((a, b) => (xOf(a, detail) ?? 1e12) - (xOf(b, detail) ?? 1e12));
}

/* ---------- a small SVG line plot with 95 % whiskers ---------- */
function plot(figure, series, opts) {
  figure.querySelector("svg")?.remove();
  const W = 560, H = 320, L = 56, R = 16, T = 16, B = 48;
  const xs = series.flatMap((s) => s.points.map((p) => p.x)).filter((x) => x !== null && x > 0);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": opts.label, class: "plot" });
  if (!xs.length) {
    root.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "plot-empty", text: opts.empty }));
    figure.prepend(root);
    return;
  }
  const logX = opts.logX;
  const fx = (x) => (logX ? Math.log(Math.max(x, 1)) : x);
  let x0 = Math.min(...xs.map(fx)), x1 = Math.max(...xs.map(fx));
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  const [y0, y1] = opts.yRange;
  const px = (x) => L + ((fx(x) - x0) / (x1 - x0)) * (W - L - R);
  const py = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const y = y0 + ((y1 - y0) * i) / 4;
    root.append(svg("line", { x1: L, x2: W - R, y1: py(y), y2: py(y), class: "grid" }),
      svg("text", { x: L - 6, y: py(y) + 4, "text-anchor": "end", class: "tick", text: opts.yTick(y) }));
  }
  for (const x of [...new Set(xs)]) {
    root.append(svg("text", { x: px(x), y: H - B + 18, "text-anchor": "middle", class: "tick", text: String(x) }));
  }
  root.append(svg("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "axis", text: opts.xLabel }));
  for (const s of series) {
    const pts = s.points.filter((p) => p.x !== null && p.mean !== null);
    if (s.flat !== undefined) {
      root.append(svg("line", { x1: L, x2: W - R, y1: py(s.flat), y2: py(s.flat), class: "line dashed " + s.cls }));
      continue;
    }
    if (pts.length > 1) {
      root.append(svg("polyline", { points: pts.map((p) => px(p.x) + "," + py(p.mean)).join(" "), class: "line " + s.cls }));
    }
    for (const p of pts) {
      if (p.lo !== null && p.lo !== undefined && p.hi !== null) {
        root.append(svg("line", { x1: px(p.x), x2: px(p.x), y1: py(Math.max(y0, p.lo)), y2: py(Math.min(y1, p.hi)),
          class: "whisker " + s.cls }));
      }
      root.append(svg("circle", { cx: px(p.x), cy: py(p.mean), r: 4, class: "dot " + s.cls },
        svg("title", { text: `${s.name}: ${opts.yTick(p.mean)} at ${p.x}` })));
    }
  }
  const legend = svg("g", { class: "legend" });
  series.forEach((s, i) => {
    legend.append(svg("rect", { x: L + 8, y: T + 4 + i * 18, width: 14, height: 4, class: "swatch " + s.cls }),
      svg("text", { x: L + 28, y: T + 10 + i * 18, class: "tick", text: s.name }));
  });
  root.append(legend);
  figure.prepend(root);
}

/* ---------- one job on screen ---------- */
const view = { id: null, detail: null, source: null, instructor: false, runs: {}, classTask: null };

function gptAccuracy(detail) {
  const g = detail.gpt_way;
  return g && typeof g.accuracy === "number" ? g.accuracy : null;
}

function renderTable(detail, numbers, keys) {
  const t = $("#ft-table");
  t.replaceChildren(el("caption", { text: "Held-out accuracy: mean [95 % interval] over seeds" }));
  const by = detail.by === "step" ? "Pretraining step" : "Labelled examples";
  t.append(el("thead", {}, el("tr", {}, [el("th", { scope: "col", text: by }),
    ...keys.map((k) => el("th", { scope: "col", text: k }))])));
  const body = el("tbody");
  for (const arm of ARMS.filter((a) => numbers[a])) {
    body.append(el("tr", { "data-arm": arm }, [el("th", { scope: "row", text: ARM_TEXT[arm] }), ...keys.map((k) => {
      const c = numbers[arm][k];
      const text = c ? pct(c.mean) + (c.lo !== null ? ` [${pct(c.lo)} – ${pct(c.hi)}]` : "") + ` (n=${c.n})` : "–";
      return el("td", { "data-size": k, text });
    })]));
  }
  const g = gptAccuracy(detail);
  if (detail.gpt_way) {
    body.append(el("tr", { "data-arm": "gpt" }, [el("th", { scope: "row", text: "GPT's way (no training)" }),
      ...keys.map((k) => el("td", { "data-size": k, text: pct(g) }))]));
  }
  t.append(body);
}

function gapSentence(detail, numbers, keys) {
  const p = $("#ft-gap");
  const both = keys.filter((k) => numbers.full?.[k] && numbers.scratch?.[k]);
  if (!both.length || detail.by === "step") { p.textContent = ""; return; }
  const k = both.includes("32") ? "32" : both[0];
  const full = numbers.full[k].mean, scratch = numbers.scratch[k].mean;
  // the trainer's paired difference (full minus scratch, seed by seed) once the summary is in
  const diff = detail.summary && detail.difference && detail.difference.by_size ? detail.difference.by_size[k] : null;
  const gap = 100 * (diff ? diff.mean : full - scratch);
  const range = diff && diff.lo !== null && diff.lo !== undefined
    ? ` (95 % interval of the difference, seed by seed: ${(100 * diff.lo).toFixed(1)} to ${(100 * diff.hi).toFixed(1)} points)` : "";
  const what = k === "all" ? "all the labelled examples" : `${k} labelled examples`;
  p.textContent = gap > 0
    ? `With ${what}, the pretrained model scores ${pct(full)} on held-out examples and the same model from scratch ` +
      `${pct(scratch)}: the gap of ${gap.toFixed(1)} points${range} is the pretraining advantage.`
    : `With ${what}, the pretrained model scores ${pct(full)} and the model from scratch ${pct(scratch)}: ` +
      `here pretraining bought no advantage (${gap.toFixed(1)} points${range}).`;
}

async function renderOverTime(detail, numbers, keys) {
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
      `labels ${(start.labels || []).join(", ")} · ${start.n_train} training and ${start.n_test} held-out examples`
    : "starting…";
  $("#ft-how").textContent = start.how || "";
  const active = detail.status === "queued" || detail.status === "running";
  $("#ft-cancel").hidden = !(view.instructor && active);
  $("#ft-delete").hidden = !(view.instructor && !active);
  const numbers = table(detail);
  const keys = sortedKeys(numbers, detail);
  const series = ARMS.filter((a) => numbers[a]).map((arm) => ({ name: ARM_TEXT[arm], cls: "arm-" + arm,
    points: keys.filter((k) => numbers[arm][k]).map((k) => ({ x: xOf(k, detail), ...numbers[arm][k] })) }));
  const g = gptAccuracy(detail);
  if (g !== null) series.push({ name: "GPT's way (no training)", cls: "arm-gpt", flat: g, points: [] });
  const steps = detail.by === "step";
  $("#ft-plot-caption").textContent = steps
    ? "Held-out accuracy against pretraining steps of the snapshot fine-tuned: mean and 95 % interval per arm"
    : "Held-out accuracy against the number of labelled examples: mean and 95 % interval per arm";
  plot($("#ft-plot"), series, { label: "Held-out accuracy per arm", logX: !steps, yRange: [0, 1],
    xLabel: steps ? "pretraining steps" : "labelled examples (log scale)", yTick: (y) => Math.round(100 * y) + " %",
    empty: detail.done ? "" : "the first point appears when the first fine-tune finishes" });
  renderTable(detail, numbers, keys);
  gapSentence(detail, numbers, keys);
  renderOverTime(detail, numbers, keys).catch((e) => showError(e.message));
  $("#ft-gpt").hidden = !detail.gpt_way;
  if (detail.gpt_way) {
    const gw = detail.gpt_way;
    $("#ft-gpt-result").textContent = g !== null
      ? `GPT's held-out accuracy: ${pct(g)}` + (gw.chance ? ` (chance: ${pct(gw.chance)})` : "") +
        (gw.model ? ` · model ${gw.model}` : "")
      : "not measured: " + (gw.why || gw.reason || gw.message || "no answer for this task");
    if (gw.method) $("#ft-gpt-result").textContent += " · how: " + gw.method;
  }
  const ready = (detail.classifiers || []).filter((c) => c.model);
  $("#ft-classify").disabled = !ready.length;
  $("#ft-answers").dataset.ready = String(ready.length);
}

function watch(id) {
  view.source?.close();
  view.id = id;
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
  const cards = await Promise.all(ready.map(async (c) => {
    try {
      return answerCard(c, await api("/api/classify", { body: { model: c.model, text }, model: false, quiet: true }));
    } catch (e) {
      return el("div", { class: "answer", "data-arm": c.arm }, [el("h3", { text: ARM_TEXT[c.arm] || c.arm }),
        el("p", { class: "error-box", text: e.message })]);
    }
  }));
  box.replaceChildren(...cards);
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
  const berts = models.sets.filter((s) => (s.families || []).includes("bert"));
  $("#ft-model").replaceChildren(...berts.map((s) => el("option", { value: s.id, "data-run": s.run || "", text: s.name })));
  $("#ft-task").replaceChildren(...tasks.tasks.map((t) => el("option", { value: t.name,
    text: t.title || t.description ? `${t.name}: ${t.title || t.description}` : t.name })),
  el("option", { value: "", text: "Upload a task file…" }));
  const params = new URLSearchParams(location.search);
  if (berts.some((s) => s.id === params.get("model"))) $("#ft-model").value = params.get("model");
  if (params.get("snapshots") === "1") $("#ft-snapshots").checked = true;
  const sync = () => {
    $("#ft-upload-box").hidden = $("#ft-task").value !== "";
    const fromRun = !!$("#ft-model").selectedOptions[0]?.dataset.run;
    $("#ft-snapshots").disabled = !fromRun;
    if (!fromRun) $("#ft-snapshots").checked = false;
  };
  $("#ft-task").addEventListener("change", sync);
  $("#ft-model").addEventListener("change", sync);
  sync();
  $("#ft-start").hidden = false;
  if (params.get("class")) await classLabels(params.get("class"), sync);
}

/* Label together -> fine-tune: /finetune?class=CODE (the class page's button) takes the session's
   pooled labels (GET /api/sessions/{code}/labels.jsonl, instructor only) as the uploaded task file;
   choosing a file instead replaces them. */
async function classLabels(code, sync) {
  const info = $("#ft-file-info");
  $("#ft-task").value = "";
  sync();
  try {
    const r = await fetch("/api/sessions/" + encodeURIComponent(code) + "/labels.jsonl", { credentials: "same-origin" });
    if (!r.ok) throw await errorOf(r);
    const text = await r.text();
    const n = text.split("\n").filter((line) => line.trim()).length;
    view.classTask = { text, name: "class " + code + " labels", lines: n };
    info.dataset.class = code;
    info.textContent = `Ready: the pooled labels of class ${code}, ${n} labelled line${n === 1 ? "" : "s"} ` +
      "(the class's majority per line). Start fine-tuning, or choose a file to use instead.";
  } catch (e) {
    view.classTask = null;
    info.textContent = `The labels of class ${code} could not be loaded: ${e.message}`;
  }
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
  }
  note.textContent = "starting…";
  try {
    const job = await api("/api/finetunes", { body, model: false, quiet: true });
    note.textContent = "";
    await loadJobs();
    watch(job.id);
  } catch (e) {
    note.textContent = e.message;
  }
}

async function main() {
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
  if (id) watch(id);
  else plot($("#ft-plot"), [], { label: "Held-out accuracy per arm", yRange: [0, 1], yTick: String, xLabel: "",
    empty: "no fine-tune yet: the instructor starts one above" });
}

main().catch((e) => showError(e.message));
