/* Mask-Fill Explorer: click characters to mask them; BERT's top-k guesses come from
   POST /api/mask-fill, and its 15 % / 80-10-10 training corruption from POST /api/mask-fill/corrupt.
   URL: text, pos (comma-separated indices), k, rate (percent), seed. */
"use strict";

(function () {
  const { el, $, clear, pct, charName, visibleChar, debounce, clamp, api, clearError } = PP;
  const DEFAULT_TEXT = "To be, or not to be, that is the question.";
  const MAX_MASKS = 32;
  const state = PP.urlState({ text: DEFAULT_TEXT, pos: [17, 18], k: 5, rate: 15, seed: 0 });
  const v = state.values;
  let maxLen = 1000;
  let fillRequest = 0;
  let corruptRequest = 0;

  const textBox = $("#mf-text");
  const kSlider = $("#mf-k");
  const rateSlider = $("#mf-rate");
  const seedBox = $("#mf-seed");

  function sanitize() {
    v.k = clamp(Math.round(v.k), 1, 20);
    v.rate = clamp(Math.round(v.rate), 1, 100);
    v.seed = clamp(Math.round(v.seed) || 0, 0, 1000000);
    const seen = new Set();
    v.pos = v.pos.filter((p) => p >= 0 && p < v.text.length && !seen.has(p) && seen.add(p)).sort((a, b) => a - b);
  }

  function syncControls() {
    textBox.value = v.text;
    $("#mf-text-count").textContent = String(v.text.length);
    kSlider.value = String(v.k);
    $("#mf-k-out").textContent = String(v.k);
    rateSlider.value = String(v.rate);
    $("#mf-rate-out").textContent = v.rate + " %";
    seedBox.value = String(v.seed);
  }

  /* ---------- the clickable sentence ---------- */
  function charButton(c, i) {
    const masked = v.pos.includes(i);
    const button = el("button", {
      type: "button",
      class: "ch" + (c === " " ? " is-space" : ""),
      "aria-pressed": masked ? "true" : "false",
      "aria-label": "Character " + i + ": " + charName(c),
      dataset: { index: String(i) },
    }, [
      el("span", { class: "ch-glyph", "aria-hidden": "true", text: visibleChar(c) }),
      el("span", { class: "ch-tag", "aria-hidden": "true", text: masked ? "MASK" : String(i) }),
    ]);
    return button;
  }

  function renderChars() {
    const strip = clear($("#mf-chars"));
    [...v.text].forEach((c, i) => strip.appendChild(charButton(c, i)));
  }

  function toggle(button) {
    const i = Number(button.dataset.index);
    const masked = v.pos.includes(i);
    if (!masked && v.pos.length >= MAX_MASKS) {
      PP.showError("at most " + MAX_MASKS + " characters can be masked at once");
      return;
    }
    const pos = masked ? v.pos.filter((p) => p !== i) : v.pos.concat([i]).sort((a, b) => a - b);
    state.set({ pos });
    button.setAttribute("aria-pressed", masked ? "false" : "true");
    button.querySelector(".ch-tag").textContent = masked ? String(i) : "MASK";
    fillSoon();
  }

  $("#mf-chars").addEventListener("click", (event) => {
    const button = event.target.closest("button.ch");
    if (button) toggle(button);
  });

  $("#mf-chars").addEventListener("keydown", (event) => {
    const button = event.target.closest("button.ch");
    if (!button) return;
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = $("#mf-chars").querySelector("[data-index='" + (Number(button.dataset.index) + step) + "']");
    if (next) {
      next.focus();
      event.preventDefault();
    }
  });

  /* ---------- predictions ---------- */
  function unknownNote(unknown) {
    if (!unknown || !unknown.length) return null;
    return el("p", { class: "note", text: "Not in the model's vocabulary (read as [UNK]): " +
      unknown.map((u) => charName(u.char) + " at " + u.position).join(", ") });
  }

  function maskCard(mask) {
    const original = mask.original;
    const rows = mask.predictions.map((p) => ({
      char: p.char, prob: p.prob, marks: original && p.char === original.char ? ["original"] : [],
    }));
    const card = el("article", { class: "card mask-card", dataset: { position: String(mask.position) } }, [
      el("h3", { text: "Mask at position " + mask.position + (original ? ": was " + charName(original.char) : "") }),
    ]);
    if (original) {
      card.appendChild(el("p", { class: "original-line" }, [
        "★ Original " + charName(original.char) + ": ",
        el("strong", { class: "original-prob", dataset: { prob: String(original.prob) }, text: pct(original.prob) }),
        " · rank ", el("strong", { class: "original-rank", text: String(original.rank) }),
        original.rank === 1 ? " (BERT's top guess)" : "",
      ]));
    }
    const chart = el("div", { class: "chart" });
    card.appendChild(chart);
    PP.bars(chart, rows, { label: "Top " + rows.length + " guesses for position " + mask.position,
      caption: "BERT's top " + rows.length + " guesses at position " + mask.position });
    return card;
  }

  async function fill() {
    const results = $("#mf-results");
    const status = $("#mf-status");
    const hasMarkers = v.text.includes("[MASK]");
    if (!v.pos.length && !hasMarkers) {
      clear(results);
      status.textContent = "No character is masked yet: click one above.";
      return;
    }
    const id = ++fillRequest;
    status.textContent = "Asking BERT…";
    try {
      const body = { text: v.text, positions: v.pos.length ? v.pos : null, top_k: v.k };
      const data = await api("/api/mask-fill", { body });
      if (id !== fillRequest) return;
      clearError();
      clear(results);
      for (const mask of data.masks) results.appendChild(maskCard(mask));
      const note = unknownNote(data.unknown_chars);
      if (note) results.appendChild(note);
      status.textContent = data.masks.length + " mask" + (data.masks.length === 1 ? "" : "s") +
        " filled. BERT sees the characters on both sides of every mask.";
    } catch (err) {
      if (id === fillRequest) status.textContent = "No predictions (see the error above).";
    }
  }
  const fillSoon = debounce(fill, 150);

  /* ---------- corruption recipe ---------- */
  const ACTION = { mask: "became [MASK]", random: "random character", unchanged: "left unchanged" };
  const ACTION_NOTE = { mask: "mask", random: "random", unchanged: "same" };

  function renderCorrupt(data) {
    const strip = clear($("#mf-corrupted"));
    const byPos = new Map(data.selected.map((s) => [s.position, s]));
    data.corrupted.forEach((token, i) => {
      const sel = byPos.get(i);
      const shown = token === "[MASK]" ? "M" : visibleChar(token);
      strip.appendChild(el("span", { class: "tok" + (sel ? " is-" + sel.action : ""), title: sel ? ACTION[sel.action] : null }, [
        el("span", { text: shown }),
        el("span", { class: "tok-note", text: sel ? ACTION_NOTE[sel.action] : "\u00a0" }),
      ]));
    });
    const box = clear($("#mf-corrupt-table"));
    const n = data.selected.length;
    const right = data.selected.filter((s) => s.correct).length;
    box.appendChild(el("p", { class: "step-info corrupt-accuracy" }, n
      ? ["Selected " + n + " of " + data.tokens.length + " characters; BERT recovered ",
        el("strong", { text: right + " of " + n + " (" + pct(data.accuracy === null ? 0 : data.accuracy) + ")" }), "."]
      : "No character was selected at this rate and seed: raise the mask rate or re-sample."));
    if (!n) return;
    const rows = data.selected.map((s) => [
      String(s.position), charName(s.original), ACTION[s.action], s.shown === "[MASK]" ? "[MASK]" : charName(s.shown),
      charName(s.prediction) + " (" + pct(s.prob) + ")", s.correct ? "✓ yes" : "✗ no",
      s.top.map((t) => visibleChar(t.char) + " " + pct(t.prob)).join(", "),
    ]);
    const details = PP.table("Selected positions and BERT's guesses",
      ["Position", "Original", "What happened", "Model saw", "Top guess", "Recovered?", "Top 5"], rows, true);
    box.appendChild(details);
    const note = unknownNote(data.unknown_chars);
    if (note) box.appendChild(note);
  }

  async function corrupt() {
    const id = ++corruptRequest;
    const status = $("#mf-corrupt-status");
    status.textContent = "Corrupting with seed " + v.seed + "…";
    try {
      const data = await api("/api/mask-fill/corrupt", { body: { text: v.text, mask_rate: v.rate / 100, seed: v.seed } });
      if (id !== corruptRequest) return;
      clearError();
      renderCorrupt(data);
      status.textContent = "Mask rate " + v.rate + " %, seed " + v.seed + ".";
    } catch (err) {
      if (id === corruptRequest) status.textContent = "No corruption (see the error above).";
    }
  }
  const corruptSoon = debounce(corrupt, 200);

  /* ---------- controls ---------- */
  const onText = debounce(() => {
    state.set({ text: textBox.value });
    sanitize();
    state.write();
    renderChars();
    fill();
    corrupt();
  }, 300);

  textBox.addEventListener("input", () => {
    $("#mf-text-count").textContent = String(textBox.value.length);
    onText();
  });

  $("#mf-example").addEventListener("change", (event) => {
    if (!event.target.value) return;
    state.set({ text: event.target.value.slice(0, maxLen), pos: [] });
    event.target.value = "";
    syncControls();
    renderChars();
    fill();
    corrupt();
  });

  kSlider.addEventListener("input", () => {
    state.set({ k: Number(kSlider.value) });
    $("#mf-k-out").textContent = String(v.k);
    fillSoon();
  });

  rateSlider.addEventListener("input", () => {
    state.set({ rate: Number(rateSlider.value) });
    $("#mf-rate-out").textContent = v.rate + " %";
    corruptSoon();
  });

  seedBox.addEventListener("input", () => {
    const seed = parseInt(seedBox.value, 10);
    if (!Number.isFinite(seed) || seed < 0) return;
    state.set({ seed });
    corruptSoon();
  });

  $("#mf-resample").addEventListener("click", () => {
    state.set({ seed: v.seed + 1 });
    seedBox.value = String(v.seed);
    corrupt();
  });

  $("#mf-clear").addEventListener("click", () => {
    state.set({ pos: [] });
    renderChars();
    fill();
  });

  $("#mf-reset").addEventListener("click", () => {
    state.reset();
    clearError();
    syncControls();
    renderChars();
    fill();
    corrupt();
  });

  /* ---------- start ---------- */
  sanitize();
  state.write();
  syncControls();
  renderChars();
  fill();
  corrupt();
  PP.models().then((models) => {
    maxLen = models.cards.bert.config.context - 2;
    textBox.maxLength = maxLen;
    $("#mf-help").appendChild(document.createTextNode(" BERT reads at most " + maxLen + " characters."));
  }).catch(() => {});
})();
