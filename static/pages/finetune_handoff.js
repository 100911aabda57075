/* The class hand-off before Start (issue 32): what the pooled labels hold, named before anything runs
   (a task needs two labels at least: one class only is said here, not as an error after Start), and
   a rough time estimate for the grid the form would start.
   API: labelCounts(text) -> {kind, counts: {label: n}, lines, bad, declared?}; handoffWords(info) -> sentence;
        estimateSeconds({lines, kind, arms, sizes, seeds, cores}) -> seconds; minutesWords(seconds). */

/* Labels per line of a task file's text (JSON Lines): whole-input "label", or per-character "tags"; a first
   line {"readout": ...} (the file's own readout, issue 42) is `declared`, not a labelled line. */
export function labelCounts(text) {
  const counts = {};
  let kind = null, lines = 0, bad = 0, declared;
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
    } else if (row && typeof row.tags === "string") {
      kind = kind || "token";
      for (const t of row.tags) counts[t] = (counts[t] || 0) + 1;
    } else bad += 1;
  }
  return declared === undefined ? { kind, counts, lines, bad } : { kind, counts, lines, bad, declared };
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

/* Rough CPU-seconds per fine-tune (measured: a 20-line class hand-off, 108 CPU-seconds for the default grid;
   spaces at 32, docs/finetune.md "Speed"): the trained
   arms grow with the examples they read; the readout, probe and n-grams cost little after their setup. */
const PER_JOB = { full: (n) => 2 + 0.35 * n, scratch: (n) => 1.5 + 0.28 * n, probe: () => 0.2, ngram: () => 0.3, readout: () => 0.1 };
const SETUP = 15; // loading the models, the readout's and the probe's one pass over every example

export function estimateSeconds({ lines, kind, arms, sizes, seeds, cores = 2 }) {
  const chars = kind === "token" ? 2 : 1; // a per-character task scores every character: slower
  let total = SETUP;
  for (const s of sizes) {
    const n = s === "all" ? lines * 0.7 : Number(s);
    if (!(n >= 2) || (s !== "all" && n >= lines * 0.7)) continue; // larger than the labelled set: the trainer skips it
    for (const arm of arms) total += seeds * (PER_JOB[arm] ? PER_JOB[arm](n) : 1) * chars;
  }
  return total / Math.max(1, Math.min(cores, 2));
}

export function minutesWords(seconds) {
  if (seconds < 90) return "about a minute on this machine";
  return `about ${Math.round(seconds / 60)} minutes on this machine`;
}
