/* The Train page's curves (lib/charts.js draws them): each family's loss, training and validation
   (one figure per family of the run, labelled by its own pieces: static/families/), and BERT's
   held-out masked top-1 beside the unigram baseline. Plus the note that explains a large gap
   between training and validation loss (memorising vs learning).
   layout(names)      one loss figure per family, in this order (kept while the names stay the same)
   draw(view)         redraw every figure from view.curves and view.acc (view null: empty figures)
   gapNote(view)      the sentence about the gap, or "" while there is none worth a word */
import { $, el } from "../lib/dom.js";
import { num } from "../lib/text.js";
import { lossChart } from "../lib/charts.js";
import { label, pieces } from "../families/index.js";

const GAP_NATS = 0.2; // a gap this large (and 15 % of the validation loss) is worth explaining
const GAP_SHARE = 0.15;
let shown = []; // the families with a loss figure, in order

export function layout(names) {
  if (names.join() === shown.join()) return;
  for (const fam of shown) $("#t-chart-" + fam).remove();
  const acc = $("#t-chart-acc");
  for (const fam of names) {
    acc.before(el("figure", { id: "t-chart-" + fam }, [el("figcaption", { text: pieces(fam).chart.caption })]));
  }
  shown = [...names];
}

export function draw(view) {
  for (const fam of shown) {
    const fig = $("#t-chart-" + fam);
    const old = fig.querySelector("svg");
    if (old) old.remove();
    const c = (view && view.curves[fam]) || { train: [], val: [] };
    fig.append(lossChart({ train: c.train, val: c.val }, { id: "t-curve-" + fam, width: 420, height: 250, best: true,
      title: label(fam) + " loss curve", yLabel: pieces(fam).chart.yLabel, empty: "No " + label(fam) + " curve yet",
      trainLabel: "training loss, on its training text (solid, ●)", valLabel: "validation loss, on held-out text (dashed, ○)" }));
  }
  drawAccuracy(view);
  const note = $("#t-gap");
  note.textContent = view ? gapNote(view) : "";
  note.hidden = !note.textContent;
}

function drawAccuracy(view) {
  const fig = $("#t-chart-acc");
  const old = fig.querySelector("svg");
  if (old) old.remove();
  const acc = view ? view.acc : [];
  const base = acc.length && acc[acc.length - 1][2] !== null ? acc[acc.length - 1][2] : null;
  const top1 = acc.map((p) => [p[0], 100 * p[1]]);
  const line = base === null || !acc.length ? [] : [[0, 100 * base], [acc[acc.length - 1][0] || 1, 100 * base]];
  fig.insertBefore(lossChart({ train: top1, val: line }, { id: "t-curve-acc", width: 420, height: 250,
    title: "BERT: hidden characters guessed right", yLabel: "% right (top-1)",
    desc: "BERT's top guess for hidden characters of held-out text, in percent right, against training step, " +
      "and a flat dashed line for always guessing the most common character.",
    empty: view && view.families && !view.families.includes("bert") ? "No BERT in this run" : "No held-out guesses yet",
    trainLabel: "BERT, held-out text (solid, ●)", valLabel: "always the most common character (dashed)" }), $("#t-acc-now"));
  const last = acc[acc.length - 1];
  $("#t-acc-now").textContent = last ? `${view.finished ? "At the end" : "Now"}: ${num(100 * last[1], 1)} % of hidden characters right` +
    (base === null ? "." : `; always guessing the most common character: ${num(100 * base, 1)} %.`) : "";
}

/* Training loss: the mean of the last few points (one point is about one second of steps). */
function recentTrain(points) {
  const tail = points.slice(-3);
  return tail.length ? tail.reduce((a, p) => a + p[1], 0) / tail.length : null;
}

export function gapNote(view) {
  const parts = [];
  for (const [fam, c] of Object.entries(view.curves)) {
    const val = c.val.length ? c.val[c.val.length - 1][1] : null;
    const train = recentTrain(c.train.filter((p) => Number.isFinite(p[1])));
    if (val === null || train === null) continue;
    if (val - train >= GAP_NATS && val - train >= GAP_SHARE * val) {
      parts.push(`${label(fam)}'s training loss (${num(train, 2)}) is now far below its validation loss (${num(val, 2)}).`);
    }
  }
  if (!parts.length) return "";
  return parts.join(" ") + " That gap is memorising: the model keeps getting better at the text it trains on, " +
    "again and again, more than at text it has never seen. Learning is what carries over to new text (the dashed " +
    "line). The snapshot marked ★ has the lowest validation loss: the one that does best on new text.";
}
