/* Each family's page pieces, by name: one registration line per family. Which families there are,
   their order, labels and whether they train come from the server (lib/api.js families(); the
   specs in app/contract/families.py).
   know(specs)    remember the server's specs
   label(name)    "GPT", "BERT", ... (the spec's label)
   spec(name)     the server's spec of it ({} before know() or for a family the server does not declare)
   pieces(name)   the family's pieces: chart, view, page, show(node, part), results(metrics), legend()? */
import gpt from "./gpt.js";
import bert from "./bert.js";
import electra from "./electra.js";
import t5 from "./t5.js";
import plm from "./plm.js";

export const PIECES = { gpt, bert, electra, t5, plm };

const specs = {};

export function know(list) {
  for (const s of list || []) specs[s.name] = s;
}

export function label(name) {
  return (specs[name] && specs[name].label) || String(name).toUpperCase();
}

export function spec(name) {
  return specs[name] || {};
}

/* A family this copy of the pages has no script for still gets plain pieces: its label and its
   live view as text. */
export function pieces(name) {
  return PIECES[name] || {
    name, chart: { caption: `${label(name)} loss`, yLabel: "loss" }, view: { title: label(name) }, page: null,
    show(node, part) { node.textContent = part ? JSON.stringify(part) : `(no ${label(name)} in this run)`; },
    results: () => [],
  };
}
