/* The attention page's real weights: POST /api/attention for the text, [PAD] slots and PLM's order
   above, one heatmap per family the set has (GPT and BERT always; T5 and PLM where the set has them
   with an inspection graph: null otherwise), per layer and head or their mean, and a table of the
   followed character's row. The device computes them when the server is busy or away, and in the
   static copy (lib/compute.js, lib/engine_attention.js: the inspection graphs download when this page
   opens, not before). weights(view) -> { reload, draw }; view() is the page's state (text, row, pad, seed). */
import { el, clear, $, debounce, typingTarget } from "../lib/dom.js";
import { charName, pct, cut } from "../lib/text.js";
import { clearError } from "../lib/errors.js";
import { latest, families } from "../lib/api.js";
import { ask, badge, isStatic, lastWhere, warmUp } from "../lib/compute.js";
import { onDevice, inspection } from "../lib/engine_attention.js";
import { plan, manifestFor } from "../lib/engine.js";
import { urlState, isProjector } from "../lib/state.js";
import { slides } from "../lib/slides.js";
import { table } from "../lib/charts.js";
import { withTerms } from "../lib/glossary.js";
import { label } from "../families/index.js";
import { MASKED, masked, heatmap, longName, queryTitles } from "./attention_draw.js";

const MAX = 24;

export function weights(view) {
  const picked = urlState({ layer: -1, head: -1, vals: false });
  // In a static copy the device downloads what it computes: GPT's and BERT's attention graphs read the
  // weights Generation and Mask-Fill already brought (one file each); the optional families' (T5, PLM)
  // come only when the student asks (`more`). On a server every family is asked for.
  const specs = families().catch(() => []);
  let more = false;
  async function wanted() {
    if (!isStatic()) return null;
    const list = await specs;
    return list.filter((f) => f.pages.includes("attention") && (more || !f.optional)).map((f) => f.name);
  }
  const pick = picked.values; // layer, head, vals
  let data = null;
  let asked = null; // the families the last request named (null: all)
  const loads = latest(); // the latest answer wins
  const layerSel = $("#aw-layer");
  const headSel = $("#aw-head");

  function which() {
    const l = pick.layer < 0 ? "mean of all layers" : "layer " + (pick.layer + 1);
    const h = pick.head < 0 ? "mean of the heads" : "head " + (pick.head + 1);
    return l + ", " + h;
  }

  function boxes() {
    const box = $("#aw-grids");
    return MASKED.map((name) => {
      let node = document.getElementById("aw-" + name);
      if (!node) box.append(node = el("div", { class: "heat-wrap", id: "aw-" + name }));
      return node;
    });
  }

  function draw() {
    if (!data) return;
    const v = view();
    const chars = [...cut(v.text, MAX)];
    const shown = MASKED.filter((name) => data[name]);
    const layouts = {};
    MASKED.forEach((name, k) => {
      const node = boxes()[k];
      const d = data[name];
      if (!d) {
        clear(node).append(asked && !asked.includes(name) ? later(name) : none(name));
        return;
      }
      const layout = layouts[name] = masked(name, chars, v);
      heatmap(node, [label(name), el("span", { class: "which", text: " · " + which() })], d.tokens, d.weights, layout.allowed, layout.row(v.row), pick.vals,
        queryTitles(layout, chars));
    });
    $("#aw-status").textContent = "Live from the selected models, for the text above.";
    const check = clear($("#aw-check-text"));
    const agree = (x) => (typeof x === "number" ? x.toExponential(1) : "(not recorded)");
    const logits = lastWhere() === "device"
      ? "when this copy of the playground was made, their logits on a test sentence agreed with the served models' logits to "
      : "their logits agree with the served models' logits to ";
    const worst = (key) => Math.max(...shown.map((name) => data[name][key]));
    for (const part of withTerms(logits + shown.map((name) => agree(data[name].served_logits_max_abs_diff) + " (" + label(name) + ")").join(", ") +
      "; every row sums to 1 within " + worst("row_sum_max_error").toExponential(1) +
      "; the largest weight on a blocked cell is " + worst("blocked_max") + ".")) {
      check.append(part);
    }
    const t = clear($("#aw-table"));
    if (v.row >= chars.length) return;
    t.appendChild(table("Weights of the followed character " + charName(chars[v.row]) + " (position " + v.row + ") on each " +
      "character of the text, " + which(), ["Key"].concat(shown.map(label)), chars.map((c, j) => [longName(c) + " (" + j + ")"]
      .concat(shown.map((name) => {
        const layout = layouts[name], i = layout.row(v.row), key = layout.row(j);
        return layout.allowed(i, key) ? pct(data[name].weights[i][key], 1) : "blocked";
      })))));
  }

  const none = (name) => el("p", { class: "note", text: label(name) + ": this model set has no " + label(name) +
    " with an attention copy, so only its rule is drawn above (the Train page can train one)." });

  /* A family this device has not downloaded yet (a static copy's T5 or PLM): its size, and a button. */
  function later(name) {
    const note = el("p", { class: "note" }, [label(name) + "'s real weights need its attention graph on this device. "]);
    manifestFor().then((m) => { if (!m.models[name + "_attn"]) note.replaceWith(none(name)); }).catch(() => {});
    const go = el("button", { type: "button", class: "btn secondary", text: "Download the other models' attention graphs" });
    go.addEventListener("click", () => {
      more = true;
      warmUp(inspection(Object.keys(data || {}).filter((k) => k !== "unknown_chars")));
      load();
    });
    note.append(go);
    specs.then(async (list) => {
      const optional = list.filter((f) => f.optional && f.pages.includes("attention"));
      const { bytes } = await plan(undefined, inspection(optional.map((f) => f.name)));
      go.textContent = "Download " + optional.map((f) => f.label + "'s").join(" and ") + " attention graphs" +
        (bytes > 0 ? " (" + (bytes / 1e6).toFixed(1) + " MB)" : "");
    }).catch(() => {});
    return note;
  }

  function fillSelect(sel, n, word, current) {
    clear(sel);
    sel.appendChild(el("option", { value: "-1", text: word === "layer" ? "mean of all layers" : "mean of the heads" }));
    for (let i = 0; i < n; i++) sel.appendChild(el("option", { value: String(i), text: word + " " + (i + 1) }));
    sel.value = String(current);
  }

  async function load() {
    const v = view();
    const text = cut(v.text, MAX);
    if (!text) {
      data = null;
      for (const node of boxes()) clear(node);
      $("#aw-status").textContent = "Type some text above to see the weights.";
      return;
    }
    const current = loads.begin();
    const body = { text, pad: v.pad, seed: v.seed, layer: Math.round(pick.layer), head: Math.round(pick.head) };
    asked = await wanted();
    if (asked) body.families = asked;
    try {
      const r = await ask("/api/attention", body, onDevice.attention); // the server, or this device
      if (!current()) return;
      clearError();
      data = r;
      const size = r[MASKED.find((name) => r[name])];
      fillSelect(layerSel, size.n_layer, "layer", pick.layer);
      fillSelect(headSel, size.n_head, "head", pick.head);
      picked.write();
      draw();
    } catch (err) {
      // A shared link's layer or head beyond this model set's size: show the mean instead.
      if (current() && (err.parameter === "layer" || err.parameter === "head") && pick[err.parameter] !== -1) {
        picked.set({ [err.parameter]: -1 });
        clearError();
        load();
      } /* anything else is shown in the error box */
    }
  }

  const reload = debounce(load, 250);
  layerSel.addEventListener("change", () => { picked.set({ layer: Number(layerSel.value) }); load(); });
  headSel.addEventListener("change", () => { picked.set({ head: Number(headSel.value) }); load(); });
  const vals = $("#aw-values");
  vals.checked = Boolean(pick.vals);
  vals.addEventListener("change", () => { picked.set({ vals: vals.checked }); draw(); });
  document.addEventListener("keydown", (e) => {
    if (!data || typingTarget(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
    const size = data[MASKED.find((name) => data[name])];
    const step = (sel, key, n, d) => {
      const next = ((pick[key] + 1 + d + n + 1) % (n + 1)) - 1; // cycles mean, 1, 2, ..., n
      picked.set({ [key]: next });
      sel.value = String(next);
      load();
    };
    if (e.key === "[" || e.key === "]") step(layerSel, "layer", size.n_layer, e.key === "]" ? 1 : -1);
    else if (e.key === "-" || e.key === "=") step(headSel, "head", size.n_head, e.key === "=" ? 1 : -1);
  });
  boxes(); // made now: the projector's slides find the section by its heatmaps' boxes
  badge($("#aw-status")); // where the weights are computed: this server or this device
  if (isStatic()) wanted().then((list) => warmUp(inspection(list))); // the static copy: those inspection graphs download now
  load();
  if (isProjector()) slides(document.querySelectorAll("main > section.panel:has(.grid-4 .grid-scroll, .grid-4 .heat-wrap)")); // one set of grids at a time, ←/→
  return { reload, draw };
}
