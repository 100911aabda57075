"""training/quiz.py: the NSP quiz bank is built like training's pairs from whole held-out lines,
and the card's quiz score is BERT's own answers to that bank."""
from __future__ import annotations

import json
import shutil

import numpy as np
import onnxruntime as ort
import pytest

from training import quiz as quiz_mod
from training.__main__ import main as training_main
from training.data import DEFAULT_CORPUS, Document
from training.quiz import build_quiz, drop_quiz, held_out_for_quiz, p_is_next, quiz_documents
from training.tokenizer import CharTokenizer


def line_aligned(text: str, piece: str, at: int) -> bool:
    """piece occurs at `at`, starting at a line start and ending at a line end."""
    end = at + len(piece)
    return (text[at:end] == piece and (at == 0 or text[at - 1] == "\n")
            and (end == len(text) or piece.endswith("\n") or text[end] == "\n"))


def check_bank(items, docs, context):
    by_name = {d.name: d.text for d in docs}
    assert [it["id"] for it in items] == [f"q{k:03d}" for k in range(len(items))]
    assert sum(it["is_next"] for it in items) == len(items) // 2, "balanced"
    assert len({(it["a"], it["b"]) for it in items}) == len(items), "no pair twice"
    for it in items:
        a, b = it["a"], it["b"]
        assert len(a) + len(b) + 3 <= context, "[CLS] A [SEP] B [SEP] fits BERT's context"
        assert a.endswith("\n") and a.strip() and b.strip() and not b.endswith("\n") and not b.startswith("\n")
        text_a = by_name[it["source_a"]]
        starts_a = [i for i in range(len(text_a)) if text_a.startswith(a, i) and line_aligned(text_a, a, i)]
        assert starts_a, f"{it['id']}: A is whole lines of {it['source_a']}"
        if it["is_next"]:
            assert it["source_b"] == it["source_a"]
            # B's text follows A's in the document, from the very next line start, and ends at a line end
            assert any(line_aligned(text_a, b, i + len(a)) for i in starts_a), f"{it['id']}: B continues A"
        else:
            assert it["source_b"] != it["source_a"]
            text_b = by_name[it["source_b"]]
            i = text_b.find(b)
            found = False
            while i != -1 and not found:
                found = line_aligned(text_b, b, i)
                i = text_b.find(b, i + 1)
            assert found, f"{it['id']}: B is whole lines of {it['source_b']}"


def test_shipped_corpus_bank_is_balanced_continuing_whole_lines_that_fit():
    docs = held_out_for_quiz(DEFAULT_CORPUS)
    assert {d.name for d in docs} == set(sum((v for k, v in json.loads(
        (DEFAULT_CORPUS / "split.json").read_text()).items() if k != "train"), []))
    items = build_quiz(docs, 128, 200, seed=7)
    check_bank(items, docs, 128)
    assert items == build_quiz(docs, 128, 200, seed=7), "a seed fixes the bank"
    assert items != build_quiz(docs, 128, 200, seed=8)
    # items a person can judge: more than a speaker's name on each side
    assert all(sum(c.isalpha() for c in it[k]) >= 15 for it in items for k in ("a", "b"))


def test_tiny_corpus_bank(tiny_corpus):
    docs = held_out_for_quiz(tiny_corpus)
    check_bank(build_quiz(docs, 64, 20, seed=1), docs, 64)


def test_lines_longer_than_the_context_are_refused_not_cut():
    docs = [Document(f"d{i}", "\n".join(f"{'word ' * 30}{j}" for j in range(20))) for i in range(3)]
    with pytest.raises(ValueError, match="too long"):
        build_quiz(docs, 64, 10)


def test_card_quiz_section_is_berts_answers_to_the_bank(tiny_models_dir, tiny_corpus):
    card = json.loads((tiny_models_dir / "bert.card.json").read_text())
    bank = json.loads((tiny_models_dir / "nsp_quiz.json").read_text())["items"]
    check_bank(bank, held_out_for_quiz(tiny_corpus), 64)
    session = ort.InferenceSession(str(tiny_models_dir / "bert.onnx"), providers=["CPUExecutionProvider"])
    tok = CharTokenizer.load(tiny_models_dir / "vocab.json")
    p = np.array([p_is_next(session, tok, it["a"], it["b"]) for it in bank])
    truth = np.array([it["is_next"] for it in bank])
    q = card["quiz"]
    assert q["items"] == len(bank) == 20 and q["is_next_items"] == 10
    assert q["correct"] == int(((p >= 0.5) == truth).sum()) and q["accuracy"] == q["correct"] / 20
    assert q["is_next_said"] == int((p >= 0.5).sum())
    assert q["mean_p_is_next"]["is_next_items"] == pytest.approx(p[truth].mean())


def test_quiz_command_rebuilds_bank_and_card_from_onnx(tiny_models_dir, tiny_corpus, tmp_path, capsys):
    models = tmp_path / "set"
    shutil.copytree(tiny_models_dir, models)
    before = json.loads((models / "bert.card.json").read_text())
    (models / "nsp_quiz.json").unlink()
    training_main(["quiz", "--models", str(models), "--corpus", str(tiny_corpus), "--items", "12", "--seed", "3"])
    printed = json.loads(capsys.readouterr().out)
    card = json.loads((models / "bert.card.json").read_text())
    bank = json.loads((models / "nsp_quiz.json").read_text())
    assert len(bank["items"]) == 12 and bank["seed"] == 3 and card["quiz"] == printed and printed["items"] == 12
    assert {k: v for k, v in card.items() if k != "quiz"} == {k: v for k, v in before.items() if k != "quiz"}
    assert not [p.name for p in models.iterdir() if p.name.startswith(".")], "no temp files left behind"
    # BERT's card names its corpus: the shipped corpus is not it, so the command refuses to guess
    with pytest.raises(SystemExit, match="--corpus"):
        training_main(["quiz", "--models", str(models)])


def test_quiz_documents_check_the_cards_split(tiny_models_dir, tiny_corpus):
    assert [d.name for d in quiz_documents(tiny_models_dir, tiny_corpus)] == \
        [d.name for d in held_out_for_quiz(tiny_corpus)]
    with pytest.raises(ValueError, match="card says"):
        quiz_documents(tiny_models_dir, DEFAULT_CORPUS)


def test_drop_quiz_removes_a_stale_bank(tiny_models_dir, tmp_path):
    models = tmp_path / "set"
    shutil.copytree(tiny_models_dir, models)
    section = drop_quiz(models, "lines too long")
    assert not (models / "nsp_quiz.json").exists()
    assert json.loads((models / "bert.card.json").read_text())["quiz"] == section == {"items": 0, "error": "lines too long"}


@pytest.mark.slow
def test_package_reads_each_checkpoint_once(tiny_runs_dir, tmp_path, monkeypatch):
    import torch

    from training.package import package

    loads = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda f, *a, **k: loads.append(str(f)) or real_load(f, *a, **k))
    summary = package([str(tiny_runs_dir / "gpt" / "ckpt.pt"), str(tiny_runs_dir / "bert" / "ckpt.pt")], tmp_path,
                      eval_scale=0.025, quiz_items=10)
    assert sorted(loads) == sorted([str(tiny_runs_dir / f / "ckpt.pt") for f in ("gpt", "bert")])
    assert summary["quiz"]["items"] == 10
    assert quiz_mod.QUIZ_FILE in {p.name for p in tmp_path.iterdir()}


def test_shipped_bank_is_the_builders_output():
    """models/nsp_quiz.json is what `python -m training quiz --models models` builds (seed in the file)."""
    shipped = json.loads((quiz_mod.Path(__file__).resolve().parents[2] / "models" / "nsp_quiz.json").read_text())
    card = json.loads((quiz_mod.Path(__file__).resolve().parents[2] / "models" / "bert.card.json").read_text())
    docs = held_out_for_quiz(DEFAULT_CORPUS)
    assert shipped["items"] == build_quiz(docs, card["config"]["context"], card["quiz"]["items"], shipped["seed"])


def test_plays_are_named_as_a_person_would():
    from training.quiz import title_of

    named = {d.name: title_of(d) for d in held_out_for_quiz(DEFAULT_CORPUS)}
    assert named == {"macbeth": "Macbeth", "twelfth_night": "Twelfth Night", "julius_caesar": "Julius Caesar",
                     "tempest": "The Tempest"}
    assert title_of(Document("henry_iv_part_1", "no title line here\n")) == "Henry IV Part 1"
    card = json.loads((quiz_mod.Path(__file__).resolve().parents[2] / "models" / "bert.card.json").read_text())
    assert card["quiz"]["titles"] == named, "the shipped card carries the titles the page shows"
