/* Before Start (issue 42 musts 2 and 3): what the fine-tune will do with this task, from the server's plan
   (POST /api/finetune-plan: the trainer's parser and its rule for sizes): the training and test parts,
   the sizes and arms that will be skipped and why (the words the run's notes use after it), whether the
   test part can carry a comparison of two arms (the sentence the run's headline starts with after it), and
   how long it will take on this machine (#ft-estimate: the server's words, from a training step timed here;
   while the server is still timing one, asked again a few seconds later).
   API: showPlan(request) with request = {task} | {task_text} plus {sizes, model, arms, seeds, readout?}, or
        null (nothing to plan); planLines(plan) -> sentences (the split, the skipped sizes and arms, the evidence). */
import { el, $ } from "../lib/dom.js";
import { api, latest } from "../lib/api.js";
import { skippedLines } from "./finetune_results.js";

const turn = latest();
const AGAIN_MS = 3000; // while the server times a step (the first plan of a model set)
let timer = null;

export function planLines(p) {
  const runs = p.sizes.map((s) => (s === "all" ? `all (${p.n_train})` : String(s))).join(", ");
  return [`This task: ${p.n_train + p.n_test} labelled texts, ${p.n_train} to train on and ${p.n_test} held out to test. ` +
    `Sizes that will run: ${runs || "none"}.`, ...skippedLines([...p.skipped, ...(p.skipped_arms || [])]), p.evidence.text];
}

function showEstimate(est) {
  const note = $("#ft-estimate");
  note.textContent = est ? est.text : "";
  if (est && typeof est.seconds === "number") note.dataset.seconds = String(est.seconds);
  else delete note.dataset.seconds;
}

async function fetchPlan(request) {
  const box = $("#ft-plan");
  const ticket = turn.begin();
  try {
    const p = await api("/api/finetune-plan", { body: request, model: false, quiet: true });
    if (!ticket()) return;
    box.dataset.enough = String(p.evidence.enough);
    const lines = planLines(p);
    box.replaceChildren(...lines.map((line, i) => el("li", {
      class: i === 0 ? "plan-part" : i === lines.length - 1 ? "plan-evidence" : "plan-skip", text: line })));
    showEstimate(p.estimate);
    if (p.estimate.measuring) timer = setTimeout(() => fetchPlan(request), AGAIN_MS);
  } catch (e) {
    if (!ticket()) return;
    delete box.dataset.enough;
    box.replaceChildren(el("li", { text: "What this fine-tune will run cannot be said yet: " + e.message }));
    showEstimate(null);
  }
  box.hidden = false;
}

/* Asked again a moment after the last change (typing sizes sends one request, not one per key). */
export function showPlan(request) {
  clearTimeout(timer);
  const box = $("#ft-plan");
  if (!request) {
    turn.cancel();
    box.replaceChildren();
    box.hidden = true;
    showEstimate(null);
    return;
  }
  timer = setTimeout(() => fetchPlan(request), 250);
}
