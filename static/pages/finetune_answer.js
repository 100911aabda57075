/* The fine-tune page's opening chart (issue 52 must 3): the answer a class reads first, drawn from the
   table beside it (#ft-answer-table), whose figures are the card's (tests/training/test_finetune_figures.py
   checks every data-figure against models/finetune.card.json), so the chart shows nothing the table does not. */
import { el, $ } from "../lib/dom.js";
import { plot } from "./finetune_plot.js";

const CLS = { full: "arm-full", scratch: "arm-scratch", ngram: "arm-ngram" };

export function drawAnswer() {
  const table = $("#ft-answer-table"), figure = $("#ft-answer-plot");
  if (!table || !figure) return;
  const sizes = [...table.querySelectorAll("thead th")].slice(1).map((th) => Number(th.textContent));
  const lines = [...table.querySelectorAll("tbody tr")].map((tr) => ({
    name: tr.querySelector("th").textContent, cls: CLS[tr.dataset.arm] || "",
    points: [...tr.querySelectorAll("[data-figure]")].map((span, i) => ({
      x: sizes[i], mean: Number(span.textContent) / 100, lo: null, hi: null })),
  }));
  lines.forEach((s, i) => { s.dodge = (i - 1) * 6; });
  plot(figure, lines, { label: "F1 against the number of marked passages, per way of learning", logX: true,
    yRange: [0, 0.4], yTick: (y) => Math.round(100 * y) + " %", xLabel: "marked passages (8, 32, 128: each 4 x the last)",
    empty: "" });
  $("#ft-answer-legend").replaceChildren(...lines.map((s) => el("li", { class: s.cls }, [
    el("span", { class: "swatch" }), s.name])));
}
