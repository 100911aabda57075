/* The fine-tune lab's plot: a small SVG line plot with 95 % whiskers, one series per arm, and flat
   dashed lines for answers that do not depend on the number of labelled examples.
   API: plot(figure, series, opts); series = [{name, cls, points: [{x, mean, lo, hi}]} | {name, cls, flat}],
   opts = {label, xLabel, logX, yRange: [y0, y1], yTick(y), xTick(x)?, empty}. The legend is the page's (HTML), not drawn here. */
import { svg } from "../lib/dom.js";

export function plot(figure, series, opts) {
  figure.querySelector("svg")?.remove();
  const W = 560, H = 320, L = 66, R = 28, T = 16, B = 48, PAD = 24; // PAD: room for the side-by-side whiskers
  const xs = series.flatMap((s) => s.points.map((p) => p.x)).filter((x) => x !== null && x > 0);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": opts.label, class: "plot" });
  if (!xs.length) {
    root.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "plot-empty", text: opts.empty }));
    figure.prepend(root);
    return;
  }
  const logX = opts.logX;
  const fx = (x) => (logX ? Math.log(Math.max(x, 1)) : x);
  let x0 = Math.min(...xs.map(fx)), x1 = Math.max(...xs.map(fx));
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  const [y0, y1] = opts.yRange;
  const px = (x) => L + PAD + ((fx(x) - x0) / (x1 - x0)) * (W - L - R - 2 * PAD);
  const py = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const y = y0 + ((y1 - y0) * i) / 4;
    root.append(svg("line", { x1: L, x2: W - R, y1: py(y), y2: py(y), class: "grid" }),
      svg("text", { x: L - 6, y: py(y) + 4, "text-anchor": "end", class: "tick", text: opts.yTick(y) }));
  }
  for (const x of [...new Set(xs)]) {
    root.append(svg("text", { x: px(x), y: H - B + 18, "text-anchor": "middle", class: "tick", text: (opts.xTick || String)(x) }));
  }
  root.append(svg("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "axis", text: opts.xLabel }));
  for (const s of series) {
    const pts = s.points.filter((p) => p.x !== null && p.mean !== null);
    const dx = s.dodge || 0; // arms at the same size are drawn side by side, a few pixels apart
    if (s.flat !== undefined) {
      root.append(svg("line", { x1: L, x2: W - R, y1: py(s.flat), y2: py(s.flat), class: "line dashed " + s.cls }));
      continue;
    }
    if (pts.length > 1) {
      root.append(svg("polyline", { points: pts.map((p) => (px(p.x) + dx) + "," + py(p.mean)).join(" "), class: "line " + s.cls }));
    }
    for (const p of pts) {
      if (p.lo !== null && p.lo !== undefined && p.hi !== null) {
        root.append(svg("line", { x1: px(p.x) + dx, x2: px(p.x) + dx, y1: py(Math.max(y0, p.lo)), y2: py(Math.min(y1, p.hi)),
          class: "whisker " + s.cls }));
      }
      root.append(svg("circle", { cx: px(p.x) + dx, cy: py(p.mean), r: 4, class: "dot " + s.cls },
        svg("title", { text: `${s.name}: ${opts.yTick(p.mean)} at ${p.x}` })));
    }
  }
  figure.prepend(root);
}

