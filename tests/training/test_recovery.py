"""`python -m training recovery`: BERT checkpoints scored under each masking scheme; what it prints
from stored results is what docs/models.md's masking block holds (tests/app/test_doc_tables.py)."""
import json

from app.contract import MASKING_SCHEMES
from training.__main__ import main as cli
from training.recovery import measure, render


def test_measure_then_print_the_stored_table(tiny_runs_dir, tmp_path, capsys):
    ckpt = str(tiny_runs_dir / "bert" / "ckpt.pt")
    results = measure({"char": ckpt, "again": ckpt}, n_pairs=50, split="validation")
    for row in results["rows"].values():
        assert set(row["recovery"]) == set(MASKING_SCHEMES)
        assert all(0.0 <= v <= 1.0 for v in row["recovery"].values())
    assert results["rows"]["char"]["recovery"] == results["rows"]["again"]["recovery"]  # fixed draws
    stored = tmp_path / "r.json"
    stored.write_text(json.dumps(results))
    cli(["recovery", "--load", str(stored)])
    printed = capsys.readouterr().out.strip()
    assert printed == render(results)
    lines = printed.split("```")[1].strip().splitlines()
    assert lines[0].split()[:2] == ["trained", "with"] and len(lines) == 3
    assert lines[1].split()[0] == "char" and len(lines[1].split()) == 5
