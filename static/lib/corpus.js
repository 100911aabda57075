/* The chosen model set's own text. A training run's sets carry `examples` (GET /api/models,
   app/contract/examples.py): lines of the held-out part of the text they were trained on. With
   such a set chosen, the pages' default prompt, sentence and examples come from those lines, and
   the footer says what the set was trained on, instead of Shakespeare.
   ownExamples()        the chosen set's examples ({lines, prompt, sentence, mask, source}) or null
   linkHas(key)         whether the page's link set `key` (a link's own text always wins)
   On every page with a chosen set (the link's `model`), the footer is rewritten once info() answers. */
import { info } from "./api.js";
import { modelId } from "./state.js";

export function linkHas(key) {
  return new URLSearchParams(location.search).has(key);
}

export async function ownExamples() {
  try {
    return (await info()).examples || null;
  } catch (err) {
    return null;
  }
}

function trainedOn(cards) {
  const card = (cards && (cards.gpt || cards.bert || cards.electra)) || {};
  const corpus = card.corpus || {};
  if (corpus.source === "folder" && corpus.name) return `the “${corpus.name}” texts`;
  return "a text of its own (given when its run started), not Shakespeare";
}

async function footer() {
  const node = document.getElementById("footer-models");
  if (!node || !modelId()) return;
  let set = null;
  try {
    set = await info();
  } catch (err) {
    return;
  }
  if (!set || !set.examples) return; // the shipped set: the footer's Shakespeare is right
  node.textContent = `Tiny character-level models, running on this server. This page uses “${set.name}”, trained on ` +
    `${trainedOn(set.cards)}; its examples come from the part of that text it never trained on. Works offline.`;
}

footer();
