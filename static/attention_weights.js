/* The attention page's second half (lesson helper's file; attention.js draws the rule): the real
   attention weights from POST /api/attention for the text and [PAD] slots chosen above, as heatmaps
   over the same grid, per layer and head or their mean, with a table of the followed row.
   URL: layer, head (-1 = mean), vals; it reads text, pad and row from the page's own controls. */
"use strict";

(function () {
  const { el, $, clear, pct, num, charName, visibleChar, debounce, api, clearError } = PP;
  const state = PP.urlState({ layer: -1, head: -1, vals: false, model: "" });
  const v = state.values;
  const SHORT = { "[CLS]": "[C]", "[SEP]": "[S]", "[PAD]": "[P]" };
  let data = null;
  let request = 0;

  const textBox = $("#a-text");
  const padSlider = $("#a-pad");
  const rowSlider = $("#a-row");
  const layerSel = $("#aw-layer");
  const headSel = $("#aw-head");

  const label = (t) => SHORT[t] || visibleChar(t);
  const longName = (t) => (SHORT[t] ? t : charName(t));

  /* the server sends the chosen layer/head (or their mean) for each model: (query, key) */
  const matrix = (m) => m.weights;

  function colour(w) {
    // white -> navy (#0b2e5c); sqrt so small weights still show
    const t = Math.sqrt(Math.max(0, Math.min(1, w)));
    const c = (a, b) => Math.round(a + (b - a) * t);
    return "rgb(" + c(255, 11) + "," + c(255, 46) + "," + c(255, 92) + ")";
  }

  function heatmap(container, title, tokens, w, allowed, focus) {
    const rows = tokens.map((q, i) => el("tr", { class: i === focus ? "focus-row" : null }, [
      el("th", { scope: "row", title: longName(q) + " at " + i, text: label(q) }),
    ].concat(tokens.map((k, j) => {
      if (!allowed(i, j)) {
        return el("td", { class: "blocked", title: longName(q) + " → " + longName(k) + ": blocked (weight " + num(w[i][j], 4) + ")" },
          el("span", { class: "sr-only", text: "blocked" }));
      }
      const td = el("td", { title: longName(q) + " → " + longName(k) + ": " + pct(w[i][j], 1) },
        el("span", { class: "v", text: Math.round(w[i][j] * 100) }));
      td.style.background = colour(w[i][j]);
      if (w[i][j] > 0.45) td.style.color = "#fff";
      return td;
    }))));
    const table = el("table", { class: "heat" + (v.vals ? " show-values" : ""), "aria-label": title }, [
      el("caption", { text: title }),
      el("thead", {}, el("tr", {}, [el("th", { scope: "col", text: "q\\k" })].concat(
        tokens.map((k, j) => el("th", { scope: "col", title: longName(k) + " at " + j, text: label(k) }))))),
      el("tbody", {}, rows),
    ]);
    clear(container).appendChild(table);
  }

  function which() {
    const l = v.layer < 0 ? "mean of all layers" : "layer " + (v.layer + 1);
    const h = v.head < 0 ? "mean of the heads" : "head " + (v.head + 1);
    return l + ", " + h;
  }

  function draw() {
    if (!data) return;
    const focus = Number(rowSlider.value) || 0;
    const g = data.gpt, b = data.bert;
    const gw = matrix(g), bw = matrix(b);
    heatmap($("#aw-gpt"), "GPT · " + which(), g.tokens, gw, (i, j) => j <= i, focus);
    heatmap($("#aw-bert"), "BERT · " + which(), b.tokens, bw, (i, j) => b.tokens[j] !== "[PAD]", focus + 1);
    $("#aw-status").textContent = "Live from the inspection graphs of the selected models. They agree with the served " +
      "models' logits to " + g.served_logits_max_abs_diff.toExponential(1) + " (GPT) and " +
      b.served_logits_max_abs_diff.toExponential(1) + " (BERT); every row sums to 1 within " +
      Math.max(g.row_sum_max_error, b.row_sum_max_error).toExponential(1) + "; the largest weight on a blocked cell is " +
      Math.max(g.blocked_max, b.blocked_max) + ".";
    const t = clear($("#aw-table"));
    const q = g.tokens[focus];
    if (q === undefined) return;
    const keys = b.tokens.map((k, j) => [j, k]);
    t.appendChild(PP.table("Weights of the followed character " + charName(q) + " (position " + focus + "), " + which(),
      ["Key", "GPT", "BERT"], keys.map(([j, k]) => {
        const gi = j - 1; // BERT's key j is text position j - 1 ([CLS] first)
        const gv = gi >= 0 && gi < g.tokens.length ? (gi <= focus ? pct(gw[focus][gi], 1) : "blocked") : "–";
        const bv = k === "[PAD]" ? "blocked" : pct(bw[focus + 1][j], 1);
        return [longName(k) + " (" + j + ")", gv, bv];
      })));
  }

  function fillSelect(sel, n, word, current) {
    clear(sel);
    sel.appendChild(el("option", { value: "-1", text: word === "layer" ? "mean of all layers" : "mean of the heads" }));
    for (let i = 0; i < n; i++) sel.appendChild(el("option", { value: String(i), text: word + " " + (i + 1) }));
    sel.value = String(current);
  }

  async function load() {
    const text = [...textBox.value].slice(0, 24).join("");
    if (!text) {
      data = null;
      clear($("#aw-gpt"));
      clear($("#aw-bert"));
      $("#aw-status").textContent = "Type some text above to see the weights.";
      return;
    }
    const id = ++request;
    const body = { text, pad: Number(padSlider.value) || 0, layer: Math.round(v.layer), head: Math.round(v.head) };
    if (v.model) body.model = v.model;
    try {
      const r = await api("/api/attention", { body });
      if (id !== request) return;
      clearError();
      data = r;
      fillSelect(layerSel, r.gpt.n_layer, "layer", v.layer);
      fillSelect(headSel, r.gpt.n_head, "head", v.head);
      state.write();
      draw();
    } catch (err) {
      // A shared link's layer or head beyond this model set's size: show the mean instead.
      if (id === request && (err.parameter === "layer" || err.parameter === "head") && v[err.parameter] !== -1) {
        state.set({ [err.parameter]: -1 });
        clearError();
        load();
      } /* anything else is shown in the error box */
    }
  }

  const reload = debounce(load, 250);
  textBox.addEventListener("input", reload);
  padSlider.addEventListener("input", reload);
  rowSlider.addEventListener("input", draw);
  $("#a-reset").addEventListener("click", () => setTimeout(load, 0));
  layerSel.addEventListener("change", () => { state.set({ layer: Number(layerSel.value) }); load(); });
  headSel.addEventListener("change", () => { state.set({ head: Number(headSel.value) }); load(); });
  const vals = $("#aw-values");
  vals.checked = Boolean(v.vals);
  vals.addEventListener("change", () => { state.set({ vals: vals.checked }); draw(); });
  document.addEventListener("keydown", (e) => {
    if (!data || PP.typingTarget(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
    const step = (sel, key, n, d) => {
      const next = ((v[key] + 1 + d + n + 1) % (n + 1)) - 1; // cycles mean, 1, 2, ..., n
      state.set({ [key]: next });
      sel.value = String(next);
      load();
    };
    if (e.key === "[" || e.key === "]") step(layerSel, "layer", data.gpt.n_layer, e.key === "]" ? 1 : -1);
    else if (e.key === "-" || e.key === "=") step(headSel, "head", data.gpt.n_head, e.key === "=" ? 1 : -1);
  });
  load();
})();
