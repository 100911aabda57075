/* NSP Quiz: GET /api/nsp/quiz for a held-out pair, POST /api/nsp/quiz/{id}/answer for the truth and
   BERT's P(IsNext), POST /api/nsp/predict for your own pair. Score (you vs BERT) lives in
   sessionStorage; URL: q (question index), a and b (your own pair). */
"use strict";

(function () {
  const { el, $, clear, pct, debounce, api, clearError } = PP;
  const SCORE_KEY = "pp-nsp-score";
  const state = PP.urlState({
    q: -1,
    a: "To be, or not to be, that is the question:",
    b: "Whether 'tis nobler in the mind to suffer",
  });
  const v = state.values;
  let question = null; // {id, a, b, count}
  let answered = false;
  let context = 128;
  let loadRequest = 0;

  /* ---------- score ---------- */
  function loadScore() {
    try {
      const s = JSON.parse(sessionStorage.getItem(SCORE_KEY) || "null");
      if (s && Number.isFinite(s.n)) return s;
    } catch (err) { /* a broken entry starts a fresh score */ }
    return { n: 0, you: 0, model: 0 };
  }
  let score = loadScore();

  function showScore() {
    $("#n-score-you").textContent = score.you + " / " + score.n;
    $("#n-score-model").textContent = score.model + " / " + score.n;
  }

  function saveScore() {
    try {
      sessionStorage.setItem(SCORE_KEY, JSON.stringify(score));
    } catch (err) { /* private mode: the score still shows for this page view */ }
    showScore();
  }

  /* ---------- the [CLS] A [SEP] B [SEP] layout ---------- */
  function segment(cls, label, text) {
    return el("div", { class: "segment " + cls }, [
      el("span", { class: "seg-label", text: label }),
      el("span", { class: "seg-text", text }),
    ]);
  }

  function renderSequence(box, a, b) {
    clear(box);
    box.appendChild(el("span", { class: "special", text: "[CLS]" }));
    box.appendChild(segment("seg-a", "Segment A · token type 0", a));
    box.appendChild(el("span", { class: "special", text: "[SEP]" }));
    box.appendChild(segment("seg-b", "Segment B · token type 1", b));
    box.appendChild(el("span", { class: "special", text: "[SEP]" }));
  }

  function probChart(container, p, caption) {
    PP.bars(container, [
      { char: "IsNext", label: "IsNext", prob: p, marks: [] },
      { char: "NotNext", label: "NotNext", prob: 1 - p, marks: [] },
    ], { wide: true, label: caption, caption });
  }

  function setAnswerButtons(enabled) {
    $("#n-isnext").disabled = !enabled;
    $("#n-notnext").disabled = !enabled;
  }

  /* ---------- quiz ---------- */
  async function loadQuestion() {
    const id = ++loadRequest;
    answered = false;
    setAnswerButtons(false);
    clear($("#n-result"));
    try {
      const params = v.q >= 0 ? { index: String(v.q) } : undefined;
      const data = await api("/api/nsp/quiz", { params });
      if (id !== loadRequest) return;
      clearError();
      question = data;
      const digits = /(\d+)/.exec(data.id);
      if (v.q < 0 && digits) state.set({ q: parseInt(digits[1], 10) });
      $("#n-qid").textContent = data.id + " (" + (v.q + 1) + " of " + data.count + ")";
      renderSequence($("#n-seq"), data.a, data.b);
      setAnswerButtons(true);
    } catch (err) {
      $("#n-qid").textContent = "unavailable";
    }
  }

  async function answer(guess) {
    if (!question || answered) return;
    answered = true;
    setAnswerButtons(false);
    try {
      const r = await api("/api/nsp/quiz/" + encodeURIComponent(question.id) + "/answer", { body: { guess } });
      clearError();
      score = { n: score.n + 1, you: score.you + (r.correct ? 1 : 0), model: score.model + (r.model_correct ? 1 : 0) };
      saveScore();
      const box = clear($("#n-result"));
      box.appendChild(el("p", {}, ["You said ", el("strong", { text: guess }), ": ",
        el("span", { class: r.correct ? "ok" : "nok", text: r.correct ? "correct" : "wrong" })]));
      box.appendChild(el("p", {}, ["Truth: ", el("strong", { class: "truth", text: r.truth }),
        " (A from " + r.source_a + ", B from " + r.source_b + ")."]));
      box.appendChild(el("p", {}, ["BERT: P(IsNext) = ", el("strong", { class: "p-is-next", dataset: { prob: String(r.p_is_next) }, text: pct(r.p_is_next) }),
        " → " + r.model_guess + " ", el("span", { class: r.model_correct ? "ok" : "nok", text: r.model_correct ? "correct" : "wrong" })]));
      const chart = el("div", { class: "chart" });
      box.appendChild(chart);
      probChart(chart, r.p_is_next, "BERT's answer for " + r.id);
      $("#n-next").focus();
    } catch (err) {
      answered = false;
      setAnswerButtons(true);
    }
  }

  function next() {
    const count = question ? question.count : 1;
    state.set({ q: v.q < 0 ? -1 : (v.q + 1) % count });
    loadQuestion();
  }

  /* ---------- your own pair ---------- */
  function showBudget() {
    const a = $("#n-a").value;
    const b = $("#n-b").value;
    $("#n-a-count").textContent = String(a.length);
    $("#n-b-count").textContent = String(b.length);
    const left = context - 3 - a.length - b.length;
    $("#n-budget").textContent = left >= 0
      ? "BERT reads at most " + context + " tokens: " + left + " characters left for A + B."
      : "Too long by " + -left + " characters: BERT reads at most " + context + " tokens including [CLS] and two [SEP].";
  }

  async function predict() {
    const box = clear($("#n-own-result"));
    try {
      const r = await api("/api/nsp/predict", { body: { a: v.a, b: v.b } });
      clearError();
      const seq = el("div", { class: "nsp-seq" });
      renderSequence(seq, v.a, v.b);
      box.appendChild(seq);
      box.appendChild(el("p", { class: "verdict" }, ["BERT: P(IsNext) = ",
        el("strong", { class: "p-is-next", dataset: { prob: String(r.p_is_next) }, text: pct(r.p_is_next) }),
        " → ", el("strong", { text: r.prediction })]));
      const chart = el("div", { class: "chart" });
      box.appendChild(chart);
      probChart(chart, r.p_is_next, "BERT's answer for your pair");
      if (r.unknown_chars && r.unknown_chars.length) {
        box.appendChild(el("p", { class: "note", text: "Not in the vocabulary (read as [UNK]): " +
          r.unknown_chars.map((u) => PP.charName(u.char)).join(", ") }));
      }
    } catch (err) { /* shown in the error box */ }
  }

  const onPair = debounce(() => state.set({ a: $("#n-a").value, b: $("#n-b").value }), 250);
  for (const id of ["#n-a", "#n-b"]) {
    $(id).addEventListener("input", () => {
      showBudget();
      onPair();
    });
  }

  $("#n-isnext").addEventListener("click", () => answer("IsNext"));
  $("#n-notnext").addEventListener("click", () => answer("NotNext"));
  $("#n-next").addEventListener("click", next);
  $("#n-predict").addEventListener("click", () => {
    state.set({ a: $("#n-a").value, b: $("#n-b").value });
    predict();
  });
  $("#n-reset").addEventListener("click", () => {
    score = { n: 0, you: 0, model: 0 };
    saveScore();
    state.reset();
    $("#n-a").value = v.a;
    $("#n-b").value = v.b;
    showBudget();
    clear($("#n-own-result"));
    clearError();
    loadQuestion();
  });

  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || PP.typingTarget(event.target)) return;
    const key = event.key.toLowerCase();
    if (key === "i") answer("IsNext");
    else if (key === "n") answer("NotNext");
    else if (event.key === "ArrowRight") next();
    else return;
    event.preventDefault();
  });

  /* ---------- start ---------- */
  v.q = Number.isFinite(v.q) ? Math.max(-1, Math.round(v.q)) : -1;
  $("#n-a").value = v.a;
  $("#n-b").value = v.b;
  showScore();
  showBudget();
  loadQuestion();
  PP.models().then((models) => {
    context = models.cards.bert.config.context;
    showBudget();
  }).catch(() => {});
})();
