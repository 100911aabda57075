"""Web copies of a model set (training/export/web.py): what the browser's engine downloads."""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import numpy as np
import onnx
import pytest

from app.config import REPO

from tests.family_set import family_set_dir  # noqa: F401 (the fixture: every family, tiny)
from training.export.web import ATTN, MANIFEST, WEB_DIR, fp16_graph, write_web_copies
from training.export.web_checks import check_gpt, gpt_text


@pytest.fixture
def set_copy(tiny_models_dir, tmp_path):
    folder = tmp_path / "set"
    shutil.copytree(tiny_models_dir, folder)
    shutil.rmtree(folder / WEB_DIR, ignore_errors=True)
    return folder


def test_fp16_graph_stores_half_the_weights_and_computes_in_float32(tiny_models_dir):
    import onnxruntime as ort

    fp32 = onnx.load(str(tiny_models_dir / "bert.onnx"))
    half = fp16_graph(fp32)
    types = {i.data_type for i in half.graph.initializer if i.name.endswith("__fp16")}
    assert types == {onnx.TensorProto.FLOAT16}
    assert sum(1 for n in half.graph.node if n.op_type == "Cast" and n.name.endswith("__cast")) > 10
    assert len(half.SerializeToString()) < 0.8 * len(fp32.SerializeToString())  # (the tiny graph: nodes weigh too)
    ids = np.array([[3, 10, 11, 2, 12, 4]], dtype=np.int64)
    feeds = {"input_ids": ids, "token_type_ids": np.zeros_like(ids)}
    a = ort.InferenceSession(fp32.SerializeToString()).run(None, feeds)[0]
    b = ort.InferenceSession(half.SerializeToString()).run(None, feeds)[0]
    assert b.dtype == np.float32 and np.abs(a - b).max() < 0.05 and np.abs(a - b).max() > 0


def test_web_copies_are_hashed_gzipped_and_checked(set_copy):
    manifest = write_web_copies(set_copy)
    web = set_copy / WEB_DIR
    assert json.loads((web / MANIFEST).read_text()) == manifest
    assert manifest["vocab"]["chars"] == json.loads((set_copy / "vocab.json").read_text())["chars"]
    # each copy shares its weights file with the family's attention graph (one more entry), fp16 or not
    shared = {f + ATTN for f in ("gpt", "bert") if (set_copy / f"{f}.attn.onnx").is_file()}
    assert shared and set(manifest["models"]) == {"gpt", "bert"} | shared
    for fam, part in manifest["models"].items():
        data = (web / part["file"]).read_bytes()
        assert part["file"] == f"{fam}.{hashlib.sha256(data).hexdigest()[:16]}.onnx" and part["sha256"] == hashlib.sha256(data).hexdigest()
        assert gzip.decompress((web / (part["file"] + ".gz")).read_bytes()) == data
        assert part["bytes"] == len(data) and part["gzip_bytes"] == (web / (part["file"] + ".gz")).stat().st_size
        if fam.endswith(ATTN):
            continue  # test_a_family_and_its_attention_graph_share_one_weights_file
        check = part["fp16_check"]
        # fp16 storage only where it keeps the answers; otherwise the float32 graph, its weights in the shared file
        assert part["storage"] == ("fp16" if check["ok"] else "fp32")
        assert ("weights" in part) == (fam + ATTN in shared)
        stored = len(data) + part.get("weights", {}).get("bytes", 0)  # its graph and its weights file
        if part["storage"] == "fp16":
            assert stored < 0.8 * part["fp32_bytes"]
        if fam + ATTN in shared:  # the attention graph is stored as its family is, and so checked with it
            assert check["attention"]["max_abs_weight_diff"] >= 0 and (check["ok"] <= check["attention"]["ok"])
        assert part["config"]["context"] == json.loads((set_copy / f"{fam}.card.json").read_text())["config"]["context"]
    assert manifest["models"]["gpt"]["fp16_check"]["texts"] == 12


def shared_session(web, part, tmp_path):
    """onnxruntime on a web copy that reads its weights file: the two files side by side, the weights
    under the name the graph gives them."""
    import onnxruntime as ort

    folder = tmp_path / part["file"]
    folder.mkdir()
    shutil.copyfile(web / part["file"], folder / "model.onnx")
    shutil.copyfile(web / part["weights"]["file"], folder / part["weights"]["location"])
    return ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])


def test_a_family_and_its_attention_graph_share_one_weights_file(set_copy, tmp_path):
    """Issue 44 must 2: the attention page's graph reads the weights the plain graph's copy reads, one
    file, so a student who has the family's model downloads only the graph's structure for The mask;
    both compute exactly what the full graphs compute."""
    import onnxruntime as ort

    manifest = write_web_copies(set_copy)
    web = set_copy / WEB_DIR
    fam = next(f for f in ("gpt", "bert") if manifest["models"][f]["storage"] == "fp32")
    plain, attn = manifest["models"][fam], manifest["models"][fam + ATTN]
    assert plain["weights"] == attn["weights"] and plain["weights"]["file"].startswith(fam + "_weights.")
    weights = (web / plain["weights"]["file"]).read_bytes()
    assert plain["weights"]["sha256"] == hashlib.sha256(weights).hexdigest()
    full_attn = (set_copy / f"{fam}.attn.onnx").stat().st_size
    assert attn["shared_tensors"] > attn["own_tensors"] and attn["bytes"] < 0.5 * full_attn  # (the tiny graph: nodes weigh too)
    assert plain["bytes"] + len(weights) < 1.1 * (set_copy / f"{fam}.onnx").stat().st_size  # nothing twice
    full = ort.InferenceSession(str(set_copy / f"{fam}.attn.onnx"), providers=["CPUExecutionProvider"])
    ids = np.array([[10, 20, 30, 11, 12, 13, 14]], dtype=np.int64)
    feeds = {"input_ids": ids} | ({"token_type_ids": np.zeros_like(ids)} if fam == "bert" else {})
    for a, b in zip(full.run(None, feeds), shared_session(web, attn, tmp_path).run(None, feeds)):
        assert np.array_equal(a, b)
    if fam == "gpt":  # the plain copy: the same texts as the float32 graph, greedy and seeded
        config = plain["config"]
        whole = ort.InferenceSession(str(set_copy / "gpt.onnx"), providers=["CPUExecutionProvider"])
        mine = shared_session(web, plain, tmp_path)
        for seed in (None, 3):
            assert gpt_text(whole, config, [10, 20, 30], 40, seed) == gpt_text(mine, config, [10, 20, 30], 40, seed)


def test_the_float16_pair_shares_its_own_weights_file(set_copy, tmp_path):
    """Issue 54: the float16 copies a static export may ship (--weights fp16) are a pair too: the plain
    graph's and the attention graph's float16 copies read one float16 weights file, and compute exactly
    what fp16_graph of each full graph computes."""
    import onnxruntime as ort

    manifest = write_web_copies(set_copy)
    web = set_copy / WEB_DIR
    for fam in ("gpt", "bert"):
        plain, attn = manifest["models"][fam], manifest["models"][fam + ATTN]
        half, half_attn = (plain, attn) if plain["storage"] == "fp16" else (plain["fp16"], attn["fp16"])
        assert half["weights"] == half_attn["weights"] and half["weights"]["file"].startswith(fam + "_weights.")
        if plain["storage"] == "fp32":
            assert half["weights"]["file"] != plain["weights"]["file"] and half["weights"]["bytes"] < 0.6 * plain["weights"]["bytes"]
        whole = ort.InferenceSession(fp16_graph(onnx.load(str(set_copy / f"{fam}.attn.onnx"))).SerializeToString(),
                                     providers=["CPUExecutionProvider"])
        ids = np.array([[10, 20, 30, 11, 12, 13, 14]], dtype=np.int64)
        feeds = {"input_ids": ids} | ({"token_type_ids": np.zeros_like(ids)} if fam == "bert" else {})
        for a, b in zip(whole.run(None, feeds), shared_session(web, half_attn, tmp_path).run(None, feeds)):
            assert np.array_equal(a, b)


def test_unchanged_sets_keep_their_copies_and_stale_files_go(set_copy):
    first = write_web_copies(set_copy)
    web = set_copy / WEB_DIR
    stamp = {p.name: p.stat().st_mtime_ns for p in web.iterdir()}
    (web / "gpt.0123456789abcdef.onnx").write_bytes(b"old")
    again = write_web_copies(set_copy)
    assert again == first
    assert not (web / "gpt.0123456789abcdef.onnx").exists()
    assert all(p.stat().st_mtime_ns == stamp[p.name] for p in web.iterdir() if p.name != MANIFEST)


def test_a_copy_that_changes_a_text_is_refused(tiny_models_dir):
    """The check can fail: a GPT whose weights are perturbed (as a bad fp16 rounding would) is caught."""
    from onnx import numpy_helper

    data = (tiny_models_dir / "gpt.onnx").read_bytes()
    model = onnx.load_from_string(data)
    for init in model.graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT and "emb" in init.name:
            w = numpy_helper.to_array(init)
            init.CopyFrom(numpy_helper.from_array((w + np.random.default_rng(0).normal(0, 0.5, w.shape)).astype(np.float32), init.name))
    config = json.loads((tiny_models_dir / "gpt.card.json").read_text())["config"]
    chars = json.loads((tiny_models_dir / "vocab.json").read_text())["chars"]
    assert check_gpt(data, data, config, chars)["ok"]
    assert not check_gpt(data, model.SerializeToString(), config, chars)["ok"]


def test_the_command_covers_a_run_folder(set_copy, tmp_path, capsys):
    from training.export.web import main

    run = tmp_path / "run"
    shutil.copytree(set_copy, run / "final")
    shutil.copytree(set_copy, run / "snapshots" / "step-000010")
    main([str(run)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2 and all((run / p / WEB_DIR / MANIFEST).is_file() for p in ("final", "snapshots/step-000010"))
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing")])


def perturbed(data: bytes, scale: float) -> bytes:
    """The graph with noise on its largest weight (as a bad float16 rounding would move it, only more)."""
    from onnx import numpy_helper

    model = onnx.load_from_string(data)
    init = max((i for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT), key=lambda i: np.prod(i.dims))
    w = numpy_helper.to_array(init)
    init.CopyFrom(numpy_helper.from_array((w + np.random.default_rng(0).normal(0, scale, w.shape)).astype(np.float32), init.name))
    return model.SerializeToString()


@pytest.mark.parametrize("fam", ["t5", "plm"])
def test_t5_and_plm_checks_replay_their_pages_and_can_fail(fam):
    """Issue 54: T5's check replays the /spans page's greedy writing (on the shipped T5, which writes
    characters: a tiny one may close every span at once), PLM's its guesses at every position; each
    passes on the same graph and fails on one whose weights moved."""
    from training.export.web_checks import check_plm, check_t5

    models = REPO / "models"
    data = (models / f"{fam}.onnx").read_bytes()
    config = json.loads((models / f"{fam}.card.json").read_text())["config"]
    chars = json.loads((models / "vocab.json").read_text())["chars"]
    check = {"t5": check_t5, "plm": check_plm}[fam]
    same = check(data, data, config, chars)
    assert same["ok"] and same["max_abs_prob_diff"] == 0
    assert (same["spans"] == same["same_spans"] > 0 and same["chars_written"] > 0) if fam == "t5" else \
        (same["positions"] == same["same_top1"] > 0)
    moved = check(data, perturbed(data, 0.5), config, chars)
    assert not moved["ok"] and moved["max_abs_prob_diff"] > moved["tolerance"]


@pytest.mark.parametrize("fam", ["t5", "plm"])
def test_t5_and_plm_copies_share_one_weights_file(family_set_dir, fam):  # noqa: F811
    """Their plain and attention graphs read one weights file, as GPT's and BERT's do, after `package`
    (which writes the attention graphs after the models: the web copies follow them)."""
    manifest = json.loads((family_set_dir / "models" / WEB_DIR / MANIFEST).read_text())
    plain, attn = manifest["models"][fam], manifest["models"][fam + ATTN]
    assert plain["fp16_check"]["ok"] == (plain["storage"] == "fp16") and "attention" in plain["fp16_check"]
    assert plain["weights"] == attn["weights"] and attn["shared_tensors"] > attn["own_tensors"]
