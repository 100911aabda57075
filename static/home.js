/* Home: the model cards of the set in use (GET /api/models, or the chosen `model` set), with key
   metrics and the loss curves drawn as inline SVG with axes, labels and a data table. Each figure
   says how it was measured: held-out plays (evaluation tables, validation loss), training batches
   (training loss), balanced pairs or the quiz bank (NSP). */
"use strict";

(function () {
  const { el, svg, $, clear, pct, num, thousands } = PP;

  function kv(rows) {
    return el("table", { class: "metrics" }, el("tbody", {}, rows.filter(Boolean).map(([k, value]) =>
      el("tr", {}, [el("th", { scope: "row", text: k }), el("td", { text: value })]))));
  }

  function splits(card) {
    const keys = Object.keys(card.evaluation || {});
    return keys.sort((a, b) => (a === "validation" ? -1 : b === "validation" ? 1 : a.localeCompare(b)));
  }

  /* "validation (macbeth, twelfth_night)": which held-out plays a split is. */
  function splitName(card, s) {
    const docs = (card.evaluation[s] || {}).documents || [];
    return docs.length ? s + " (" + docs.join(", ").replace(/_/g, " ") + ")" : s;
  }

  function gptMetrics(card) {
    const names = splits(card);
    return PP.table("GPT on held-out plays, never trained on (lower is better)", ["Split", "Nats per char", "Bits per char", "Perplexity"],
      names.map((s) => {
        const e = card.evaluation[s];
        return [splitName(card, s), num(e.nats_per_char), num(e.bits_per_char), num(e.perplexity, 2)];
      }), true);
  }

  function bertMetrics(card) {
    const names = splits(card);
    const head = ["Model"];
    for (const s of names) head.push("Top-1 (" + s + ")", "Top-5 (" + s + ")");
    const row = (label, pick) => [label].concat(...names.map((s) => {
      const e = pick(card.evaluation[s]) || {};
      return [pct(e.masked_top1 || 0), pct(e.masked_top5 || 0)];
    }));
    const masked = PP.table("BERT masked-character accuracy on held-out plays (" + names.map((s) => splitName(card, s)).join("; ") +
      "; higher is better)", head, [
      row("Trained BERT", (e) => e),
      row("Same architecture, random init", (e) => e.random_init),
      row("Unigram baseline (most frequent chars)", (e) => e.unigram_baseline),
    ], true);
    const pairs = names.map((s) => card.evaluation[s].nsp_pairs).filter(Number.isFinite);
    const nsp = PP.table("Next-sentence prediction accuracy on balanced pairs from held-out plays (" +
      (pairs.length ? PP.thousands(pairs[0]) + " pairs per split, " : "") + "half true continuations, half from " +
      "elsewhere; chance = 50 %)", ["Model"].concat(names),
      [["Trained BERT"].concat(names.map((s) => pct(card.evaluation[s].nsp_accuracy || 0))),
        ["Random init"].concat(names.map((s) => pct((card.evaluation[s].random_init || {}).nsp_accuracy || 0)))], true);
    const out = [masked, nsp];
    const quiz = card.quiz;
    if (quiz && Number.isFinite(quiz.accuracy)) {
      const items = quiz.items || quiz.n || quiz.count;
      out.push(el("p", { class: "quiz-figure" }, ["On the NSP Quiz's own question bank" +
        (Number.isFinite(items) ? " (" + PP.thousands(items) + " questions)" : "") + ", BERT answers ",
        el("strong", { text: pct(quiz.accuracy) }), " correctly (the figure the quiz page compares you with)."]));
    }
    return out;
  }

  /* ---------- loss curves ---------- */
  function niceTicks(lo, hi, count) {
    const span = hi - lo || 1;
    const raw = span / count;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= count) || 10 * mag;
    const ticks = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
    return ticks;
  }

  function lossChart(card) {
    const curves = (card.curves || []).filter((c) => Number.isFinite(c.step));
    const W = 480, H = 290, L = 56, R = 14, T = 46, B = 46;
    const name = card.name.toUpperCase();
    const id = "curve-" + card.name;
    const plot = svg("svg", { class: "loss-chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": id + "-t " + id + "-d" });
    plot.appendChild(svg("title", { id: id + "-t", text: name + " loss during training" }));
    plot.appendChild(svg("desc", { id: id + "-d", text: "Training loss on training batches (solid line, filled circles) and " +
      "validation loss on held-out plays (dashed line, open squares) against training step; the numbers are in the table below." }));
    if (!curves.length) {
      plot.appendChild(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", text: "No curve recorded" }));
      return plot;
    }
    const values = curves.flatMap((c) => [c.train_loss, c.val_loss]).filter(Number.isFinite);
    const xMax = Math.max(...curves.map((c) => c.step));
    let yMin = Math.min(...values), yMax = Math.max(...values);
    const pad = (yMax - yMin) * 0.05 || 0.1;
    yMin = Math.max(0, yMin - pad);
    yMax += pad;
    const x = (s) => L + (s / (xMax || 1)) * (W - L - R);
    const y = (l) => T + (1 - (l - yMin) / (yMax - yMin)) * (H - T - B);
    for (const t of niceTicks(yMin, yMax, 5)) {
      plot.appendChild(svg("line", { class: "gridline", x1: L, x2: W - R, y1: y(t), y2: y(t) }));
      plot.appendChild(svg("text", { x: L - 6, y: y(t) + 4, "text-anchor": "end", text: String(t) }));
    }
    for (const t of niceTicks(0, xMax, 5)) {
      plot.appendChild(svg("line", { class: "axis", x1: x(t), x2: x(t), y1: H - B, y2: H - B + 4 }));
      plot.appendChild(svg("text", { x: x(t), y: H - B + 16, "text-anchor": "middle", text: thousands(t) }));
    }
    plot.appendChild(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
    plot.appendChild(svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
    plot.appendChild(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", text: "training step" }));
    plot.appendChild(svg("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", transform: "rotate(-90 14 " + (T + H - B) / 2 + ")",
      text: card.family === "bert" ? "loss (MLM + NSP, nats)" : "loss (nats per char)" }));
    const series = [["train_loss", "train", (px, py) => svg("circle", { class: "train-pt", cx: px, cy: py, r: 2.8 })],
      ["val_loss", "val", (px, py) => svg("rect", { class: "val-pt", x: px - 3, y: py - 3, width: 6, height: 6 })]];
    for (const [field, cls, marker] of series) {
      const pts = curves.filter((c) => Number.isFinite(c[field]));
      if (!pts.length) continue;
      plot.appendChild(svg("polyline", { class: cls, points: pts.map((c) => x(c.step).toFixed(1) + "," + y(c[field]).toFixed(1)).join(" ") }));
      const every = Math.max(1, Math.ceil(pts.length / 25));
      pts.forEach((c, i) => { if (i % every === 0 || i === pts.length - 1) plot.appendChild(marker(x(c.step), y(c[field]))); });
    }
    const legend = svg("g", { transform: "translate(" + (L + 8) + ",12)" }, [
      svg("line", { class: "train", x1: 0, x2: 22, y1: 0, y2: 0 }), svg("circle", { class: "train-pt", cx: 11, cy: 0, r: 2.8 }),
      svg("text", { x: 28, y: 4, text: "training loss, on training batches (solid, ●)" }),
      svg("line", { class: "val", x1: 0, x2: 22, y1: 17, y2: 17 }), svg("rect", { class: "val-pt", x: 8, y: 14, width: 6, height: 6 }),
      svg("text", { x: 28, y: 21, text: "validation loss, on held-out plays (dashed, □)" }),
    ]);
    plot.appendChild(legend);
    return plot;
  }

  function curveTable(card) {
    const curves = card.curves || [];
    const head = ["Step", "Tokens", "Training loss (training batches)", "Validation loss (held-out)"];
    const bert = card.family === "bert";
    if (bert) head.push("Val MLM", "Val NSP");
    return PP.table(card.name.toUpperCase() + " loss curve numbers", head, curves.map((c) => {
      const row = [thousands(c.step), thousands(c.tokens), num(c.train_loss), num(c.val_loss)];
      if (bert) row.push(Number.isFinite(c.val_mlm) ? num(c.val_mlm) : "–", Number.isFinite(c.val_nsp) ? num(c.val_nsp) : "–");
      return row;
    }));
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
        ["Attention", card.attention + (card.attention === "causal" ? " (sees only the past)" : " (sees both sides)")],
        ["Parameters", thousands(card.parameters)],
        ["Shape", cfg.n_layer + " layers · " + cfg.n_head + " heads · width " + cfg.n_embd + " · feed-forward " + cfg.n_ff],
        ["Context", cfg.context + " characters"],
        ["Vocabulary", cfg.vocab_size + " tokens (" + vocab.chars.length + " characters + " + vocab.specials.length + " specials)"],
        ["Corpus", corpus.name + ": " + Object.entries(chars).map(([k, n]) => k + " " + thousands(n)).join(", ") + " characters"],
        corpus.provenance ? ["Source", corpus.provenance] : null,
        ["Training", thousands(tr.steps) + " steps · " + thousands(tr.tokens) + " tokens · " + tr.seconds + " s" + (tr.machine ? " on " + tr.machine : "")],
        ["ONNX", onnx.file + " · " + thousands(onnx.bytes) + " bytes · parity " + Number(onnx.parity_max_abs_diff).toExponential(1)],
      ]),
    ]);
    const metrics = card.family === "gpt" ? [gptMetrics(card)] : bertMetrics(card);
    for (const m of metrics) section.appendChild(m);
    section.appendChild(el("h4", { text: "Loss during training" }));
    section.appendChild(el("p", { class: "note", text: "Training loss is measured on the batches being trained on; " +
      "validation loss on held-out plays the model never trains on." }));
    section.appendChild(lossChart(card));
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

  PP.info().then((info) => {
    const box = clear($("#h-cards"));
    for (const name of ["gpt", "bert"]) {
      if (info.cards[name]) box.appendChild(modelCard(info.cards[name], info.vocab));
    }
    if (info.cards.bert) recipeText(info.cards.bert);
    $("#h-status").textContent = "Model cards of " + (info.name || "the shipped set") + ". Evaluation tables: measured " +
      "on held-out plays the models never trained on. Loss curves: training loss on training batches, validation " +
      "loss on held-out plays. Parameters, steps and sizes are facts of the trained model.";
  }).catch(() => {
    $("#h-status").textContent = "The model cards could not be loaded.";
  });
})();
