/* ELECTRA's page pieces (its spec: app/contract/families.py). ELECTRA's discriminator reads a line
   in which a small generator swapped some characters and says, for every character, how likely it
   is that it was swapped. The Train page shows that on its probe line, and the held-out rows. */
import { el, clear } from "../lib/dom.js";
import { num, visibleChar } from "../lib/text.js";

export default {
  name: "electra",
  chart: { caption: "ELECTRA loss (generator + spotting swaps)", yLabel: "loss (generator + 50 × detection)" },
  view: { title: "ELECTRA spots the swapped characters" },
  page: { href: "/objectives", text: "Objectives" },

  /* The line as the generator left it; a character ELECTRA calls swapped (p > 50 %) or one that
     really was swapped is marked: green when ELECTRA is right about it, pink when it is wrong.
     compact (a snapshot card): the marked line only. */
  show(node, d, compact = false) {
    clear(node);
    if (!d) { node.append(el("pre", { class: "sample", text: "(no ELECTRA in this run)" })); return; }
    const swapped = new Set(d.replaced);
    const line = el("pre", { class: "sample" });
    [...d.corrupted].forEach((ch, i) => {
      const p = d.p_replaced[i];
      const said = p > 0.5;
      if (!said && !swapped.has(i)) { line.append(ch); return; }
      line.append(el("mark", { class: said === swapped.has(i) ? "fill-ok" : "fill-bad", text: visibleChar(ch),
        title: `p(swapped) ${num(100 * p, 0)} %; ${swapped.has(i) ? "it was swapped" : "it is the original"}` }));
    });
    line.append(el("span", { class: "note", text: `   right about ${d.correct} of ${d.characters} characters` }));
    if (!compact) node.append(el("pre", { class: "sample", text: d.text }));
    node.append(line);
  },

  legend() {
    return el("p", { class: "note fill-legend" }, [el("mark", { class: "fill-ok", text: "green" }),
      " = a swap ELECTRA caught · ", el("mark", { class: "fill-bad", text: "pink" }),
      " = a swap it missed, or an original character it called swapped"]);
  },

  results(e) {
    return [["ELECTRA", "swapped characters caught (p > 50 %)", `${num(100 * e.replaced_recall, 1)} %`],
      ["ELECTRA", "original characters wrongly called swapped", `${num(100 * e.original_flagged, 1)} %`],
      ["ELECTRA", "right at every character / always answering “original”",
        `${num(100 * e.detection_accuracy, 1)} % / ${num(100 * e.always_original_accuracy, 1)} %`]];
  },
};
