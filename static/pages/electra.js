/* ELECTRA, live (POST /api/objectives/electra): the discriminator's "replaced?" probability at every
   character. Two views: the draw above (objectives.js sends its selected positions; the set's BERT,
   as the generator, fills EVERY one of them) and the student's own sentence, judged as typed. */

const strip = document.getElementById("o-rtd");
const summary = document.getElementById("o-rtd-summary");
const own = document.getElementById("o-rtd-own");
const ownStrip = document.getElementById("o-rtd-own-strip");
const ownSummary = document.getElementById("o-rtd-own-summary");
let latest = 0;
let lastDraw = null;

const pct = (p) => Math.round(p * 100) + " %";
const shown = (ch) => (ch === " " ? "␣" : ch === "\n" ? "↵" : ch);

async function judge(body) {
  const res = await fetch("/api/objectives/electra", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((data && data.detail && (data.detail.message || data.detail)) || res.statusText);
  return data;
}

function draw(target, r) {
  target.replaceChildren(...r.chars.map((c) => {
    const cell = document.createElement("span");
    const flagged = c.p_replaced > 0.5;
    cell.className = "tok" + (c.replaced ? " is-replaced" : "") + (flagged ? " is-flagged" : "") + (c.filled ? " is-filled" : "");
    const ch = document.createElement("span");

    ch.textContent = shown(c.char);
    const p = document.createElement("span");
    p.className = "tok-note";
    p.textContent = pct(c.p_replaced);
    cell.append(ch, p);
    cell.title = (c.replaced ? "replaced: the original was " + shown(c.original) : c.filled ? "refilled with the original" : "original") +
      " · the discriminator says " + pct(c.p_replaced) + " replaced" + (flagged === c.replaced ? " (right)" : " (wrong)");
    return cell;
  }));
}

function say(el, r, intro) {
  el.textContent = intro + " The discriminator flags " + r.flagged + " of " + r.chars.length + " characters (p > 50 %) and is right at " +
    r.correct + " of " + r.chars.length + ". Outlined = really replaced; the number under each character is its probability of \"replaced\".";
}

function fail(el, target, err) {
  target.replaceChildren();
  el.textContent = "No live discriminator here: " + err.message;
}

// Does the chosen set have a discriminator? (GET /api/models; no request that is bound to fail.)
let sets = null;
async function hasElectra(model) {
  if (!sets) {
    const res = await fetch("/api/models");
    const data = res.ok ? await res.json() : { sets: [] };
    sets = { default: data.default, list: data.sets || [] };
  }
  const set = sets.list.find((s) => s.id === (model || sets.default));
  return Boolean(set && set.families.includes("electra"));
}

const NONE = "This model set has no ELECTRA discriminator, so there is nothing live to show here; pick the shipped set " +
  "(or a run trained with ELECTRA) in the model list.";

async function onDraw(detail) {
  lastDraw = detail;
  const id = ++latest;
  if (!(await hasElectra(detail.model))) {
    if (id === latest) { strip.replaceChildren(); summary.textContent = NONE; }
    return;
  }
  const body = { text: detail.text, positions: detail.positions, seed: detail.seed };
  if (detail.model) body.model = detail.model;
  try {
    const r = await judge(body);
    if (id !== latest) return;
    draw(strip, r);
    say(summary, r, "The generator filled all " + r.filled + " masked positions; " + r.replaced + " of its fills differ from the original " +
      "(a fill equal to the original counts as original).");
  } catch (err) { if (id === latest) fail(summary, strip, err); }
}

async function onOwn() {
  const text = own.value;
  if (!text) { ownStrip.replaceChildren(); ownSummary.textContent = ""; return; }
  const body = { text };
  if (lastDraw && lastDraw.model) body.model = lastDraw.model;
  if (!(await hasElectra(body.model))) { ownStrip.replaceChildren(); ownSummary.textContent = NONE; return; }
  try {
    const r = await judge(body);
    if (own.value !== text) return;
    draw(ownStrip, r);
    say(ownSummary, r, "Your sentence, judged as typed (nothing was filled).");
  } catch (err) { fail(ownSummary, ownStrip, err); }
}

document.addEventListener("objectives:corrupted", (e) => onDraw(e.detail));
let timer = 0;
own.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(onOwn, 250); });
onOwn();
