/* Charts for every page, drawn with plain DOM and SVG (no canvas, no library), each with its
   numbers in a real table for screen readers.
   bars(container, rows, opts)  horizontal probability bars on an absolute 0..1 scale; rows:
                     [{char, prob, label, marks: ["original"|"sampled"|"cut"|"guess"], note}];
                     opts: label, caption, wide, table (false: no table). Marks are text, not colour.
   table(caption, head, rows, open)  a <details> holding a <table> with those rows (a head cell: text or nodes)
   lossChart(series, opts)  THE loss-curve drawer (home page cards, live training): an <svg> with
                     axes, ticks, a legend, the training loss as a solid line (path.train, ● dots)
                     and the validation loss dashed (path.val-line, ○ circle.val); series =
                     {train: [[step, loss]], val: [[step, loss]]}; opts: id, title, desc, yLabel,
                     width, height, trainLabel, valLabel, best (mark the lowest validation loss) */
import { el, svg, clear } from "./dom.js";
import { pct, charName, visibleChar, clamp, thousands, num } from "./text.js";

const MARK_TEXT = { original: "★ original", sampled: "◀ sampled", cut: "cut", guess: "✎ your guess" };

export function table(caption, head, rows, open) {
  const t = el("table", { class: "num-table" }, [
    el("caption", { text: caption }),
    el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))), // a head: text or nodes
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((cell, i) =>
      i === 0 ? el("th", { scope: "row", text: cell }) : el("td", { text: cell }))))),
  ]);
  return el("details", { class: "numbers", open: open ? true : null }, [
    el("summary", { text: "Table: " + caption }), el("div", { class: "table-wrap" }, t),
  ]);
}

export function bars(container, rows, opts) {
  const o = opts || {};
  clear(container);
  const list = el("ul", { class: "bars" + (o.wide ? " wide" : ""), "aria-label": o.label || "probabilities" });
  for (const row of rows) {
    const marks = row.marks || [];
    const fill = el("span", { class: "bar-fill" });
    fill.style.width = clamp(row.prob * 100, 0, 100).toFixed(2) + "%";
    list.appendChild(el("li", {
      class: "bar-row " + marks.map((m) => "is-" + m).join(" "),
      dataset: { char: row.char, prob: String(row.prob) },
    }, [
      el("span", { class: "bar-label", title: row.label ? null : charName(row.char), text: row.label || visibleChar(row.char) }),
      el("span", { class: "bar-track", "aria-hidden": "true" }, fill),
      el("span", { class: "bar-value", text: pct(row.prob) }),
      marks.length || row.note
        ? el("span", { class: "bar-mark", text: [row.note || ""].concat(marks.map((m) => MARK_TEXT[m] || m)).join(" ").trim() })
        : null,
    ]));
  }
  container.appendChild(list);
  if (o.table !== false) {
    container.appendChild(table(o.caption || o.label || "Probabilities",
      [o.wide ? "Answer" : "Character", "Probability", "Note"],
      rows.map((r) => [r.label || charName(r.char), pct(r.prob, 2), (r.marks || []).map((m) => MARK_TEXT[m] || m).join(", ")])));
  }
  return list;
}

/* Round tick values covering lo..hi, about `count` of them. */
function niceTicks(lo, hi, count) {
  const span = hi - lo || 1;
  const raw = span / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= count) || 10 * mag;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

export function lossChart(series, opts) {
  const o = opts || {};
  const W = o.width || 480, H = o.height || 290, L = 56, R = 14, T = 46, B = 42;
  const id = o.id || "loss-chart";
  const plot = svg("svg", { class: "loss-chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": id + "-t " + id + "-d" });
  plot.appendChild(svg("title", { id: id + "-t", text: o.title || "Loss during training" }));
  plot.appendChild(svg("desc", { id: id + "-d", text: o.desc || "Training loss (solid line, filled dots) and validation " +
    "loss on held-out text (dashed line, open circles) against training step." }));
  const finite = (pts) => (pts || []).filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]));
  const train = finite(series.train), val = finite(series.val);
  const values = train.concat(val).map((p) => p[1]);
  if (!values.length) {
    plot.appendChild(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", text: o.empty || "No curve recorded" }));
    return plot;
  }
  const xMax = Math.max(1, ...train.concat(val).map((p) => p[0]));
  let yMin = Math.min(...values), yMax = Math.max(...values);
  const pad = (yMax - yMin) * 0.05 || 0.1;
  yMin = Math.max(0, yMin - pad);
  yMax += pad;
  const x = (s) => L + (s / xMax) * (W - L - R);
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
  plot.appendChild(svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", text: "training step" }));
  const mid = (T + H - B) / 2;
  plot.appendChild(svg("text", { x: 14, y: mid, "text-anchor": "middle", transform: "rotate(-90 14 " + mid + ")",
    text: o.yLabel || "loss (nats)" }));
  const path = (pts) => pts.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join("");
  if (train.length) {
    plot.appendChild(svg("path", { class: "train", d: path(train) }));
    const every = Math.max(1, Math.ceil(train.length / 25));
    train.forEach((p, i) => {
      if (i % every === 0 || i === train.length - 1) plot.appendChild(svg("circle", { class: "train-pt", cx: x(p[0]), cy: y(p[1]), r: 2.6 }));
    });
  }
  if (val.length) {
    plot.appendChild(svg("path", { class: "val-line", d: path(val) }));
    for (const p of val) plot.appendChild(svg("circle", { class: "val", cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 3.2 }));
    if (o.best && val.length > 1) {
      const best = val.reduce((a, b) => (b[1] < a[1] ? b : a));
      const bx = x(best[0]); // the label stays inside the plot at either end
      const anchor = bx > W - R - 70 ? "end" : bx < L + 70 ? "start" : "middle";
      plot.appendChild(svg("g", { class: "best" }, [
        svg("circle", { class: "best-ring", cx: bx, cy: y(best[1]), r: 7 }),
        svg("text", { x: anchor === "end" ? bx + 7 : anchor === "start" ? bx - 7 : bx, y: y(best[1]) + 20, "text-anchor": anchor,
          text: "lowest validation " + num(best[1], 2) }),
      ]));
    }
  }
  plot.appendChild(svg("g", { transform: "translate(" + (L + 8) + ",12)" }, [
    svg("line", { class: "train", x1: 0, x2: 22, y1: 0, y2: 0 }), svg("circle", { class: "train-pt", cx: 11, cy: 0, r: 2.6 }),
    svg("text", { x: 28, y: 4, text: o.trainLabel || "training loss, on training batches (solid, ●)" }),
    svg("line", { class: "val-line", x1: 0, x2: 22, y1: 17, y2: 17 }), svg("circle", { class: "val", cx: 11, cy: 17, r: 3.2 }),
    svg("text", { x: 28, y: 21, text: o.valLabel || "validation loss, on held-out text (dashed, ○)" }),
  ]));
  return plot;
}
