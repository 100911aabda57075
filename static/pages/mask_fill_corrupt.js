/* Part 3 of the Mask-Fill Explorer: BERT's training corruption on the page's sentence. The server
   selects characters at the mask rate (seeded), applies 80/10/10 ([MASK] / a random character /
   unchanged) and says what BERT recovers at each; the recipe's numbers come from the BERT card.
   corrupt(v, fields)       ask and draw (v: the page's URL state; the latest request wins)
   clearCorrupt(message)    empty the part, with a status line
   showRecipe(card, setRate)  the card's rate and split into the recipe sentence */
import { el, clear, $ } from "../lib/dom.js";
import { visibleChar, charName, pct } from "../lib/text.js";
import { clearError } from "../lib/errors.js";
import { api, latest } from "../lib/api.js";
import { table } from "../lib/charts.js";
import { isStatic } from "../lib/compute.js";
import { unknownNote } from "./mask_fill_cards.js";

const corruptions = latest(); // the latest answer wins
const ACTION = { mask: "became [MASK]", random: "random character", unchanged: "left unchanged" };
const ACTION_NOTE = { mask: "mask", random: "random", unchanged: "same" };

export function clearCorrupt(message) {
  corruptions.cancel();
  clear($("#mf-corrupted"));
  clear($("#mf-corrupt-table"));
  $("#mf-corrupt-status").textContent = message;
}

function renderCorrupt(data) {
  const out = clear($("#mf-corrupted"));
  const byPos = new Map(data.selected.map((s) => [s.position, s]));
  data.corrupted.forEach((token, i) => {
    const sel = byPos.get(i);
    const shown = token === "[MASK]" ? "M" : visibleChar(token);
    out.appendChild(el("span", { class: "tok" + (sel ? " is-" + sel.action : ""), title: sel ? ACTION[sel.action] : null }, [
      el("span", { text: shown }),
      el("span", { class: "tok-note", text: sel ? ACTION_NOTE[sel.action] : "\u00a0" }),
    ]));
  });
  const box = clear($("#mf-corrupt-table"));
  const n = data.selected.length;
  const right = data.selected.filter((s) => s.correct).length;
  box.appendChild(el("p", { class: "step-info corrupt-accuracy" }, n
    ? ["Selected " + n + " of " + data.tokens.length + " characters; BERT recovered ",
      el("strong", { text: right + " of " + n + " (" + pct(data.accuracy === null ? 0 : data.accuracy) + ")" }), "."]
    : "No character was selected at this rate and seed: raise the mask rate or re-sample."));
  if (!n) return;
  const rows = data.selected.map((s) => [
    String(s.position), charName(s.original), ACTION[s.action], s.shown === "[MASK]" ? "[MASK]" : charName(s.shown),
    charName(s.prediction) + " (" + pct(s.prob) + ")", s.correct ? "✓ yes" : "✗ no",
    s.top.map((t) => visibleChar(t.char) + " " + pct(t.prob)).join(", "),
  ]);
  box.appendChild(table("Selected positions and BERT's guesses",
    ["Position", "Original", "What happened", "Model saw", "Top guess", "Recovered?", "Top 5"], rows, true));
  const note = unknownNote(data.unknown_chars);
  if (note) box.appendChild(note);
}

/* POST /api/mask-fill/corrupt with the page's sentence, rate and seed (v: the page's URL state). */
export async function corrupt(v, fields) {
  if (!v.text) {
    clearCorrupt("No sentence to corrupt.");
    return;
  }
  const current = corruptions.begin();
  const status = $("#mf-corrupt-status");
  if (isStatic()) {
    status.textContent = "This part needs the playground's server (python -m app): this copy has none, so only parts 1 and 2 work here.";
    return;
  }
  status.textContent = "Corrupting with seed " + v.seed + "…";
  try {
    const data = await api("/api/mask-fill/corrupt", { body: { text: v.text, mask_rate: v.rate / 100, seed: v.seed }, fields });
    if (!current()) return;
    clearError();
    renderCorrupt(data);
    status.textContent = "Mask rate " + v.rate + " %, seed " + v.seed + ".";
  } catch (err) {
    if (current()) {
      clear($("#mf-corrupted"));
      clear($("#mf-corrupt-table"));
      status.textContent = "No corruption: see the message above.";
    }
  }
}

/* The recipe's numbers come from the BERT card; a link without `rate` starts at the card's rate
   (setRate(percent)). */
export function showRecipe(card, setRate) {
  const ev = card.evaluation || {};
  const split = ev.validation || Object.values(ev)[0] || {};
  const recipe = split.recipe || {};
  const rate = recipe.mask_rate !== undefined ? recipe.mask_rate : (card.training || {}).mask_rate;
  const put = (sel, x) => { if (Number.isFinite(x)) $(sel).textContent = Math.round(x * 100) + " %"; };
  put("#mf-recipe-rate", rate);
  put("#mf-recipe-mask", recipe.mask);
  put("#mf-recipe-random", recipe.random);
  put("#mf-recipe-same", recipe.unchanged);
  if (Number.isFinite(rate) && !new URLSearchParams(location.search).has("rate")) setRate(Math.round(rate * 100));
  return rate;
}
