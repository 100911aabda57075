"""python -m training live: a real tiny run in a subprocess (seconds), its JSON-lines protocol, the
model sets it leaves, corpus refusals and a prompt, clean stop."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from app.contract import splitmix32, uniform
from training.live.settings import SAMPLE_CHARS
from training.live.views import fill_positions, position_kind
from training.live.corpus import MIN_CORPUS_CHARS, clean_text, prepare_corpus, split_text

REPO = Path(__file__).resolve().parents[2]
TINY = {"n_layer": 1, "n_head": 2, "n_embd": 32, "n_ff": 64, "context": 32, "batch_size": 8}


def corpus_text(tiny_corpus: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(tiny_corpus.glob("*.txt")))


def live(args: list[str], module: str = "training.live", **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *module.split(), *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, **kw)


def events_of(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def complete(folder: Path, families=("gpt", "bert")) -> bool:
    names = {p.name for p in folder.iterdir()}
    return "vocab.json" in names and all({f"{f}.onnx", f"{f}.card.json"} <= names for f in families)


@pytest.fixture(scope="module")
def text_file(tmp_path_factory, tiny_corpus) -> Path:
    path = tmp_path_factory.mktemp("pasted") / "our poems.txt"
    path.write_text(corpus_text(tiny_corpus), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, text_file):
    """One step-bound run of both families through `python -m training live` (the CLI wiring)."""
    run_dir = tmp_path_factory.mktemp("run") / "r1"
    overrides = json.dumps({**TINY, "steps": 40})
    proc = live(["--out", str(run_dir), "--corpus", str(text_file), "--minutes", "5", "--overrides", overrides,
                 "--export-cache", str(tmp_path_factory.mktemp("export-cache"))], module="training live")
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-2000:]
    return run_dir, events_of(out)


@pytest.mark.slow
def test_protocol_reports_the_run_in_order(tiny_run):
    run_dir, events = tiny_run
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[1] == "models" and kinds[-1] == "finished"
    assert kinds.index("exporting") > max(i for i, k in enumerate(kinds) if k == "progress")
    # progress.jsonl holds the same lines: the history for late joiners
    assert events_of((run_dir / "progress.jsonl").read_text(encoding="utf-8")) == events
    models = events[1]["models"]
    assert set(models) == {"gpt", "bert"} and all(m["parameters"] > 0 for m in models.values())
    assert events[1]["corpus"]["documents"] == {"train": 16, "validation": 2, "test": 2}
    for fam in ("gpt", "bert"):
        prog = [e for e in events if e["event"] == "progress" and e["family"] == fam]
        assert prog and prog[-1]["step"] == 40 and prog[-1]["fraction"] == 1.0
        assert all({"loss", "tokens_per_s", "elapsed_s", "remaining_s"} <= set(e) for e in prog)
        # never "loss –, 0 tokens/s": a model with no step since its last line waits (or repeats its last values)
        assert all(e["loss"] is not None and e["tokens_per_s"] > 0 for e in prog)
        evals = [e for e in events if e["event"] == "eval" and e["family"] == fam]
        assert evals[0]["step"] == 0 and evals[-1]["step"] == 40
        # an untrained model is about as good as uniform guessing over the vocabulary
        assert abs(evals[0]["val_loss" if fam == "gpt" else "val_mlm"] - math.log(events[1]["corpus"]["vocab_size"])) < 1.0
    # BERT's held-out masked top-1 at every evaluation, beside the unigram baseline (one fixed number)
    bert_evals = [e for e in events if e["event"] == "eval" and e["family"] == "bert"]
    assert all(0 <= e["val_masked_top1"] <= 1 for e in bert_evals)
    assert len({e["val_masked_top1_unigram"] for e in bert_evals}) == 1 and 0 < bert_evals[0]["val_masked_top1_unigram"] < 1
    samples = [e for e in events if e["event"] == "sample"]
    assert samples[0]["step"] == 0
    assert all(len(s["gpt"]["text"]) == SAMPLE_CHARS and s["bert"]["guesses"] for s in samples)
    # each model's own steps (the page shows these; `step`, their sum, only names folders)
    assert all(set(s["steps"]) == {"gpt", "bert"} and sum(s["steps"].values()) == s["step"] for s in samples)


@pytest.mark.slow
def test_snapshots_are_complete_model_sets_the_app_can_load(tiny_run):
    from app.contract import read_examples
    from app.registry import ModelSet, read_meta
    from app.runtime import Runtime

    run_dir, events = tiny_run
    landed = [e for e in events if e["event"] == "snapshot"]
    names = {e["name"] for e in landed}
    assert "final" in names and "step-000000" in names and len(names) >= 4
    assert not list(run_dir.rglob(".tmp-*"))
    for e in landed:
        folder = run_dir / e["path"]
        assert complete(folder)
        models = ModelSet.load(read_meta(folder), Runtime())
        assert models.gpt is not None and models.bert is not None and not models.problems, models.problems
        card = json.loads((folder / "gpt.card.json").read_text())
        assert card["training"]["steps"] == e["steps"]["gpt"] and card["onnx"]["parity_max_abs_diff"] <= 1e-4
        # its own validation loss, measured at its step (the page marks the lowest)
        val = {f: [p for p in events if p["event"] == "eval" and p["family"] == f and p["step"] == e["steps"][f]]
               for f in ("gpt", "bert")}
        assert all(val[f] and e["validation_loss"][f] == val[f][-1]["val_loss"] for f in val)
        # lines of the run's own held-out text, for the applets' defaults
        examples = read_examples(folder)
        held = "".join((run_dir / "corpus" / f"part-{i:02d}.txt").read_text() for i in (16, 17))
        assert examples and all(line in " ".join(held.split()) for line in examples["lines"])
    assert json.loads((run_dir / "final" / "snapshot.json").read_text())["final"] is True


@pytest.mark.slow
def test_each_snapshot_holds_the_weights_of_its_moment(tiny_run):
    """Weights are swapped into one traced graph: the final file must be the final model (compared
    with the checkpoint in PyTorch) and differ from step 0's."""
    import onnxruntime as ort
    import torch

    from training.export import empty_cache
    from training.train import load_checkpoint

    torch.set_num_threads(1)  # more threads than free cores make OpenMP spin on a busy machine
    run_dir, _ = tiny_run
    _, model, tok, _ = load_checkpoint(run_dir / "checkpoints" / "gpt.pt")
    ids = torch.tensor([tok.encode("Line 3 speaks of the sea")])
    ref = model(ids).detach().numpy()
    outs = {}
    for name in ("final", "snapshots/step-000000"):
        sess = ort.InferenceSession(str(run_dir / name / "gpt.onnx"), providers=["CPUExecutionProvider"])
        outs[name] = sess.run(["logits"], {"input_ids": ids.numpy(), **empty_cache(model.cfg, 1)})[0]
    assert np.abs(outs["final"] - ref).max() < 1e-4
    assert np.abs(outs["snapshots/step-000000"] - ref).max() > 0.1


@pytest.mark.slow
def test_final_sample_is_reproducible_and_metrics_are_held_out(tiny_run):
    import torch

    from training.live.views import gpt_sample
    from training.train import load_checkpoint

    torch.set_num_threads(1)
    run_dir, events = tiny_run
    done = events[-1]
    meta = json.loads((run_dir / "final" / "snapshot.json").read_text())
    _, model, tok, _ = load_checkpoint(run_dir / "checkpoints" / "gpt.pt")
    again = gpt_sample(model, tok, meta["sample"]["gpt"]["prompt"])
    assert again["text"] == meta["sample"]["gpt"]["text"] == done["sample"]["gpt"]["text"]
    gpt, bert = done["metrics"]["gpt"], done["metrics"]["bert"]
    assert gpt["documents"] == ["part-18", "part-19"] and 0 < gpt["nats_per_char"] < math.log(events[1]["corpus"]["vocab_size"])
    assert 0 <= bert["masked_top1"] <= bert["masked_top5"] <= 1 and "nsp_accuracy" in bert
    assert "--corpus" in done["commands"]["live"] and "--resume" in done["commands"]["gpt_extend"]
    assert done["playable_after_s"] >= 0  # how soon, on this machine: python -m benchmarks.runs prints it
    card = json.loads((run_dir / "final" / "bert.card.json").read_text())
    assert card["evaluation"]["test"]["masked_top1"] == bert["masked_top1"]


@pytest.mark.parametrize("content, says", [
    (b"", "too short"),
    ("To be or not to be. " * 20, f"at least {MIN_CORPUS_CHARS:,}"),
    (b"\xff\xfe" + "abc".encode() * 1000, "not valid UTF-8"),
    (b"\x89PNG\r\n\x1a\n\x00\x00" * 500, "binary"),
])
def test_bad_corpus_is_refused_before_training(tmp_path, content, says):
    path = tmp_path / "corpus.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    proc = live(["--out", str(tmp_path / "run"), "--corpus", str(path), "--minutes", "1"])
    out, _ = proc.communicate(timeout=60)
    last = events_of(out)[-1]
    assert proc.returncode == 2 and last["event"] == "error" and last["parameter"] == "corpus"
    assert says in last["message"]
    assert not (tmp_path / "run" / "snapshots").exists()


def test_awkward_text_is_cut_and_kept_as_plain_characters(tmp_path):
    line = "word " * 2000 + "[MASK] [CLS] <script>alert(1)</script>\x00\x07"  # one huge line
    parts = split_text(clean_text(line))
    assert len(parts) == 20 and all(parts) and "".join(parts) == clean_text(line)
    assert "\x07" not in clean_text(line) and "[MASK] [CLS] <script>" in clean_text(line)
    src = tmp_path / "one-line.txt"
    src.write_text(line.replace("\x00", "") + "é" * 10, encoding="utf-8")
    folder, desc = prepare_corpus(src, tmp_path / "run")
    split = json.loads((folder / "split.json").read_text())
    assert len(split["train"]) == 16 and len(split["validation"]) == len(split["test"]) == 2
    assert desc == {"name": "one-line", "source": "text"}


def test_seeded_stream_matches_the_servers_and_fill_positions_are_fixed():
    """The live samples draw with the app's stream (app/sampling.py), so /api/generate with the same seed
    and settings on a snapshot retraces them."""
    from app import sampling

    for seed in (0, 1, 7, 4294967295, 123456789):
        assert splitmix32(seed) == sampling.splitmix32(seed)
        assert [uniform(seed, i) for i in range(5)] == [sampling.uniform(seed, i) for i in range(5)]
    assert 0 <= uniform(7, 0) < 1 and uniform(7, 0) != uniform(7, 1)
    probe = "Fair is foul, and foul is fair"
    pos = fill_positions(probe)
    assert pos == fill_positions(probe) and len(pos) == 4
    # a fair mix: a word start, a letter inside a word, a space and punctuation, not only word starts
    assert {position_kind(probe, p) for p in pos} == {"start", "inside", "space", "other"}
    long = "Now is the winter of our discontent made glorious summer by this sun of York;"
    assert len(fill_positions(long)) == round(0.15 * len(long))


@pytest.mark.slow
def test_sigterm_during_export_stops_at_once_and_leaves_only_whole_folders(tmp_path, text_file):
    """No export cache: the first snapshot is still being traced when the signal comes."""
    run_dir = tmp_path / "run"
    proc = live(["--out", str(run_dir), "--corpus", str(text_file), "--minutes", "5", "--overrides", json.dumps(TINY)])
    seen = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if seen[-1]["event"] == "progress":
            break
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    stopped_in = time.monotonic() - t0
    events = seen + events_of(out)
    assert events[-1]["event"] == "cancelled" and "SIGTERM" in events[-1]["reason"], events[-3:]
    assert proc.returncode == 0 and stopped_in < 10
    assert not list(run_dir.rglob(".tmp-*")) and not (run_dir / "final").exists()
    for folder in (run_dir / "snapshots").glob("*") if (run_dir / "snapshots").exists() else []:
        assert complete(folder)


def test_text_full_of_rare_characters_keeps_a_bounded_vocabulary():
    from training.live.corpus import MAX_VOCAB_CHARS, fast_tokenizer, vocabulary_chars
    from training.tokenizer import UNK

    text = "".join(chr(0x4E00 + i) for i in range(5000)) + "ab " * 2000  # 5,000 distinct rare characters
    chars, counts = vocabulary_chars(text)
    assert len(chars) == MAX_VOCAB_CHARS and {"a", "b", " "} <= set(chars)
    tok = fast_tokenizer(chars, counts)
    ids = tok.encode(text)
    assert (ids == UNK).sum() == 5000 - (MAX_VOCAB_CHARS - 3)
    assert tok.decode(tok.encode("ab a")) == "ab a"
