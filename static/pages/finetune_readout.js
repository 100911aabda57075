/* The readout choice before Start (issue 42 must 1): for an uploaded task file or the class's pooled labels
   (Label together -> "Fine-tune on the pooled labels"), the readouts that fit those labels, in the vocabulary
   of the shipped table (app/contract/readouts.py), sent as POST /api/finetunes "readout".
   API: readoutChoices(info) -> [{value, text}] (value "" = send nothing: the file's own declaration, or none;
        "none" = switch a declared one off; else a declaration's JSON); readoutHint(info) -> sentence;
        renderReadout(info) fills #ft-readout-box (hidden without info); chosenReadout() -> the body's value or
        undefined (nothing to send).
   info is labelCounts(text) of finetune_handoff.js: {kind, counts, pairs, declared}; BERT's next-sentence
   readout ({"nsp": LABEL}) is offered only where every text is two lines (pairs). */
import { el, $ } from "../lib/dom.js";

/* Which tag a per-character readout marks: "1" where there is one, else the rarer (as the trainer does). */
function markedTag(counts) {
  const tags = Object.keys(counts);
  if (tags.includes("1")) return "1";
  return tags.slice().sort((a, b) => counts[a] - counts[b])[0];
}

const PER_CHAR = [
  [{ insert: " " }, "a space belongs after this character? (BERT's guess for a gap put between two characters)"],
  [{ insert: ",.;:!?" }, "a punctuation mark belongs after it? (BERT's guess for , . ; : ! ? in a gap)"],
  [{ masked: "other", positions: "letters" }, "this letter is wrong, a typo? (how surprised BERT is by the letter when it is hidden; letters only)"],
  [{ masked: "upper" }, "this letter should be a capital? (BERT's guess for the hidden letter: capital or small)"],
];

function declaredWords(d) {
  if (d === "none") return "none";
  if (d && d.gpt) return `GPT's likelihood, likelier texts are “${d.gpt}”`;
  if (d && d.nsp) return `BERT's next-line guess, lines that carry on are “${d.nsp}”`;
  if (d && d.insert) return `BERT's guess for ${JSON.stringify(d.insert)} in a gap`;
  if (d && d.masked) return d.masked === "upper" ? "BERT's guess: capital or small" : "how surprised BERT is by each character";
  return JSON.stringify(d);
}

export function readoutChoices(info) {
  if (!info || !info.kind) return [];
  const labels = Object.keys(info.counts);
  const out = info.declared !== undefined
    ? [{ value: "", text: `As the file declares: ${declaredWords(info.declared)}` }, { value: "none", text: "None: no readout" }]
    : [{ value: "", text: "None: no readout" }];
  if (labels.length !== 2) return out;
  if (info.kind === "sequence") {
    for (const label of labels) {
      out.push({ value: JSON.stringify({ gpt: label }), text: `GPT's likelihood: the texts GPT finds more like ordinary English are “${label}”` });
    }
    if (info.pairs) {
      for (const label of labels) {
        out.push({ value: JSON.stringify({ nsp: label }), text: "BERT's next-line guess (does the second line carry on from " +
          `the first? BERT learnt this question while it read the plays): the texts where it says yes are “${label}”` });
      }
    }
  } else {
    const tag = markedTag(info.counts);
    for (const [decl, words] of PER_CHAR) out.push({ value: JSON.stringify(decl), text: `Tag “${tag}” = ${words}` });
  }
  return out;
}

export function readoutHint(info) {
  const what = "A readout asks the pretrained model its own question, with no labels taught at all: " +
    (info && info.kind === "token" ? "BERT guesses a hidden character. " : "GPT says how much a text looks like the English it read" +
      (info && info.pairs ? ", or BERT says whether a text's second line carries on from its first. " : ". ")) +
    "If that answer means the same as your labels, the readout shows what the model already knew before seeing any of them " +
    "(the first row of the results). Only you know whether it means the same, so nothing is read unless you choose.";
  const n = info ? Object.keys(info.counts).length : 0;
  if (info && info.kind && n > 2) {
    return what + ` Your labels have ${n} answers; a readout splits one number in two, so it needs exactly two.`;
  }
  return what;
}

export function renderReadout(info) {
  const box = $("#ft-readout-box");
  const choices = readoutChoices(info);
  box.hidden = !choices.length;
  $("#ft-readout-choices").replaceChildren(...choices.map((c, i) => el("label", { class: "ft-readout-choice" }, [
    el("input", { type: "radio", name: "ft-readout", value: c.value, checked: i === 0 }), " ", c.text])));
  $("#ft-readout-hint").textContent = choices.length ? readoutHint(info) : "";
}

export function chosenReadout() {
  if ($("#ft-readout-box").hidden) return undefined;
  const picked = document.querySelector("input[name=ft-readout]:checked");
  if (!picked || picked.value === "") return undefined;
  return picked.value === "none" ? "none" : JSON.parse(picked.value);
}
