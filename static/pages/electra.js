/* ELECTRA, live (POST /api/objectives/electra): the discriminator's "replaced?" probability at every
   character. Two views: the draw above (objectives.js sends its selected positions; the set's BERT,
   as the generator, fills EVERY one of them) and the student's own sentence, judged as typed.
   Requests go through lib/api (the chosen set, the busy retry, latest request wins); the sentence's
   length limit is the discriminator's own context (its card), less [CLS] and [SEP]. In the static copy
   the discriminator runs on this device (lib/engine_lessons.js; lib/compute.js). */
import { info, latest } from "../lib/api.js";
import { ask, badge, isStatic, warmUp } from "../lib/compute.js";
import { onDevice, needs } from "../lib/engine.js";
import { debounce } from "../lib/dom.js";
import { pct, thousands, visibleChar } from "../lib/text.js";

const ROUTE = "/api/objectives/electra";
const strip = document.getElementById("o-rtd");
const summary = document.getElementById("o-rtd-summary");
const own = document.getElementById("o-rtd-own");
const ownStrip = document.getElementById("o-rtd-own-strip");
const ownSummary = document.getElementById("o-rtd-own-summary");
const drawn = latest();
const typed = latest();

const NONE = "This model set has no ELECTRA discriminator, so there is nothing live to show here; pick the shipped set " +
  "(or a run trained with ELECTRA) in the model list.";

// The chosen set's discriminator card, or null (from GET /api/models: no request that is bound to fail).
async function discriminator() {
  const set = await info();
  return (set.cards && set.cards.electra) || null;
}

function draw(target, r) {
  target.replaceChildren(...r.chars.map((c) => {
    const cell = document.createElement("span");
    const flagged = c.p_replaced > 0.5;
    cell.className = "tok" + (c.replaced ? " is-replaced" : "") + (flagged ? " is-flagged" : "") + (c.filled ? " is-filled" : "");
    const ch = document.createElement("span");
    ch.textContent = visibleChar(c.char);
    const p = document.createElement("span");
    p.className = "tok-note";
    p.textContent = pct(c.p_replaced, 0);
    cell.append(ch, p);
    cell.title = (c.replaced ? "replaced: the original was " + visibleChar(c.original) : c.filled ? "refilled with the original" : "original") +
      " · the discriminator says " + pct(c.p_replaced, 0) + " replaced" + (flagged === c.replaced ? " (right)" : " (wrong)");
    return cell;
  }));
}

function say(el, r, intro) {
  el.textContent = intro + " The discriminator flags " + r.flagged + " of " + r.chars.length + " characters (p > 50 %) and is right at " +
    r.correct + " of " + r.chars.length + ". Outlined = really replaced; the number under each character is its probability of \"replaced\".";
}

function fail(el, target, err) {
  target.replaceChildren();
  el.textContent = "No live discriminator here: " + (err.detail || err.message);
}

async function onDraw(detail) {
  const ticket = drawn.begin();
  if (!(await discriminator())) {
    if (ticket()) { strip.replaceChildren(); summary.textContent = NONE; }
    return;
  }
  try {
    const r = await ask(ROUTE, { text: detail.text, positions: detail.positions, seed: detail.seed }, onDevice(ROUTE), { quiet: true });
    if (!ticket()) return;
    draw(strip, r);
    say(summary, r, "The generator filled all " + r.filled + " masked positions; " + r.replaced + " of its fills differ from the original " +
      "(a fill equal to the original counts as original).");
  } catch (err) { if (ticket()) fail(summary, strip, err); }
}

async function onOwn() {
  const ticket = typed.begin();
  const text = own.value;
  if (!text) { ownStrip.replaceChildren(); ownSummary.textContent = ""; return; }
  const card = await discriminator();
  if (!ticket()) return;
  if (!card) { ownStrip.replaceChildren(); ownSummary.textContent = NONE; return; }
  try {
    const r = await ask(ROUTE, { text }, onDevice(ROUTE), { quiet: true });
    if (!ticket()) return;
    draw(ownStrip, r);
    say(ownSummary, r, "Your sentence, judged as typed (nothing was filled).");
  } catch (err) { if (ticket()) fail(ownSummary, ownStrip, err); }
}

document.addEventListener("objectives:corrupted", (e) => onDraw(e.detail));
own.addEventListener("input", debounce(onOwn, 250));
// What the card measured on held-out text: how good this discriminator really is.
function measured(card) {
  const ev = card.evaluation && (card.evaluation.validation || card.evaluation.test);
  if (!ev || ev.replaced_recall === undefined) return "";
  const t = card.training || {};
  const where = t.device === "cuda" ? " on a graphics card (a GPU: a chip that does thousands of sums at once)" : "";
  const budget = t.seconds ? " after " + Math.max(1, Math.round(t.seconds / 60)) + " minutes and " + thousands(t.steps) +
    " steps of training" + where : "";
  const start = t.init_from ? ", its reading part started from a trained BERT" : "";
  const flagged = ev.original_flagged !== undefined ? ", wrongly flags " + pct(ev.original_flagged, 1) + " of the untouched ones" : "";
  const base = "Measured on held-out plays" + budget + start + ", with its own small generator filling 15 % of the characters: it catches " +
    pct(ev.replaced_recall, 0) + " of the replaced characters" + flagged + ", and is right at " + pct(ev.detection_accuracy, 1) +
    " of all characters, where always answering “original” is right at " + pct(ev.always_original_accuracy, 1) + "." +
    (ev.replaced_recall > 0 ? " The strip above lets the set's BERT do the filling instead: BERT guesses better than the " +
      "small generator, so its replacements look more like the real text and fewer of them are caught." : "");
  return ev.detection_accuracy <= ev.always_original_accuracy
    ? base + " So this small discriminator has not learned to spot replacements yet: its numbers sit near its guess of how " +
      "often a character is replaced. (The ELECTRA paper's small model trained for a million steps.)"
    : base;
}
const note = document.createElement("p");
note.className = "note";
note.id = "o-rtd-measured";
strip.after(note);
discriminator().then((card) => {
  if (!card) return;
  own.maxLength = card.config.context - 2; // [CLS] and [SEP] take two places
  note.textContent = measured(card);
}).catch(() => {});
badge(ownSummary); // where the verdicts are computed: this server or this device
if (isStatic()) warmUp(needs(ROUTE)); // the static copy: the discriminator downloads now (BERT only for a draw)
onOwn();
