/* The Train page's curves (lib/charts.js draws them): each family's loss, training and validation
   (one figure per family of the run, labelled by its own pieces: static/families/), and a held-out
   figure for each family whose piece has one (`heldOut`: BERT's masked top-1 beside the unigram
   baseline), so a run without such a family shows no empty figure. Plus the note that explains a
   large gap between training and validation loss (memorising vs learning).
   layout(names)      the figures of these families, in this order (kept while the names stay the same)
   draw(view)         redraw every figure from view.curves and view.held (view null: empty figures)
   gapNote(view)      the sentence about the gap, or "" while there is none worth a word */
import { $, el } from "../lib/dom.js";
import { num } from "../lib/text.js";
import { lossChart } from "../lib/charts.js";
import { label, pieces } from "../families/index.js";

const GAP_NATS = 0.2; // a gap this large (and 15 % of the validation loss) is worth explaining
const GAP_SHARE = 0.15;
let shown = []; // the families with a loss figure, in order

const held = (names) => names.filter((fam) => pieces(fam).heldOut);

export function layout(names) {
  if (names.join() === shown.join()) return;
  for (const fig of document.querySelectorAll("#t-charts > figure")) fig.remove();
  const box = $("#t-charts");
  for (const fam of names) {
    box.append(el("figure", { id: "t-chart-" + fam }, [el("figcaption", { text: pieces(fam).chart.caption })]));
  }
  for (const fam of held(names)) {
    box.append(el("figure", { id: "t-held-" + fam }, [el("figcaption", { text: pieces(fam).heldOut.caption }),
      el("p", { id: "t-held-now-" + fam, class: "note acc-now" })]));
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
  for (const fam of held(shown)) drawHeld(fam, view);
  const note = $("#t-gap");
  note.textContent = view ? gapNote(view) : "";
  note.hidden = !note.textContent;
}

/* A family's held-out figure: its measure in percent against step, and its baseline as a flat dashed
   line (the piece's words: static/families/<name>.js heldOut). */
function drawHeld(fam, view) {
  const h = pieces(fam).heldOut;
  const fig = $("#t-held-" + fam);
  const old = fig.querySelector("svg");
  if (old) old.remove();
  const points = (view && view.held && view.held[fam]) || [];
  const last = points[points.length - 1];
  const base = last && last[2] !== null ? last[2] : null;
  const line = base === null ? [] : [[0, 100 * base], [last[0] || 1, 100 * base]];
  fig.insertBefore(lossChart({ train: points.map((p) => [p[0], 100 * p[1]]), val: line }, { id: "t-curve-held-" + fam,
    width: 420, height: 250, title: h.title, yLabel: h.yLabel, desc: h.desc, empty: "No held-out guesses yet",
    trainLabel: h.trainLabel, valLabel: h.valLabel }), $("#t-held-now-" + fam));
  $("#t-held-now-" + fam).textContent = last ? `${view.finished ? "At the end" : "Now"}: ${num(100 * last[1], 1)} % ${h.now}` +
    (base === null ? "." : `; ${h.baseNow}: ${num(100 * base, 1)} %.`) : "";
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
