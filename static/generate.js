/* Generation Walkthrough: GPT's next-character distribution from POST /api/next-token, shown raw,
   after temperature, and after top-k/top-p. Step samples from the server's *final* distribution with a
   seeded PRNG (u = splitmix32(splitmix32(seed) ^ step) / 2^32, inverse CDF in vocabulary order), so every
   number is the model's and the same seed + step + settings always give the same character.
   URL: prompt, out (generated so far), temperature, top_k, top_p, seed. */
"use strict";

(function () {
  const { el, $, clear, pct, num, charName, visibleChar, debounce, clamp, api, clearError } = PP;
  const ROWS = window.matchMedia("(max-width: 600px)").matches ? 8 : 12; // bars per panel (all in the table)
  const MAX_OUT = 2000;
  const state = PP.urlState({ prompt: "To be, or not to be, ", out: "", temperature: 1, top_k: 0, top_p: 1, seed: 0 });
  const v = state.values;
  let vocabSize = 100;
  let current = null; // {key, data}: the distribution for the current text and settings
  let request = 0;
  let busy = false;
  let playing = false;
  let source = null; // EventSource of the fast sampler

  const promptBox = $("#g-prompt");
  const temp = $("#g-temp");
  const topk = $("#g-topk");
  const topp = $("#g-topp");
  const seedBox = $("#g-seed");

  /* ---------- seeded uniform draw ---------- */
  function splitmix32(a) {
    a = (a + 0x9e3779b9) | 0;
    let t = a ^ (a >>> 16);
    t = Math.imul(t, 0x21f0aaad);
    t ^= t >>> 15;
    t = Math.imul(t, 0x735a2d97);
    return (t ^ (t >>> 15)) >>> 0;
  }

  function uniform(seed, step) {
    return splitmix32(splitmix32(seed) ^ step) / 4294967296;
  }

  function sampleIndex(probs, u) {
    let total = 0;
    let last = -1;
    for (let i = 0; i < probs.length; i++) {
      if (probs[i] <= 0) continue;
      total += probs[i];
      last = i;
      if (u < total) return i;
    }
    return last; // rounding: u beyond the summed mass falls on the last kept character
  }

  /* ---------- state and controls ---------- */
  function sanitize() {
    v.temperature = clamp(Math.round(v.temperature * 20) / 20, 0, 2);
    v.top_k = clamp(Math.round(v.top_k), 0, vocabSize);
    v.top_p = clamp(Math.round(v.top_p * 20) / 20, 0.05, 1);
    v.seed = clamp(Math.round(v.seed) || 0, 0, 1000000);
    v.out = [...v.out].slice(0, MAX_OUT).join("");
  }

  function showValues() {
    $("#g-temp-out").textContent = v.temperature === 0 ? "0 (greedy)" : num(v.temperature, 2);
    $("#g-topk-out").textContent = v.top_k === 0 ? "0 (off)" : String(v.top_k);
    $("#g-topp-out").textContent = v.top_p >= 1 ? "1.00 (off)" : num(v.top_p, 2);
  }

  function syncControls() {
    promptBox.value = v.prompt;
    temp.value = String(v.temperature);
    topk.max = String(vocabSize);
    topk.value = String(v.top_k);
    topp.value = String(v.top_p);
    seedBox.value = String(v.seed);
    showValues();
  }

  const fullText = () => v.prompt + v.out;
  const keyOf = (text) => JSON.stringify([text, v.temperature, v.top_k, v.top_p]);

  function tail(text, n) {
    const chars = [...text];
    return (chars.length > n ? "…" : "") + chars.slice(-n).map(visibleChar).join("");
  }

  function appendVisible(node, text) {
    for (const part of text.split(/(\n)/)) {
      if (part === "\n") {
        node.appendChild(el("span", { class: "vis", "aria-hidden": "true", text: "⏎" }));
        node.appendChild(document.createTextNode("\n"));
      } else if (part) {
        node.appendChild(document.createTextNode(part));
      }
    }
  }

  function renderText(highlightLast) {
    const box = clear($("#g-text"));
    appendVisible(box, v.prompt);
    const chars = [...v.out];
    const body = highlightLast ? chars.slice(0, -1).join("") : v.out;
    const fresh = el("span", { class: "gen-new" });
    appendVisible(fresh, body);
    if (highlightLast && chars.length) {
      const last = chars[chars.length - 1];
      fresh.appendChild(el("span", { class: "gen-last", title: "just sampled", text: visibleChar(last) }));
      if (last === "\n") fresh.appendChild(document.createTextNode("\n"));
    }
    box.appendChild(fresh);
    box.scrollTop = box.scrollHeight;
    $("#g-count").textContent = String(chars.length);
    $("#g-undo").disabled = chars.length === 0;
  }

  /* ---------- drawing the three distributions ---------- */
  function draw(data, sampled) {
    const order = data.chars.map((_, i) => i).sort((a, b) => data.raw[b] - data.raw[a]);
    let shown = order.slice(0, ROWS);
    if (sampled !== undefined && !shown.includes(sampled)) shown = shown.concat([sampled]);
    const panels = [
      ["raw", "1. Raw softmax", "the model's own probabilities"],
      ["tempered", v.temperature === 0 ? "2. Temperature 0 (greedy)" : "2. After temperature " + num(v.temperature, 2),
        v.temperature === 0 ? "greedy: the top character only" : "softmax(logits ÷ " + num(v.temperature, 2) + ")"],
      ["final", "3. After top-k / top-p", "k " + (v.top_k || "off") + " · p " + (v.top_p >= 1 ? "off" : num(v.top_p, 2)) +
        " · renormalised · sampled from"],
    ];
    const box = clear($("#g-dists"));
    for (const [field, title, sub] of panels) {
      const chart = el("div", { class: "chart" });
      box.appendChild(el("section", { class: "card dist-panel", dataset: { dist: field } }, [
        el("h3", { text: title }),
        el("p", { class: "sub", text: sub }),
        el("p", { class: "entropy" }, ["entropy H = ", el("strong", { class: "entropy-value", text: num(data.entropy[field], 3) }), " nats"]),
        chart,
      ]));
      const rows = shown.map((i) => {
        const marks = [];
        if (field === "final" && !data.kept[i]) marks.push("cut");
        if (i === sampled) marks.push("sampled");
        return { char: data.chars[i], prob: data[field][i], marks };
      });
      PP.bars(chart, rows, { label: title, table: false });
      const hidden = data.chars.length - shown.length;
      if (hidden > 0) chart.appendChild(el("p", { class: "note", text: "+ " + hidden + " less likely characters (see the table)" }));
    }
    const table = clear($("#g-dist-table"));
    table.appendChild(PP.table("All " + data.chars.length + " characters, most likely first",
      ["Character", "Raw", "After temperature", "Final", "Kept"],
      order.map((i) => [charName(data.chars[i]), pct(data.raw[i], 2), pct(data.tempered[i], 2), pct(data.final[i], 2),
        (data.kept[i] ? "kept" : "cut") + (i === sampled ? ", sampled" : "")])));
    if (data.unknown_chars && data.unknown_chars.length) {
      table.appendChild(el("p", { class: "note", text: "Not in the vocabulary (read as [UNK]): " +
        data.unknown_chars.map((u) => charName(u.char)).join(", ") }));
    }
  }

  async function fetchDist(text) {
    return api("/api/next-token", { body: { prompt: text, temperature: v.temperature, top_k: v.top_k, top_p: v.top_p } });
  }

  async function preview() {
    const text = fullText();
    const key = keyOf(text);
    if (!text) {
      clear($("#g-dists"));
      $("#g-step-info").textContent = "Type a prompt to start.";
      return;
    }
    const id = ++request;
    try {
      const data = await fetchDist(text);
      if (id !== request) return;
      clearError();
      current = { key, data };
      draw(data);
      $("#g-step-info").textContent = "Next character after “" + tail(text, 24) + "”" +
        (data.greedy ? " (greedy: the top character will be taken)." : ": press Step to sample from panel 3.");
    } catch (err) {
      /* the error box shows the detail */
    }
  }
  const previewSoon = debounce(preview, 150);

  async function step() {
    if (busy) return false;
    const text = fullText();
    if (!text) {
      PP.showError("type a prompt first");
      return false;
    }
    if ([...v.out].length >= MAX_OUT) {
      PP.showError("this walkthrough stops at " + MAX_OUT + " generated characters; press Reset or Undo");
      return false;
    }
    busy = true;
    try {
      const key = keyOf(text);
      const data = current && current.key === key ? current.data : await fetchDist(text);
      request++; // a preview still in flight must not redraw over this step
      clearError();
      const stepNo = [...v.out].length;
      const u = uniform(v.seed, stepNo);
      const i = sampleIndex(data.final, u);
      const c = data.chars[i];
      state.set({ out: v.out + c });
      current = null;
      renderText(true);
      draw(data, i);
      $("#g-step-info").textContent = "Step " + (stepNo + 1) + ": after “" + tail(text, 24) + "” sampled " + charName(c) +
        " (final probability " + pct(data.final[i]) + ", u = " + num(u, 4) + ").";
      return true;
    } catch (err) {
      return false;
    } finally {
      busy = false;
    }
  }

  function undo() {
    if (!v.out) return;
    state.set({ out: [...v.out].slice(0, -1).join("") });
    current = null;
    renderText(false);
    preview();
  }

  /* ---------- play / pause ---------- */
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  function setPlaying(on) {
    playing = on;
    const button = $("#g-play");
    button.setAttribute("aria-pressed", on ? "true" : "false");
    button.textContent = on ? "Pause ❚❚" : "Play";
  }

  async function play() {
    if (playing) {
      setPlaying(false);
      return;
    }
    setPlaying(true);
    while (playing) {
      const ok = await step();
      if (!ok) break;
      await sleep(300);
    }
    setPlaying(false);
  }

  /* ---------- fast sampling over EventSource ---------- */
  function streamParams() {
    return new URLSearchParams({ prompt: fullText(), max_new_tokens: "200", temperature: String(v.temperature),
      top_k: String(v.top_k), top_p: String(v.top_p), seed: String(v.seed) });
  }

  function stopStream(message) {
    if (source) source.close();
    source = null;
    $("#g-stream").disabled = false;
    $("#g-stream-stop").disabled = true;
    if (message) $("#g-stream-status").textContent = message;
  }

  async function explainStreamError(url) {
    const controller = new AbortController();
    try {
      const response = await fetch(url, { signal: controller.signal });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        PP.showError((body.detail || response.statusText) + " (HTTP " + response.status + ")");
      }
    } catch (err) {
      PP.showError("the stream was interrupted (" + err.message + ")");
    } finally {
      controller.abort();
    }
  }

  function startStream() {
    stopStream();
    if (!fullText()) {
      PP.showError("type a prompt first");
      return;
    }
    const url = "/api/generate/stream?" + streamParams().toString();
    const box = clear($("#g-stream-text"));
    appendVisible(box, fullText());
    const fresh = el("span", { class: "gen-new" });
    box.appendChild(fresh);
    let received = 0;
    clearError();
    $("#g-stream").disabled = true;
    $("#g-stream-stop").disabled = false;
    $("#g-stream-status").textContent = "Streaming with seed " + v.seed + "…";
    source = new EventSource(url);
    source.addEventListener("token", (event) => {
      const data = JSON.parse(event.data);
      received += [...data.text].length;
      appendVisible(fresh, data.text);
      box.scrollTop = box.scrollHeight;
      $("#g-stream-status").textContent = "Streaming… " + received + " characters";
    });
    source.addEventListener("done", (event) => {
      const data = JSON.parse(event.data);
      stopStream("Done: " + [...data.text].length + " characters sampled by the server (seed " + v.seed + ").");
    });
    source.addEventListener("error", () => {
      if (!source) return;
      stopStream("Stream stopped after " + received + " characters.");
      if (!received) explainStreamError(url);
    });
  }

  /* ---------- wiring ---------- */
  function onKnob() {
    sanitize();
    state.write();
    showValues();
    current = null;
    previewSoon();
  }

  temp.addEventListener("input", () => { v.temperature = Number(temp.value); onKnob(); });
  topk.addEventListener("input", () => { v.top_k = Number(topk.value); onKnob(); });
  topp.addEventListener("input", () => { v.top_p = Number(topp.value); onKnob(); });
  seedBox.addEventListener("input", () => {
    const seed = parseInt(seedBox.value, 10);
    if (Number.isFinite(seed) && seed >= 0) state.set({ seed: Math.min(seed, 1000000) });
  });
  const onPrompt = debounce(() => {
    state.set({ prompt: promptBox.value, out: "" });
    current = null;
    renderText(false);
    preview();
  }, 400);
  promptBox.addEventListener("input", onPrompt);

  $("#g-step").addEventListener("click", step);
  $("#g-play").addEventListener("click", play);
  $("#g-undo").addEventListener("click", undo);
  $("#g-reset").addEventListener("click", () => {
    setPlaying(false);
    stopStream("");
    clear($("#g-stream-text"));
    state.reset();
    clearError();
    current = null;
    syncControls();
    renderText(false);
    preview();
  });
  $("#g-stream").addEventListener("click", startStream);
  $("#g-stream-stop").addEventListener("click", () => stopStream("Stopped."));

  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || PP.typingTarget(event.target)) return;
    const onButton = event.target.closest && event.target.closest("button, a, summary");
    if (event.key === " " || event.key === "ArrowRight") {
      if (event.key === " " && onButton) return; // Space on a button is that button's own click
      event.preventDefault();
      step();
    } else if (event.key === "Backspace") {
      event.preventDefault();
      undo();
    } else if (event.key === "p" || event.key === "P") {
      event.preventDefault();
      play();
    }
  });

  /* ---------- start ---------- */
  sanitize();
  syncControls();
  renderText(false);
  PP.models().then((models) => {
    vocabSize = models.vocab.chars.length;
    sanitize();
    syncControls();
  }).catch(() => {}).finally(() => {
    state.write();
    preview();
  });
})();
