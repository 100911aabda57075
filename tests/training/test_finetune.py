"""The fine-tune lab's training side: the arms really differ, the fair budget stops and keeps its best
weights, the probe is a fitted regression put into the head, the ngram baseline, a tiny
grid end to end through the command line (events, skipped sizes and arms, exported classifiers, ONNX
parity), the per-character task, snapshots."""
from __future__ import annotations

import math

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from app.contract.task_format import parse_task
from training.finetune import cli
from training.finetune.loop import FinetuneConfig, TaskData, batches, train_arm
from training.finetune.lpft import finetune_one
from training.finetune.model import Encoder, build_classifier
from training.inspect_export import model_from_onnx
from training.tokenizer import CharTokenizer

REPO = Path(__file__).resolve().parents[2]
THEMES = {"crown": "the king and the crown", "sea": "a ship upon the sea", "ghost": "the ghost at night"}


def write_task(path: Path) -> Path:
    rows = [{"text": f"Line {j} speaks of {theme}, again!", "label": label, "split": "test" if j % 4 == 3 else "train"}
            for label, theme in THEMES.items() for j in range(12)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def task_file(tmp_path_factory) -> Path:
    return write_task(tmp_path_factory.mktemp("task") / "themes.jsonl")


@pytest.fixture(scope="module")
def pretrained(tiny_models_dir):
    return model_from_onnx(tiny_models_dir, "bert")[0]


@pytest.fixture(scope="module")
def data(tiny_models_dir, task_file, pretrained) -> TaskData:
    tok = CharTokenizer.load(tiny_models_dir / "vocab.json")
    return TaskData(parse_task(task_file.read_bytes(), "themes"), tok.stoi, pretrained.cfg.context)


def state(module) -> dict:
    return {k: v.clone() for k, v in module.state_dict().items()}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_full_changes_the_encoder_and_leaves_the_pretrained_model_alone(pretrained, data):
    cfg = FinetuneConfig(fixed_steps=4, batch_size=4)
    before = state(Encoder.from_bert(pretrained))
    full = build_classifier("full", pretrained, len(data.labels), data.kind, 0)
    probe = build_classifier("probe", pretrained, len(data.labels), data.kind, 0)
    assert same(state(full.encoder), before) and same(state(full.head), state(probe.head))  # same start, same head init
    assert all(not p.requires_grad for p in probe.encoder.parameters())
    info = train_arm(full, 3e-4, data, data.choose(8, 0), [], 0, cfg)
    assert (info["steps"], info["best_step"], info["stopped"], info["still_improving"]) == (4, 4, "fixed steps", False)
    assert not same(state(full.encoder), before)
    assert same(state(Encoder.from_bert(pretrained)), before)  # the pretrained model itself is untouched


@pytest.mark.slow
def test_the_validation_slice_chooses_the_step_and_lp_ft_starts_from_the_probe(pretrained, data):
    cfg = FinetuneConfig(batch_size=4, min_cap=30, max_cap=30, patience=2)
    chosen = data.choose(12, 0)
    fit, val = data.split(chosen, 0, cfg.val_share)
    assert set(fit).isdisjoint(val) and sorted(fit + val) == chosen
    assert {data.train[i][1] for i in val} == {0, 1, 2}  # one of each label at least
    model = build_classifier("scratch", pretrained, len(data.labels), data.kind, 0)
    info = train_arm(model, 1e-3, data, fit, val, 0, cfg)
    assert info["steps"] <= cfg.cap(len(fit)) == 30 and 0 <= info["best_step"] <= info["steps"]
    assert info["stopped"] in ("cap", "validation stopped improving")
    assert info["best_step"] % cfg.eval_every(len(fit)) == 0  # the weights kept are those of a check (0 = the start)
    assert info["still_improving"] == (info["stopped"] == "cap" and info["best_step"] == info["steps"])
    _, preds, info = finetune_one(pretrained, data, "full", 12, 0, cfg)
    assert info["examples"] == 12 and info["validation"] == 3 and len(preds) == len(data.test)
    assert info["lr"] in info["rates_tried"] and info["C"] is not None  # LP-FT: a probe head first, a rate searched
    assert cfg.lr["full"] in info["rates_tried"] and len(info["rates_tried"]) >= 3
    _, _, info = finetune_one(pretrained, data, "scratch", 12, 0, cfg)
    assert info["model"].startswith(f"{pretrained.cfg.n_layer} layers x") or info["model"] == "2 layers x 96 (smaller)"
    assert cfg.cap(10_000) == cfg.max_cap and cfg.cap(6) == cfg.min_cap  # the cap grows with the data, within bounds


def test_the_rate_search_widens_until_the_rate_kept_is_inside_what_was_tried(monkeypatch):
    """A made-up slice score peaking at 1e-2: the search starts at 1e-4 and its neighbours, keeps going up
    while the highest rate tried wins, and stops one past the peak; a peak below the ladder's end the
    other way; a peak at the ladder's end is said ("lr_at_edge")."""
    from training.finetune import lpft
    from training.finetune.loop import LADDER, FinetuneConfig

    def fake(peak):
        def train(model, lr, *a, **k):
            return {"val_score": 1 - abs(math.log10(lr) - math.log10(peak)) / 10, "val_loss": 0.0}
        return train

    monkeypatch.setattr(lpft, "_state", lambda m: {})
    cfg = FinetuneConfig()
    for peak, tried, edge in ((1e-2, [3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2], False),
                              (1e-5, [3e-6, 1e-5, 3e-5, 1e-4, 3e-4], False),
                              (1e-4, [3e-5, 1e-4, 3e-4], False),
                              (1.0, list(LADDER[3:]), True)):
        monkeypatch.setattr(lpft, "train_arm", fake(peak))
        _, _, info, _ = lpft.rate_search(lambda lr: (None, {}), 1e-4, None, [], [], 0, cfg)
        assert info["rates_tried"] == tried and info["lr_at_edge"] is edge, peak
        assert info["lr"] == min(tried, key=lambda r: abs(math.log10(r) - math.log10(peak)))
    monkeypatch.setattr(lpft, "train_arm", lambda *a, **k: {"val_score": 0.5, "val_loss": 0.1})  # all alike: the centre
    _, _, info, _ = lpft.rate_search(lambda lr: (None, {}), 1e-4, None, [], [], 0, cfg)
    assert info["lr"] == 1e-4 and info["rates_tried"] == [3e-5, 1e-4, 3e-4] and not info["lr_at_edge"]


@pytest.mark.slow
def test_the_probe_is_a_regression_put_into_the_head(pretrained, data):
    """The linear probe fits a logistic regression on frozen features; the exported head answers the same."""
    from training.finetune.linear import C_GRID, ProbeFeatures, head_from_regression, probe
    from training.finetune.loop import predict

    frozen = build_classifier("probe", pretrained, len(data.labels), data.kind, 0)
    feats = ProbeFeatures(frozen, data)
    fit, val = data.split(data.choose(None, 0), 0, 0.25)
    clf, scaler, preds, info = probe(feats, data, fit, val, 0)
    assert info["C"] in C_GRID and info["C_at_edge"] == (info["C"] in (C_GRID[0], C_GRID[-1])) and info["steps"] >= 1
    model = build_classifier("probe", pretrained, len(data.labels), data.kind, 0)
    head_from_regression(model, clf, scaler, len(data.labels))
    assert predict(model, data, data.test, FinetuneConfig()) == preds
    with torch.no_grad():
        b = data.batch(data.test[:4])
        probs = torch.softmax(model(b.input_ids, b.token_type_ids), -1).numpy()
    want = clf.predict_proba(scaler.transform(np.stack(feats.test[:4])))
    assert np.abs(probs - want).max() < 1e-4


def test_ngram_reads_character_pieces_with_class_weights(data):
    from training.finetune.linear import C_GRID, char_windows, ngram

    fit, val = data.split(data.choose(None, 0), 0, 0.25)
    preds, info = ngram(data, fit, val, 0)
    right = sum(p == y for p, (_, y) in zip(preds, data.test))
    assert right == len(data.test) and info["C"] in C_GRID  # the themes differ in their words
    w = char_windows("ab")
    assert w[0]["1-3^"] == 1 and w[0]["10a"] == 1 and w[1]["2-1ab"] == 1 and w[1]["12$"] == 1


def test_scratch_starts_from_a_fresh_init(pretrained, data):
    scratch = build_classifier("scratch", pretrained, len(data.labels), data.kind, 2)
    fresh = Encoder.fresh(pretrained.cfg, 2)
    assert same(state(scratch.encoder), state(fresh))
    pre = Encoder.from_bert(pretrained).transformer.tok_emb.weight
    assert not torch.allclose(scratch.encoder.transformer.tok_emb.weight, pre)
    assert not same(state(Encoder.fresh(pretrained.cfg, 3)), state(fresh))  # the seed matters


def test_whole_input_features_are_the_mean_of_the_text_positions(pretrained, data):
    """Mean pooling over [CLS] text [SEP]: a text's logits do not depend on the [PAD] after it."""
    model = build_classifier("full", pretrained, len(data.labels), data.kind, 0).eval()
    short, long = data.train[0], max(data.train, key=lambda r: len(r[0]))
    alone, padded = data.batch([short]), data.batch([short, long])
    assert padded.input_ids.shape[1] > alone.input_ids.shape[1]
    with torch.no_grad():
        assert torch.allclose(model(alone.input_ids, alone.token_type_ids)[0],
                              model(padded.input_ids, padded.token_type_ids)[0], atol=1e-5)
        hidden = model.encoder(alone.input_ids, alone.token_type_ids)
        assert torch.allclose(model.features(alone.input_ids, alone.token_type_ids), hidden.mean(1), atol=1e-6)


def test_sizes_are_balanced_and_batches_reproducible(data):
    chosen = data.choose(6, 0)
    assert sorted(data.train[i][1] for i in chosen) == [0, 0, 1, 1, 2, 2]
    assert data.choose(6, 0) == chosen and data.choose(None, 0) == list(range(len(data.train)))
    first = [b for b, _ in zip(batches(6, 4, 0), range(5))]
    assert first == [b for b, _ in zip(batches(6, 4, 0), range(5))] and all(len(b) == 4 for b in first)
    assert data.min_size() == 6


def run_cli(args: list[str]) -> tuple[int, list[dict]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = cli(args)
    return rc, [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def onnx_logits(folder: Path, text: str) -> np.ndarray:
    import onnxruntime as ort

    vocab = json.loads((folder / "vocab.json").read_text())
    stoi = {c: i for i, c in enumerate(vocab["specials"] + vocab["chars"])}
    ids = np.array([[3] + [stoi.get(c, 1) for c in text] + [4]], dtype=np.int64)
    sess = ort.InferenceSession(str(folder / "classifier.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["input_ids", "token_type_ids"]
    return sess.run(["logits"], {"input_ids": ids, "token_type_ids": np.zeros_like(ids)})[0]


@pytest.mark.slow
def test_a_tiny_grid_end_to_end_through_the_command_line(tiny_models_dir, task_file, tmp_path):
    out = tmp_path / "ft"
    env = os.environ | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "training", "finetune", "--model", str(tiny_models_dir), "--task", str(task_file),
                           "--arms", "readout,full,probe,scratch,ngram", "--sizes", "3,6,500,all", "--seeds", "2",
                           "--steps", "4", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    start, *middle, summary = events
    assert start["event"] == "start" and start["kind"] == "sequence" and start["metric"] == "accuracy"
    assert start["labels"] == ["crown", "ghost", "sea"] and start["n_test"] == 9 and start["jobs"] == 16
    assert start["sizes"] == [6, "all"] and start["arms"] == ["full", "probe", "scratch", "ngram"]
    assert start["device"] in ("cpu", "cuda")  # --device auto, resolved: the run says where it trained
    skipped = {str(s.get("size", s.get("arm"))): s["why"] for s in start["skipped"]}
    assert "at least 6" in skipped["3"] and "more than the 27" in skipped["500"] and "two labels" in skipped["readout"]
    assert "9 test texts only" in start["notes"][0] and start["majority"]["accuracy"] == pytest.approx(1 / 3)
    results = [e for e in middle if e["event"] == "result"]
    assert len(results) == 16 and {(r["arm"], r["size"], r["seed"]) for r in results} == {
        (a, s, k) for a in ("full", "probe", "scratch", "ngram") for s in (6, "all") for k in (0, 1)}
    assert results[0]["arm"] == "ngram"  # the cheapest arm first: the first point comes fast
    assert all(0 <= r["score"] <= 1 and r["score"] == r["accuracy"] and r["n_test"] == 9 for r in results)
    assert all(r["cpu_seconds"] >= 0 and isinstance(r["same_answer"], bool) for r in results)
    assert {r["examples"] for r in results if r["size"] == 6} == {6}
    assert {r["steps"] for r in results if r["arm"] in ("full", "scratch")} == {4}
    classifiers = [e for e in middle if e["event"] == "classifier"]
    assert sorted(c["arm"] for c in classifiers) == ["full", "probe", "scratch"]
    gpt = next(e for e in middle if e["event"] == "gpt_way")
    assert 0 <= gpt["accuracy"] <= 1 and gpt["n_test"] == 9 and sum(gpt["answers"].values()) == 9
    assert summary["event"] == "summary" and summary["metric"] == "accuracy"
    assert set(summary["results"]) == {"full", "probe", "scratch", "ngram"}
    cell = summary["results"]["full"]["all"]
    accs = [r["accuracy"] for r in results if r["arm"] == "full" and r["size"] == "all"]
    assert cell["n"] == 2 and cell["mean"] == pytest.approx(sum(accs) / 2) and 0 <= cell["lo"] <= cell["mean"] <= cell["hi"] <= 1
    assert summary["difference"]["by_size"]["6"]["seeds"] == [0, 1]
    assert set(summary["differences"]) == {"scratch", "ngram"} and summary["headline"]["text"]  # the probe: shown, not compared
    assert set(summary["cpu_seconds"]) == {"full", "probe", "scratch", "ngram"}
    assert summary["device"] == start["device"]
    assert json.loads((out / "summary.json").read_text())["results"] == summary["results"]
    for c in classifiers:
        folder = out / c["dir"]
        assert sorted(p.name for p in folder.iterdir()) == ["classifier.card.json", "classifier.onnx", "set.json", "vocab.json"]
        card = json.loads((folder / "classifier.card.json").read_text())
        assert card["arm"] == c["arm"] and card["labels"] == ["crown", "ghost", "sea"] and card["kind"] == "sequence"
        assert card["held_out"]["accuracy"] == c["accuracy"] and card["examples"] == 27
        assert card["onnx"]["parity_max_abs_diff"] <= 1e-4
        assert json.loads((folder / "set.json").read_text())["id"]
        assert onnx_logits(folder, "a ship upon the sea").shape == (1, 3)
    assert not list((out / "classifiers").glob(".*tmp"))


@pytest.mark.slow
def test_exported_classifier_matches_pytorch(pretrained, data, tmp_path, tiny_models_dir):
    from training.finetune.export import export_classifier
    from training.finetune.model import encode_batch
    from training.tokenizer import UNK

    model = build_classifier("full", pretrained, len(data.labels), data.kind, 0)
    train_arm(model, 3e-4, data, data.choose(None, 0), [], 0, FinetuneConfig(fixed_steps=2, batch_size=4))
    export_classifier(model, tmp_path, "full", {"task": "themes"}, tiny_models_dir / "vocab.json", "t", "t")
    text = "the ghost at night, again!"
    b = encode_batch([text], [0], "sequence", data.stoi, UNK, pretrained.cfg.context)
    with torch.no_grad():
        ref = model(b.input_ids, b.token_type_ids).numpy()
    assert np.abs(onnx_logits(tmp_path / "classifiers" / "full", text) - ref).max() <= 1e-4


@pytest.mark.slow
def test_per_character_task_from_a_corpus(tiny_models_dir, tiny_corpus, tmp_path):
    rc, events = run_cli(["--model", str(tiny_models_dir), "--task", "capitals", "--corpus", str(tiny_corpus),
                          "--arms", "readout,full,probe,ngram", "--sizes", "all", "--seeds", "1", "--steps", "3",
                          "--out", str(tmp_path)])
    assert rc == 0, events[-1]
    assert events[0]["kind"] == "token" and events[0]["labels"] == ["0", "1"] and events[0]["metric"] == "f1"
    assert events[0]["skipped"] == [] and events[0]["majority"]["f1"] == 0.0 and "capital" in events[0]["readout"]
    results = [e for e in events if e["event"] == "result"]
    assert {r["arm"] for r in results} == {"readout", "full", "probe", "ngram"}
    assert results[0]["arm"] == "readout" and results[0]["size"] == 0 and results[0]["examples"] == 0  # zero labels first
    assert all(r["metric"] == "f1" and r["score"] == r["f1"] and 0 <= r["f1"] <= 1 for r in results)
    ngram = next(r for r in results if r["arm"] == "ngram")
    assert ngram["f1"] > 0.9  # every capital of the tiny corpus starts a line or follows "speaker"
    assert events[-1]["metric"] == "f1" and set(events[-1]["results"]) == {"readout", "full", "probe", "ngram"}
    assert set(events[-1]["results"]["readout"]) == {"0", "all"} and events[-1]["readout"]["text"].startswith("Before any label")
    gpt = next(e for e in events if e["event"] == "gpt_way")
    assert gpt["unit"] == "characters" and 0 <= gpt["accuracy"] <= 1 and 0 <= gpt["f1"] <= 1
    card = json.loads((tmp_path / "classifiers" / "full" / "classifier.card.json").read_text())
    assert card["kind"] == "token" and card["held_out"]["unit"] == "characters"
    assert onnx_logits(tmp_path / "classifiers" / "probe", "speaker0. line 1").shape == (1, 18, 2)


def export_fresh_bert(models_dir: Path, dest: Path, seed: int = 0):
    """A run's step 0 as training writes it: a freshly initialised BERT exported to ONNX (its
    LayerNorms all ones and zeros and its biases all zeros, which the exporter merges)."""
    from training.export import export_model
    from training.model import BERT, TransformerConfig

    card = json.loads((models_dir / "bert.card.json").read_text())
    torch.manual_seed(seed)
    fresh = BERT(TransformerConfig(**card["config"])).eval()
    dest.mkdir(parents=True, exist_ok=True)
    export_model("bert", fresh, CharTokenizer.load(models_dir / "vocab.json"), dest)
    shutil.copy(models_dir / "bert.card.json", dest / "bert.card.json")
    return fresh


@pytest.mark.slow
def test_a_freshly_initialised_export_loads_back_exactly(tiny_models_dir, tmp_path):
    fresh = export_fresh_bert(tiny_models_dir, tmp_path / "step-000000")
    import onnx

    names = {i.name for i in onnx.load(str(tmp_path / "step-000000" / "bert.onnx")).graph.initializer}
    assert "bert.transformer.ln_f.weight" not in names  # merged into an identical initializer
    rebuilt, diff = model_from_onnx(tmp_path / "step-000000", "bert")
    assert diff <= 1e-4
    assert same(state(rebuilt), state(fresh))


@pytest.mark.slow
def test_snapshots_of_a_run(tiny_models_dir, task_file, tmp_path):
    run = tmp_path / "run"
    for i, step in enumerate((0, 30)):
        dest = run / "snapshots" / f"step-{step:06d}"
        dest.mkdir(parents=True)
        if step == 0:
            export_fresh_bert(tiny_models_dir, dest)
        else:
            for name in ("bert.onnx", "bert.card.json", "vocab.json"):
                shutil.copy(tiny_models_dir / name, dest / name)
        (dest / "snapshot.json").write_text(json.dumps({"step": step * 2, "steps": {"bert": step}}))
    rc, events = run_cli(["--snapshots", str(run), "--task", str(task_file), "--sizes", "6", "--seeds", "2", "--steps", "2"])
    assert rc == 0, events[-1]
    results = [e for e in events if e["event"] == "result"]
    assert [(r["model"], r["step"], r["seed"]) for r in results] == [
        ("step-000000", 0, 0), ("step-000000", 0, 1), ("step-000030", 30, 0), ("step-000030", 30, 1)]
    assert all(r["arm"] == "full" and r["size"] == 6 for r in results)
    assert [s["step"] for s in events[-1]["by_step"]] == [0, 30] and events[-1]["by_step"][1]["n"] == 2


def test_errors_are_an_event_and_a_nonzero_exit(tiny_models_dir, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "label": "x"}\n{"text": "b"}\n')
    rc, events = run_cli(["--model", str(tiny_models_dir), "--task", str(bad)])
    assert rc == 1 and events[-1]["event"] == "error" and "line 2, field 'label'" in events[-1]["message"]
    rc, events = run_cli(["--model", str(tiny_models_dir), "--task", "spelling", "--sizes", "8,x"])
    assert rc == 1 and "--sizes" in events[-1]["message"]
    rc, events = run_cli(["--model", str(tmp_path), "--task", "spelling"])
    assert rc == 1 and "bert.onnx" in events[-1]["message"]
    import torch

    if not torch.cuda.is_available():  # a GPU asked for where there is none: one error naming the option
        rc, events = run_cli(["--model", str(tiny_models_dir), "--task", "spelling", "--device", "cuda"])
        assert rc == 1 and events[-1]["event"] == "error" and "--device" in events[-1]["message"]


def test_list_and_check_tasks_without_torch(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "abc", "tags": "01"}\n')
    code = ("import sys, runpy\n"
            "for argv in (['finetune', '--list-tasks'], ['finetune', '--check-task', sys.argv[1]]):\n"
            "    sys.argv = ['training'] + argv\n"
            "    try:\n        runpy.run_module('training', run_name='__main__')\n    except SystemExit:\n        pass\n"
            "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')\n")
    proc = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, cwd=REPO,
                          env=os.environ | {"PYTHONPATH": str(REPO)}, timeout=120)
    assert proc.stdout.strip().endswith("NO-TORCH"), proc.stderr
    listed = json.loads(proc.stdout[:proc.stdout.index("]\n[") + 1])
    assert [t["name"] for t in listed] == ["spelling", "backwards", "capitals", "spaces"]
    assert all({"kind", "labels", "n_train", "n_test", "description", "provenance"} <= t.keys() for t in listed)
    assert '"field": "tags"' in proc.stdout


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU (runs where one is lent)")
def test_the_trained_arms_fine_tune_on_a_gpu(tiny_models_dir):
    rc, events = run_cli(["--model", str(tiny_models_dir), "--task", "spelling", "--arms", "full,scratch", "--sizes", "8",
                          "--seeds", "1", "--steps", "4", "--workers", "1", "--device", "cuda"])
    assert rc == 0, events[-1]
    assert events[0]["device"] == "cuda" and events[-1]["device"] == "cuda"
    assert {e["arm"] for e in events if e["event"] == "result"} == {"full", "scratch"}
