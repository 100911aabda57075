"""A model set's own example lines (app/contract/examples.py): a run's sets give the applets their
default prompt, sentence and examples from the held-out part of their own text, not Shakespeare."""
from __future__ import annotations

import json
import shutil

from fastapi.testclient import TestClient

from app.config import Settings
from app.contract import EXAMPLES_FILE, examples_from_corpus, make_examples, read_examples
from app.main import create_app

POEM = "\n".join(f"the {w} river sings of {w} stones at night, line {i}" for i, w in
                 enumerate(["green", "slow", "cold", "bright", "quiet", "long", "old", "deep"]))


def test_examples_are_readable_lines_of_the_text_that_fit():
    ex = make_examples("TITLE IN CAPITALS\n\n" + POEM + "\n12345 67890\n", max_chars=40)
    assert ex and 1 <= len(ex["lines"]) <= 5
    for line in ex["lines"]:
        assert 20 <= len(line) <= 40 and line in POEM  # words of the text, cut at a space to fit
    assert "TITLE" not in " ".join(ex["lines"])
    assert ex["sentence"] in ex["lines"] and ex["sentence"].startswith(ex["prompt"]) and ex["prompt"].endswith(" ")
    assert ex["mask"] and all(ex["sentence"][i].isalpha() for i in ex["mask"])
    assert make_examples("1234 5678 " * 50) is None  # nothing readable: the pages keep their own


def test_a_bad_or_huge_file_is_ignored(tmp_path):
    (tmp_path / EXAMPLES_FILE).write_text(json.dumps({"lines": "not a list"}))
    assert read_examples(tmp_path) is None
    (tmp_path / EXAMPLES_FILE).write_text(json.dumps({"lines": ["a b c " * 5], "mask": [999]}))
    ex = read_examples(tmp_path)
    assert ex["sentence"] == "a b c " * 5 and all(i < len(ex["sentence"]) for i in ex["mask"])
    (tmp_path / EXAMPLES_FILE).write_text(json.dumps({"lines": ["x y"] * 5000}))
    assert read_examples(tmp_path) is None


def test_a_runs_sets_serve_their_own_lines_and_the_shipped_set_none(tiny_models_dir, tmp_path):
    """A run folder without examples.json (written before them) gets them from its corpus/ split."""
    models = tmp_path / "models"
    shutil.copytree(tiny_models_dir, models)
    run_dir = models / "runs" / "example-poems"
    shutil.copytree(tiny_models_dir, run_dir / "final")
    (run_dir / "final" / EXAMPLES_FILE).unlink(missing_ok=True)
    corpus = run_dir / "corpus"
    corpus.mkdir()
    (corpus / "part-00.txt").write_text("the sea the sea " * 300)
    (corpus / "part-01.txt").write_text(POEM)
    (corpus / "split.json").write_text(json.dumps({"train": ["part-00"], "validation": ["part-01"], "test": []}))
    (run_dir / "progress.jsonl").write_text(json.dumps({"event": "start", "t": 0.0}) + "\n")
    run = {"id": "example-poems", "name": "Poems", "status": "finished", "created": 1.0, "settings": {},
           "corpus": {}, "progress": {}, "validation": {}, "snapshots": [], "steps": {"gpt": 4, "bert": 3}}
    (run_dir / "run.json").write_text(json.dumps(run))
    assert examples_from_corpus(corpus)["lines"]
    settings = Settings(models_dir=models, data_dir=tmp_path / "data")
    with TestClient(create_app(settings)) as c:
        listing = c.get("/api/models").json()
        assert listing["examples"] is None  # the shipped set: the pages' own (Shakespeare) examples
        assert all("examples" not in s for s in listing["sets"])  # the list stays small
        ex = c.get("/api/models/example-poems").json()["examples"]
        assert ex["prompt"] and ex["sentence"].startswith(ex["prompt"])
        assert all(line in POEM for line in ex["lines"]) and "To be" not in json.dumps(ex)
