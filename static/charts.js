/* Probability charts for every applet: bars drawn with plain DOM (no canvas, no library) plus a
   <table> with the same numbers for screen readers. Extends PP (common.js). */
"use strict";

(function () {
  const { el, clear, pct, charName, visibleChar, clamp } = PP;

  /* rows: [{char, prob, marks: ["original"|"sampled"|"cut"], note}] drawn on an absolute 0..1
     scale, so charts of different distributions compare honestly. Marks are text, not colour. */
  const MARK_TEXT = { original: "★ original", sampled: "◀ sampled", cut: "cut", guess: "✎ your guess" };

  function bars(container, rows, opts) {
    const o = opts || {};
    clear(container);
    const list = el("ul", { class: "bars" + (o.wide ? " wide" : ""), "aria-label": o.label || "probabilities" });
    for (const row of rows) {
      const marks = row.marks || [];
      const fill = el("span", { class: "bar-fill" });
      fill.style.width = clamp(row.prob * 100, 0, 100).toFixed(2) + "%";
      const item = el("li", {
        class: "bar-row " + marks.map((m) => "is-" + m).join(" "),
        dataset: { char: row.char, prob: String(row.prob) },
      }, [
        el("span", { class: "bar-label", title: row.label ? null : charName(row.char), text: row.label || visibleChar(row.char) }),
        el("span", { class: "bar-track", "aria-hidden": "true" }, fill),
        el("span", { class: "bar-value", text: pct(row.prob) }),
        marks.length || row.note
          ? el("span", { class: "bar-mark", text: [row.note || ""].concat(marks.map((m) => MARK_TEXT[m] || m)).join(" ").trim() })
          : null,
      ]);
      list.appendChild(item);
    }
    container.appendChild(list);
    if (o.table !== false) {
      container.appendChild(table(o.caption || o.label || "Probabilities",
        [o.wide ? "Answer" : "Character", "Probability", "Note"],
        rows.map((r) => [r.label || charName(r.char), pct(r.prob, 2), (r.marks || []).map((m) => MARK_TEXT[m] || m).join(", ")])));
    }
    return list;
  }

  /* A <details> with a real table: the numbers of every chart, readable by a screen reader. */
  function table(caption, head, rows, open) {
    const t = el("table", { class: "num-table" }, [
      el("caption", { text: caption }),
      el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col", text: h })))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((cell, i) =>
        i === 0 ? el("th", { scope: "row", text: cell }) : el("td", { text: cell }))))),
    ]);
    return el("details", { class: "numbers", open: open ? true : null }, [
      el("summary", { text: "Table: " + caption }), el("div", { class: "table-wrap" }, t),
    ]);
  }

  PP.bars = bars;
  PP.table = table;
})();
