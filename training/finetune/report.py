"""The fine-tune lab's measured figures: committed result files, the card built from them, the docs tables.

    python -m training.finetune.report --run names-grid,spaces-grid   # run these PLAN entries, keep their output
    python -m training.finetune.report --stale                       # rerun every entry whose models changed
    python -m training.finetune.report                               # card + docs/finetune.md block from the files
    python -m training.finetune.report --print-only                  # print the tables of the card

Each PLAN entry is one `python -m training finetune` command; its output (every JSON line, after a
first "command" line naming the command and the sha256 of the bert.onnx and gpt.onnx it ran on) is
committed as models/finetune_results/NAME.jsonl. The card (models/finetune.card.json) is built from
those files alone: each file's summary, whether its models are still the shipped ones (a whole-input
readout reads the GPT, so a new gpt.onnx makes that entry stale: `--stale` reruns it), the PLAN
entries not run yet, the primary question's answer (training/finetune/primary.py: the lab's one test,
Holm-corrected, planned in training/tasks/README.md) and one headline describing every other difference
of every file with its own uncorrected 95 % interval (a description, never a finding).
`python -m benchmarks.tables --write finetune` prints `markdown(card)` into docs/finetune.md.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from .primary import headcheck_rows, markdown as primary_markdown

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "models" / "finetune_results"
DEFAULT = ["--workers", "2", "--no-export", "--no-gpt"]
# What the card holds (issue 42): each task of the fixed set (training/tasks/README.md: the tasks no head
# can read first, then the ones a head reads), every arm at 8, 32 and 128 labelled examples, 5 seeds; the
# cheap arms (readout, probe, n-grams) at "all" too. Run one at a time, niced, on a machine left alone.
GRID = ["--arms", "readout,full,probe,scratch,ngram", "--sizes", "8,32,128,all", "--trained-up-to", "128", "--seeds", "5"]
SET = ("names", "repeats", "follows", "spaces", "typos", "capitals", "punctuation", "backwards")
PLAN = {f"{t}-grid": ["--task", t, *GRID] for t in SET}
# A readout declared after its task's grid ran (issue 52 must 2: names, read as 1 - p(the letter there);
# follows, BERT's next-sentence head):
# run on its own with the grid's seeds, so each seed has the same labelled examples as the grid's arms.
PLAN["names-readout"] = ["--task", "names", "--arms", "readout", "--sizes", "8,32,128,all", "--seeds", "5"]
PLAN["follows-readout"] = ["--task", "follows", "--arms", "readout", "--sizes", "8,32,128,all", "--seeds", "5"]  # {"nsp"}
# The lab's one primary question (training/tasks/README.md, written down before these ran): LP-FT minus
# class-balanced n-grams at 128 labelled examples on the tasks no head reads, 10 seeds, every test example's
# counts kept; Holm over the two (training/finetune/primary.py). Not among the grid's comparisons.
PRIMARY_ARGS = ["--arms", "full,ngram", "--sizes", "128", "--trained-up-to", "128", "--seeds", "10", "--keep-units"]
PRIMARY = {f"{t}-primary": ["--task", t, *PRIMARY_ARGS] for t in ("repeats", "questions")}
PLAN.update(PRIMARY)
ARM_HEAD = {"readout": "readout (own head)", "full": "LP-FT", "probe": "linear probe", "scratch": "from scratch",
            "ngram": "char n-grams (balanced)"}


def sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def fingerprint(model: str | Path) -> str:
    """Which BERT the figures are of: the sha256 of its bert.onnx."""
    return sha(Path(model) / "bert.onnx")


def reads_gpt(args: list[str]) -> bool:
    from app.contract.readouts import parse_json

    from .tasks import load_task

    task = load_task(args[args.index("--task") + 1])
    arms = args[args.index("--arms") + 1].split(",")
    read = parse_json(args[args.index("--readout") + 1]) if "--readout" in args else task.meta.get("readout")
    return "readout" in arms and isinstance(read, dict) and "gpt" in read  # {"nsp": ...} reads BERT, not the GPT


def run_entry(name: str, model: str = "models") -> Path:
    """Run one PLAN entry; its lines (after the command line) into RESULTS/NAME.jsonl."""
    args = ["--model", model, *PLAN[name], *DEFAULT]
    cmd = [sys.executable, "-m", "training", "finetune", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=os.environ | {"PYTHONPATH": str(REPO)})
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines or json.loads(lines[-1])["event"] != "summary":
        raise SystemExit(f"{' '.join(cmd)} failed: {lines[-1] if lines else proc.stderr[-2000:]}")
    return save(name, args, lines, model)


def save(name: str, args: list[str], lines: list[str], model: str = "models") -> Path:
    head = {"event": "command", "name": name, "command": "python -m training finetune " + " ".join(args),
            "bert_onnx_sha256": sha(Path(model) / "bert.onnx"), "gpt_onnx_sha256": sha(Path(model) / "gpt.onnx"),
            "reads_gpt": reads_gpt(args)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{name}.jsonl"
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join([json.dumps(head), *lines]) + "\n", encoding="utf-8")
    tmp.replace(out)
    return out


def read(path: Path) -> tuple[dict, list[dict], dict]:
    """(command line, result events, summary) of a result file."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[0], [r for r in rows if r["event"] == "result"], rows[-1]


def current(head: dict, model: str = "models", results: list[dict] | None = None) -> bool:
    """Are the file's figures of today's models and today's test set? (A task whose test part grew, as
    repeats' did for the primary question, makes its older files stale the same way.)"""
    m = Path(model)
    same_models = head["bert_onnx_sha256"] == sha(m / "bert.onnx") and (not head["reads_gpt"]
                                                                        or head["gpt_onnx_sha256"] == sha(m / "gpt.onnx"))
    if not same_models or not results:
        return same_models
    size = test_size(head)  # the task file read once, not once a result line
    return all(r.get("n_test") in (None, size) for r in results)


def test_size(head: dict) -> int | None:
    """How many test examples the file's task holds today."""
    from .tasks import load_task

    cmd = head["command"].split()
    return len(load_task(cmd[cmd.index("--task") + 1]).test) if "--task" in cmd else None


def file_enough(summary: dict, results: list[dict]) -> bool:
    """Can this file's test part carry a comparison (app/contract/finetune_evidence.py)? Its summary
    says so since issue 42; an older file's result lines give its number of test texts."""
    from app.contract.finetune_evidence import MIN_TEST_TEXTS

    if summary.get("evidence"):
        return bool(summary["evidence"]["enough"])
    return bool(results) and min(r.get("n_test", 0) for r in results) >= MIN_TEST_TEXTS


def build_card(model: str = "models") -> dict:
    from .stats import METHOD

    files, enough = {}, {}
    for name in PLAN:
        path = RESULTS / f"{name}.jsonl"
        if path.exists():
            head, results, summary = read(path)
            files[name] = {"command": head["command"], "bert_onnx_sha256": head["bert_onnx_sha256"],
                           "gpt_onnx_sha256": head["gpt_onnx_sha256"], "reads_gpt": head["reads_gpt"],
                           "current": current(head, model, results), "task": summary["task"], "summary": summary}
            enough[name] = file_enough(summary, results)
    # only files whose test part reaches the minimum are compared (issue 42): the others' numbers stay in their tables
    comps = [(n, o, k) for n, f in files.items() if enough[n] and n not in PRIMARY and f["current"]  # stale: its own table only
             for o, by in (f["summary"].get("differences") or {}).items() for k, d in by.items() if d.get("n", 0) > 1]
    m = len(comps)
    rows = []
    for n, o, k in comps:  # described with their own 95 % t interval: the lab's one test is the primary question
        d = files[n]["summary"]["differences"][o][k]
        rows.append({"file": n, "task": files[n]["task"], "head_reads": head_reads(files[n]["summary"]), "of": ["full", o],
                     "size": k, "mean": d["mean"], "lo": d["lo"], "hi": d["hi"],
                     "excludes_zero": excludes_zero(d)})
    tasks = sorted({files[n]["task"] for n, _, _ in comps})
    sizes = sorted({k for _, _, k in comps}, key=lambda s: (s == "all", int(s) if s.isdigit() else 0))
    return {"model": model, "bert_onnx_sha256": fingerprint(model), "gpt_onnx_sha256": sha(Path(model) / "gpt.onnx"),
            "interval": METHOD, "files": files, "not_run": [n for n in PLAN if n not in files],
            "described": described(), "primary": primary_answer(), "headcheck": headcheck_rows(model),
            "headline": {"m": m, "tasks": tasks, "sizes": sizes, "comparisons": rows,
                         "text": headline_text(m, tasks, sizes, rows)}}


def primary_answer() -> dict:
    """The primary question's answer (training/finetune/primary.py) from its committed files."""
    from .primary import answer

    by_task = {}
    for name, args in PRIMARY.items():
        path = RESULTS / f"{name}.jsonl"
        by_task[args[args.index("--task") + 1]] = read(path)[1] if path.exists() else []
    return answer(by_task)


def head_reads(summary: dict) -> bool:
    """Does a pretrained head read this task with no labels? It does when the task declares a readout
    (training/tasks/tasks.json, the file's first line): the page groups each task by the same rule."""
    from .readout import declared
    from .tasks import load_task

    return "readout" in summary.get("results", {}) or bool(declared(load_task(summary["task"])))


def scores_by_seed(task: str, arm: str) -> dict[str, dict[int, float]]:
    """{size: {seed: score}} of one arm of one task, from every committed file of that task."""
    out: dict[str, dict[int, float]] = {}
    for name in PLAN:
        path = RESULTS / f"{name}.jsonl"
        if name not in PRIMARY and path.exists() and PLAN[name][PLAN[name].index("--task") + 1] == task:
            head, results, _ = read(path)
            if not current(head, results=results):
                continue  # a stale file's seeds scored another test set: never paired with a current one
            for r in results:
                if r["arm"] == arm and str(r["size"]) != "0":
                    out.setdefault(str(r["size"]), {})[r["seed"]] = r["score"]
    return out


DESCRIBED = (("probe", "ngram"), ("full", "readout"))


def described() -> list[dict]:
    """Differences shown as description, never counted among the card's comparisons nor claimed (issue
    52 must 2): the frozen probe against n-grams (never compared before), and LP-FT against a readout that
    ran in a file of its own. Student's t over the per-seed differences (the same seeds: the same labelled
    examples), 95 %, uncorrected."""
    from .stats import t_interval

    rows = []
    for task in dict.fromkeys(PLAN[n][PLAN[n].index("--task") + 1] for n in PLAN):
        for a, b in DESCRIBED:
            left, right = scores_by_seed(task, a), scores_by_seed(task, b)
            if a == "full" and (RESULTS / f"{task}-grid.jsonl").exists() and "readout" in read(
                    RESULTS / f"{task}-grid.jsonl")[2]["results"]:
                continue  # compared in the grid file itself, corrected with the rest
            for size in ("8", "32", "128"):
                seeds = sorted(set(left.get(size, {})) & set(right.get(size, {})))
                if len(seeds) > 1:
                    mean, lo, hi = t_interval([left[size][k] - right[size][k] for k in seeds])
                    rows.append({"task": task, "of": [a, b], "size": size, "n": len(seeds), "mean": mean, "lo": lo,
                                 "hi": hi})
    return rows


def described_text(rows: list[dict]) -> str:
    if not rows:
        return ""
    said = "; ".join(f"{r['task']} at {r['size']}: {ARM_HEAD[r['of'][0]]} {100 * r['mean']:+.1f} points against "
                     f"{ARM_HEAD[r['of'][1]]} ({100 * r['lo']:+.1f} to {100 * r['hi']:+.1f})" for r in rows)
    return ("**Described, not compared** (95 % t interval over the per-seed differences, uncorrected: not among the "
            f"card's comparisons and claimed nowhere): {said}.\n")


def said(c: dict) -> str:
    return (f"{c['task']} at {c['size']}: LP-FT {100 * c['mean']:+.1f} points against {ARM_HEAD[c['of'][1]]} "
            f"({100 * c['lo']:+.1f} to {100 * c['hi']:+.1f})")


def excludes_zero(d: dict) -> bool:
    """Does a difference's uncorrected 95 % interval leave out 0? Said as description, never as a finding;
    an interval of zero width measures no spread and never counts (stats.zero_width)."""
    from .stats import zero_width

    return d.get("lo") is not None and not zero_width(d) and (d["lo"] > 0 or d["hi"] < 0)


def headline_text(m: int, tasks: list, sizes: list, rows: list) -> str:
    """The m differences of LP-FT against the other arms, described (issue 52 must 1): each with its own
    uncorrected 95 % interval, none a finding. First the tasks no pretrained head reads (LP-FT against
    n-grams at the largest size), then the ones a head reads."""
    if not m:
        return "No LP-FT comparison has been run yet."
    out = [f"{m} differences of LP-FT against the other arms ({len(tasks)} task{'s' * (len(tasks) != 1)}: "
           f"{', '.join(tasks)}; size{'s' * (len(sizes) != 1)} {', '.join(sizes)}), described with their own "
           "uncorrected 95 % intervals: a description, not findings (the lab tests one question, the primary one)."]
    for reads, kind in ((False, "Tasks no head can read"), (True, "Tasks a pretrained head reads")):
        mine = [r for r in rows if r["head_reads"] == reads]
        if not mine:
            continue
        names = sorted({r["task"] for r in mine})
        away = [r for r in mine if r["excludes_zero"]]
        text = f"{kind} ({', '.join(names)}): " + (f"intervals leaving out 0: {'; '.join(map(said, away))}."
                                                   if away else "no interval leaves out 0.")
        if not reads:
            last = []
            for t in names:
                vs = [r for r in mine if r["task"] == t and r["of"][1] == "ngram"]
                if vs:
                    top = max(vs, key=lambda r: int(r["size"]) if r["size"].isdigit() else 10 ** 9)
                    last.append(said(top))
            if last:
                text += " Against character n-grams at the largest size: " + "; ".join(last) + "."
        out.append(text)
    return " ".join(out)


def pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def cell(c: dict | None) -> str:
    if not c or c.get("mean") is None:
        return "-"
    return pct(c["mean"]) if c.get("lo") is None else f"{pct(c['mean'])} ({pct(c['lo'])} to {pct(c['hi'])})"


def diff_cell(d: dict | None) -> str:
    """A difference and its uncorrected 95 % interval (a description: the lab's one test is the primary question)."""
    if not d or d.get("mean") is None or d.get("lo") is None:
        return "-"
    return f"{100 * d['mean']:+.1f} ({100 * d['lo']:+.1f} to {100 * d['hi']:+.1f})"


def choices_line(s: dict) -> str:
    ch, bits = s.get("choices") or {}, []
    for arm, by in ch.items():
        for size, rows in by.items():
            if not rows:
                continue
            edge = sum(bool(r.get("C_at_edge")) for r in rows)
            improving = sum(bool(r.get("still_improving")) for r in rows)
            small = sum("smaller" in str(r.get("model", "")) for r in rows)
            steps = [r.get("best_step") for r in rows if r.get("best_step") is not None]
            lrs = sorted({r["lr"] for r in rows if r.get("lr")})
            searched = [r for r in rows if "lr_at_edge" in r]
            inside = sum(not r["lr_at_edge"] for r in searched)
            said = [text for text, shown in [
                (f"rate inside the rates tried {inside}/{len(searched)}", searched),
                (f"C at the grid's edge {edge}/{len(rows)}", edge),
                (f"still improving at the cap {improving}/{len(rows)}", improving),
                (f"smaller model chosen {small}/{len(rows)}", small),
                (f"best steps {'/'.join(map(str, steps))}, rates {'/'.join(f'{x:g}' for x in lrs)}", steps and lrs),
            ] if shown]
            if said:
                bits.append(f"{arm} at {size}: " + ", ".join(said))
    return "; ".join(bits)


def file_table(name: str, f: dict) -> list[str]:
    s = f["summary"]
    res, arms = s["results"], list(s["results"])
    sizes = sorted({k for a in arms for k in res[a] if res[a][k].get("n")}, key=lambda k: (k == "all", int(k) if k.isdigit() else 0))
    below = not (s.get("evidence") or {}).get("enough", True)  # below the minimum: no difference column
    others = [] if below else [o for o in (s.get("differences") or {})]
    metric = "accuracy %" if s["metric"] == "accuracy" else "F1 % of the rarer tag"
    stale = "" if f["current"] else " **stale: its models changed; rerun `python -m training.finetune.report --stale`**"
    out = [f"**{s['task']}** ({metric}; mean (95 % interval); `models/finetune_results/{name}.jsonl`: `{f['command']}`){stale}\n",
           "| labelled examples | " + " | ".join(ARM_HEAD[a] for a in arms) + "".join(f" | LP-FT - {o}" for o in others) + " |",
           "|---" * (1 + len(arms) + len(others)) + "|"]
    for k in sizes:
        out.append(f"| {k} | " + " | ".join(cell(res[a].get(k)) for a in arms)
                   + "".join(f" | {diff_cell(s['differences'][o].get(k))}" for o in others)
                   + " |")
    maj = s.get("majority") or {}
    out.append(f"\nAlways answering '{maj.get('label')}' (the most common label): {pct(maj.get('score'))}. "
               + (f"Chosen on the validation slice: {choices_line(s)}. " if choices_line(s) else "")
               + (s["headline"]["text"] if (s.get("headline") or {}).get("below_minimum") else "") + "\n")
    return out


def markdown(card: dict) -> str:
    """The tables of docs/finetune.md, from the card alone."""
    if "files" not in card:
        return ("The card `models/finetune.card.json` predates issue 32 (readout, LP-FT, class weights, seed-level "
                "intervals): run `python -m training.finetune.report --run NAME` and then `python -m training.finetune.report`.")
    out = ["Intervals: Student's t over seeds (n - 1 degrees of freedom), 95 %, uncorrected (a description of each "
           "figure; one seed: a percentile bootstrap over the held-out examples). The one test the lab makes is the "
           "primary question: Holm over its tasks, with a two-level bootstrap beside it.\n"]
    out += primary_markdown(card)
    out.append(f"**Over every file:** {card['headline']['text']}\n")
    if card.get("described"):
        out.append(described_text(card["described"]))
    for name, f in card["files"].items():
        out += file_table(name, f)
    if card["not_run"]:
        out.append("Not run yet (one shared CPU core): " + ", ".join(
            f"`{n}` ({' '.join(PLAN[n])})" for n in card["not_run"]) + ".\n")
    return "\n".join(out)


def write_card(card: dict, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="models")
    p.add_argument("--run", default=None, help=f"comma-separated PLAN entries to run: {', '.join(PLAN)}")
    p.add_argument("--stale", action="store_true", help="rerun every committed entry whose models changed")
    p.add_argument("--print-only", action="store_true", help="print the tables of the existing card")
    p.add_argument("--no-docs", action="store_true", help="do not write the docs/finetune.md block")
    a = p.parse_args()
    path = Path(a.model) / "finetune.card.json"
    if a.print_only:
        print(markdown(json.loads(path.read_text(encoding="utf-8"))))
        return
    todo = [n for n in (a.run.split(",") if a.run else []) if n]
    bad = [n for n in todo if n not in PLAN]
    if bad:
        raise SystemExit(f"--run: unknown entries {bad}; the plan has {', '.join(PLAN)}")
    if a.stale:
        todo += [n for n in PLAN if (RESULTS / f"{n}.jsonl").exists() and not current(read(RESULTS / f"{n}.jsonl")[0], a.model, read(RESULTS / f"{n}.jsonl")[1])]
    for name in dict.fromkeys(todo):
        print("ran", run_entry(name, a.model), file=sys.stderr)
    card = build_card(a.model)
    write_card(card, path)
    print(markdown(card))
    if not a.no_docs and path.resolve() == (REPO / "models" / "finetune.card.json").resolve():
        subprocess.run([sys.executable, "-m", "benchmarks.tables", "--write", "finetune"], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL, env=os.environ | {"PYTHONPATH": str(REPO)})
        print("docs/finetune.md: the finetune block rewritten from", path, file=sys.stderr)


if __name__ == "__main__":
    main()
