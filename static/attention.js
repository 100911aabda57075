/* The mask is the worldview: the causal (GPT) and bidirectional (BERT) attention masks for a short text,
   as tables (allowed cells filled and marked ●). Which model uses which comes from the model cards'
   "attention" field (GET /api/models). URL: text, row (followed position), pad ([PAD] slots shown). */
"use strict";

(function () {
  const { el, $, clear, charName, visibleChar, clamp } = PP;
  const MAX = 24;
  const state = PP.urlState({ text: "to be or not", row: 3, pad: 2 });
  const v = state.values;
  const attention = { gpt: "…", bert: "…" };
  const SHORT = { "[CLS]": "[C]", "[SEP]": "[S]", "[PAD]": "[P]" };

  const textBox = $("#a-text");
  const rowSlider = $("#a-row");
  const padSlider = $("#a-pad");

  function sanitize() {
    v.text = [...v.text].slice(0, MAX).join("");
    v.pad = clamp(Math.round(v.pad) || 0, 0, 4);
    const n = [...v.text].length;
    v.row = clamp(Math.round(v.row) || 0, 0, Math.max(0, n - 1));
  }

  function syncControls() {
    textBox.value = v.text;
    const n = [...v.text].length;
    rowSlider.max = String(Math.max(0, n - 1));
    rowSlider.value = String(v.row);
    rowSlider.disabled = n === 0;
    padSlider.value = String(v.pad);
    $("#a-pad-out").textContent = String(v.pad);
    const c = [...v.text][v.row];
    $("#a-row-out").textContent = n ? v.row + " (" + charName(c) + ")" : "–";
    PP.valueText(rowSlider, n ? "position " + v.row + ", the character " + charName(c) : "no text");
    PP.valueText(padSlider, v.pad === 0 ? "no [PAD] slots (off)" : v.pad + " [PAD] slot" + (v.pad === 1 ? "" : "s"));
  }

  function label(token) {
    return SHORT[token] || visibleChar(token);
  }

  function longName(token) {
    return SHORT[token] ? token : charName(token);
  }

  /* tokens: what the model reads; allowed(i, j): may query i attend to key j; focus: highlighted row */
  function grid(container, title, tokens, allowed, focus) {
    const n = tokens.length;
    let count = 0;
    const body = tokens.map((q, i) => {
      const cells = tokens.map((k, j) => {
        const ok = allowed(i, j);
        if (ok) count++;
        return el("td", { class: ok ? "allowed" : "blocked", title: longName(q) + " → " + longName(k) + (ok ? ": allowed" : ": blocked") }, [
          el("span", { "aria-hidden": "true", text: ok ? "●" : "·" }),
          el("span", { class: "sr-only", text: ok ? "sees" : "blocked" }),
        ]);
      });
      return el("tr", { class: i === focus ? "focus-row" : null }, [
        el("th", { scope: "row", title: longName(q) + " at " + i, text: label(q) })].concat(cells));
    });
    const table = el("table", { class: "mask-grid" }, [
      el("caption", {}, [title, el("br"), el("span", { class: "axis-note", text: count + " of " + n * n + " cells allowed · rows look at columns" })]),
      el("thead", {}, el("tr", {}, [el("th", { scope: "col" }, el("span", { class: "axis-note", text: "q\\k" }))]
        .concat(tokens.map((k, j) => el("th", { scope: "col", title: longName(k) + " at " + j, text: label(k) }))))),
      el("tbody", {}, body),
    ]);
    clear(container).appendChild(table);
    return count;
  }

  function render() {
    const chars = [...v.text];
    const n = chars.length;
    grid($("#a-gpt-grid"), "GPT · attention: " + attention.gpt + " (lower triangle)", chars, (i, j) => j <= i, v.row);
    const bertTokens = ["[CLS]"].concat(chars, ["[SEP]"], Array(v.pad).fill("[PAD]"));
    grid($("#a-bert-grid"), "BERT · attention: " + attention.bert + " (every non-[PAD] column)", bertTokens,
      (i, j) => bertTokens[j] !== "[PAD]", v.row + 1);
    const summary = $("#a-summary");
    if (!n) {
      summary.textContent = "Type some text to see its masks.";
      return;
    }
    const c = chars[v.row];
    const seen = chars.slice(0, v.row + 1).map(visibleChar).join("");
    summary.textContent = "Character " + charName(c) + " at position " + v.row + ": GPT may look at " + (v.row + 1) +
      " character" + (v.row ? "s" : "") + " (“" + seen + "”), never ahead. BERT may look at all " + n +
      " characters plus [CLS] and [SEP]" + (v.pad ? "; only the " + v.pad + " [PAD] slot" + (v.pad > 1 ? "s are" : " is") + " hidden." : ".") +
      " [C] = [CLS], [S] = [SEP], [P] = [PAD].";
  }

  /* Counted in characters as the models count them (code points, so an emoji is one); a longer
     text is cut, and the page says so beside the box. */
  textBox.addEventListener("input", () => {
    const n = PP.len(textBox.value);
    PP.fieldMessage(textBox, n > MAX ? "Cut to " + MAX + " characters (the grids stay readable up to " + MAX + ")." : "", "notice");
    state.set({ text: textBox.value });
    sanitize();
    state.write();
    syncControls();
    render();
  });
  rowSlider.addEventListener("input", () => {
    state.set({ row: Number(rowSlider.value) });
    syncControls();
    render();
  });
  padSlider.addEventListener("input", () => {
    state.set({ pad: Number(padSlider.value) });
    syncControls();
    render();
  });
  $("#a-reset").addEventListener("click", () => {
    state.reset();
    syncControls();
    render();
  });

  sanitize();
  state.write();
  syncControls();
  render();
  PP.info().then((info) => {
    attention.gpt = info.cards.gpt ? info.cards.gpt.attention : "not in this model set";
    attention.bert = info.cards.bert ? info.cards.bert.attention : "not in this model set";
    $("#a-gpt-card").textContent = "(model card: attention = " + attention.gpt + ")";
    $("#a-bert-card").textContent = "(model card: attention = " + attention.bert + ")";
    render();
  }).catch(() => {});
})();
