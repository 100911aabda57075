/* The class hand-off before Start (issue 32): what the pooled labels hold, named before anything runs
   (a task needs two labels at least: one class only is said here, not as an error after Start). The grid
   it starts with is the server's (GET /api/finetunes limits.handoff, app/contract/finetune_cost.py HANDOFF),
   the time the plan's (finetune_plan.js).
   API: labelCounts(text) -> {kind, counts: {label: n}, lines, bad, pairs, declared?}; handoffWords(info) -> sentence.
   pairs: every labelled whole text holds a line break (two lines: BERT's next-sentence readout fits it). */

/* Labels per line of a task file's text (JSON Lines): whole-input "label", or per-character "tags"; a first
   line {"readout": ...} (the file's own readout, issue 42) is `declared`, not a labelled line. */
export function labelCounts(text) {
  const counts = {};
  let kind = null, lines = 0, bad = 0, declared, pairs = true;
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let row;
    try { row = JSON.parse(line); } catch { lines += 1; bad += 1; continue; }
    if (lines === 0 && declared === undefined && row && typeof row === "object" && "readout" in row) {
      declared = row.readout;
      continue;
    }
    lines += 1;
    if (row && typeof row.label === "string") {
      kind = kind || "sequence";
      counts[row.label] = (counts[row.label] || 0) + 1;
      pairs = pairs && typeof row.text === "string" && row.text.includes("\n");
    } else if (row && typeof row.tags === "string") {
      kind = kind || "token";
      for (const t of row.tags) counts[t] = (counts[t] || 0) + 1;
    } else bad += 1;
  }
  pairs = pairs && kind === "sequence";
  return declared === undefined ? { kind, counts, lines, bad, pairs } : { kind, counts, lines, bad, pairs, declared };
}

/* One sentence for the start form: the labels and how many lines carry each; a single class named. */
export function handoffWords(info) {
  const names = Object.keys(info.counts);
  const unit = info.kind === "token" ? "characters" : "lines";
  const list = names.map((l) => `“${l}” ${info.counts[l]} ${unit}`).join(", ");
  if (names.length === 0) return "No labelled lines yet: the class has nothing to fine-tune on.";
  if (names.length === 1) {
    return `Only one label so far: every labelled line says “${names[0]}”. A fine-tune needs at least two different ` +
      "labels to tell apart: label some lines with another answer first.";
  }
  return `Labels: ${list}.`;
}
