/* Home: the model cards of the set in use (GET /api/models, or the chosen `model` set), with key
   metrics and the loss curves drawn as inline SVG with axes, labels and a data table. Each figure
   says how it was measured: held-out plays (evaluation tables, validation loss), training batches
   (training loss), balanced pairs or the quiz bank (NSP). */
import { el, clear, $ } from "../lib/dom.js";
import { pct, num, thousands } from "../lib/text.js";
import { families, info } from "../lib/api.js";
import { know, pieces, spec } from "../families/index.js";
import { table, lossChart } from "../lib/charts.js";
import { withTerms } from "../lib/glossary.js";


function kv(rows) {
  return el("table", { class: "metrics" }, el("tbody", {}, rows.filter(Boolean).map(([k, value]) =>
    el("tr", {}, [el("th", { scope: "row", text: k }), el("td", { text: value })]))));
}

/* ---------- loss curves (lib/charts.js draws them) ---------- */
function cardChart(card) {
  const curves = (card.curves || []).filter((c) => Number.isFinite(c.step));
  const name = card.name.toUpperCase();
  return lossChart({ train: curves.map((c) => [c.step, c.train_loss]), val: curves.map((c) => [c.step, c.val_loss]) }, {
    id: "curve-" + card.name, title: name + " loss during training",
    desc: "Training loss on training batches (solid line, filled dots) and validation loss on held-out plays " +
      "(dashed line, open circles) against training step; the numbers are in the table below.",
    yLabel: pieces(card.family).chart.yLabel,
    valLabel: "validation loss, on held-out plays (dashed, ○)",
  });
}

function curveTable(card) {
  const curves = card.curves || [];
  const head = ["Step", "Tokens", "Training loss (training batches)", "Validation loss (held-out)"];
  // the parts of a loss made of several (BERT: MLM and NSP; ELECTRA: MLM and RTD), as recorded
  const parts = [...new Set(curves.flatMap((c) => Object.keys(c).filter((k) => k.startsWith("val_") && k !== "val_loss")))];
  for (const k of parts) head.push("Val " + k.slice(4).toUpperCase());
  return table(card.name.toUpperCase() + " loss curve numbers", head, curves.map((c) => {
    const row = [thousands(c.step), thousands(c.tokens), num(c.train_loss), num(c.val_loss)];
    for (const k of parts) row.push(Number.isFinite(c[k]) ? num(c[k]) : "–");
    return row;
  }));
}

/* Where it trained, in words: " on a graphics card (NVIDIA H200)" for a GPU run (the card's machine
   is "cuda (NAME)"), " on x86_64 CPU" for a CPU one. */
function where(tr) {
  if (tr.device === "cuda") return " on a graphics card, a GPU (" + String(tr.machine || "").replace(/^cuda \((.*)\)$/, "$1") + ")";
  return tr.machine ? " on " + tr.machine : "";
}

function modelCard(card, vocab) {
  const cfg = card.config || {};
  const corpus = card.corpus || {};
  const chars = corpus.characters || {};
  const tr = card.training || {};
  const onnx = card.onnx || {};
  const section = el("article", { class: "card model-card", dataset: { model: card.name } }, [
    el("h3", { text: card.name.toUpperCase() + ": " + card.objective }),
    kv([
      ["Attention", card.attention + (spec(card.family).sees ? " (" + spec(card.family).sees + ")" : "")], // the spec's words
      ["Parameters", thousands(card.parameters)],
      ["Shape", cfg.n_layer + " layers · " + cfg.n_head + " heads · width " + cfg.n_embd + " · feed-forward " + cfg.n_ff],
      ["Context", cfg.context + " characters"],
      ["Vocabulary", cfg.vocab_size + " tokens (" + vocab.chars.length + " characters + " + vocab.specials.length + " specials)"],
      ["Corpus", corpus.name + ": " + Object.entries(chars).map(([k, n]) => k + " " + thousands(n)).join(", ") + " characters"],
      ["Training", thousands(tr.steps) + " steps · " + thousands(tr.tokens) + " tokens · " + tr.seconds + " s" + where(tr)],
    ]),
    el("details", { class: "curious" }, [
      el("summary", { text: "For the curious: where the text came from, and the served file" }),
      kv([
        corpus.provenance ? ["Source", corpus.provenance] : null,
        ["ONNX file", onnx.file + " · " + thousands(onnx.bytes) + " bytes · agrees with the training code to " +
          Number(onnx.parity_max_abs_diff).toExponential(1) + " (largest difference in its outputs)"],
      ]),
    ]),
  ]);
  for (const m of (pieces(card.family).cardTables || (() => []))(card)) section.appendChild(m);
  section.appendChild(el("h4", { text: "Loss during training" }));
  section.appendChild(el("p", { class: "note" }, withTerms("Training loss is measured on the batches being trained on; " +
    "validation loss on held-out plays the model never trains on. Loss is counted in nats (lower is better).")));
  section.appendChild(cardChart(card));
  section.appendChild(curveTable(card));
  return section;
}

/* The Mask-Fill card's recipe sentence, from the BERT card. */
function recipeText(card) {
  const ev = card.evaluation || {};
  const r = (ev.validation || Object.values(ev)[0] || {}).recipe || {};
  const rate = Number.isFinite(r.mask_rate) ? r.mask_rate : (card.training || {}).mask_rate;
  if (!Number.isFinite(rate) || !Number.isFinite(r.mask)) return;
  const p = (x) => Math.round(x * 100) + "\u00a0%";
  for (const node of document.querySelectorAll(".recipe-text")) {
    node.textContent = p(rate) + " of characters selected; of those " + p(r.mask) + " [MASK], " + p(r.random) +
      " random, " + p(r.unchanged) + " unchanged";
  }
}

Promise.all([info(), families()]).then(([info, known]) => {
  know(known);
  const box = clear($("#h-cards"));
  for (const f of known) { // every family of the set, in the server's order (its spec; static/families/)
    if (info.cards[f.name]) box.appendChild(modelCard(info.cards[f.name], info.vocab));
  }
  if (info.cards.bert) recipeText(info.cards.bert);
  $("#h-status").textContent = "Model cards of " + (info.name || "the shipped set") + ". Evaluation tables: measured " +
    "on held-out plays the models never trained on. Loss curves: training loss on training batches, validation " +
    "loss on held-out plays. Parameters, steps and sizes are facts of the trained model.";
}).catch(() => {
  $("#h-status").textContent = "The model cards could not be loaded.";
});
