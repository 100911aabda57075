"""T5's free-running figure (issue 54): the card's "written freely" figure is what the /spans page
shows. training/t5_free.py writes held-out spans by the page's own rule (app/tasks/t5.py Writing), in
batches; here the page's T5.write runs the same model one line at a time on the same spans, and the
two must write the same characters, so the card cannot measure something no student sees."""
import io
import json

import numpy as np
import pytest
import torch

from app.contract import SEP, Vocab
from app.tasks.t5 import T5 as Served
from training.data import load_corpus
from training.evaluate import objective_batches
from training.t5 import SpanCorruption, evaluate_t5
from training.t5_free import EXTRA, first_windows, free_running, spans_of
from training.tokenizer import CharTokenizer


class TorchSession:
    """Runs the torch model where the server runs t5.onnx: the same inputs, the same logits."""

    def __init__(self, model):
        self.model = model

    def run(self, _outputs, feeds):
        with torch.no_grad():
            out = self.model(torch.from_numpy(feeds["input_ids"]), torch.from_numpy(feeds["prefix_mask"]))
        return [out.numpy()]


@pytest.fixture(scope="module")
def setup(tiny_models_dir, tiny_corpus, tmp_path_factory):
    """A tiny T5 trained 60 steps on the tiny corpus: enough to write characters after its sentinels
    (an untrained one writes almost nothing, and the check would compare two empty answers)."""
    from training.train import TrainConfig, Trainer

    cfg = TrainConfig(family="t5", corpus=str(tiny_corpus), out=str(tmp_path_factory.mktemp("t5free")), n_layer=1,
                      n_head=2, n_embd=32, n_ff=64, context=48, batch_size=8, steps=60, eval_interval=60,
                      eval_batches=1, warmup=5, lr=3e-3, threads=1)
    trainer = Trainer(cfg)
    trainer.fit(log=io.StringIO())
    tok = CharTokenizer.load(tiny_models_dir / "vocab.json")
    model = trainer.model.eval()
    docs = load_corpus(tiny_corpus)["test"]
    batches = objective_batches(SpanCorruption(model.cfg, tok), tok, docs, 12, 5, size=5)
    return tok, model, batches


def line_and_spans(row: list[int], prefix_len: int, vocab_size: int) -> tuple[list[int], list[tuple[int, int]], list]:
    """A T5 sequence back to the line a student typed and the spans they hid (what POST /api/spans takes)."""
    spans = spans_of(row, prefix_len, vocab_size)
    line, where = [], []
    for t in row[:prefix_len - 1]:
        if t >= vocab_size:
            where.append((len(line), len(line) + len(spans[t - vocab_size])))
            line += spans[t - vocab_size]
        else:
            line.append(t)
    return line, where, spans


@pytest.mark.slow
def test_the_figure_is_what_the_page_writes(setup, tiny_models_dir):
    tok, model, batches = setup
    got = free_running(model, batches, tok.vocab_size, model.cfg.context)
    page = Served(TorchSession(model), Vocab.load(tiny_models_dir / "vocab.json"), {"context": model.cfg.context})
    right = exact = chars = n_spans = 0
    wrote_something = False
    for batch in batches:
        for ids, mask in zip(batch["idx"].tolist(), batch["prefix_mask"].tolist()):
            line, where, truths = line_and_spans(ids, sum(mask), tok.vocab_size)
            assert [line[s:e] for s, e in where] == truths
            hidden = sum(e - s for s, e in where)
            for span, truth in zip(page.write(line, where, limit=hidden + len(where) + EXTRA), truths):
                written = [tok.stoi[c["char"]] for c in span["written"]]
                wrote_something |= bool(written)
                right += sum(a == b for a, b in zip(truth, written))
                exact += written == truth
                chars, n_spans = chars + len(truth), n_spans + 1
    assert wrote_something  # the check compares writing, not two empty answers
    assert (got["span_chars"], got["spans"], got["windows"]) == (chars, n_spans, 12)
    assert got["span_char_top1"] == right / chars and got["spans_exact"] == exact / n_spans


def test_a_span_written_exactly_counts_and_one_too_long_does_not():
    """A stand-in model that writes a fixed answer: the counting rule, place by place and exact."""
    vocab = 10
    # prefix: a b ⟨0⟩ c ⟨1⟩ [SEP]; truth: ⟨0⟩ x y ⟨1⟩ z [SEP]; it writes ⟨0⟩ x y ⟨1⟩ z z [SEP]
    prefix = [5, 6, vocab, 7, vocab + 1, SEP]
    row = [*prefix, vocab, 8, 9, vocab + 1, 5, SEP]
    answer = [vocab, 8, 9, vocab + 1, 5, 5, SEP]

    class Fixed(torch.nn.Module):
        def forward(self, idx, mask):
            out = torch.full((*idx.shape, vocab + 2), -9.0)
            out[:, -1, answer[idx.shape[1] - len(prefix)]] = 9.0
            return out

    batch = {"idx": torch.tensor([row]), "prefix_mask": torch.tensor([[1] * len(prefix) + [0] * 6])}
    got = free_running(Fixed(), [batch], vocab, 64)
    assert got["span_char_top1"] == 1.0 and got["span_chars"] == 3  # x y z all right, place by place
    assert got["spans_exact"] == 0.5 and got["spans"] == 2  # "z z" is not "z"


@pytest.mark.slow
def test_the_card_gives_both_figures_and_says_how_each_was_measured(setup, tiny_corpus):
    tok, model, _ = setup
    out = evaluate_t5(model, tok, load_corpus(tiny_corpus)["test"], n_windows=60, seed=1)
    assert "teacher forcing" in out["measured"] and "written freely" in out["free_running"]["how"]
    free = out["free_running"]
    assert free["windows"] == 60 and 0 <= free["span_char_top1"] <= 1 and 0 <= free["spans_exact"] <= 1
    assert json.loads(json.dumps(out)) == out  # it goes into the card as it is


def test_first_windows_takes_whole_batches_up_to_n():
    batches = [{"idx": np.zeros((50, 3))} for _ in range(20)]
    assert len(first_windows(batches, 200)) == 4 and len(first_windows(batches, 201)) == 5


def test_evaluating_a_model_set_needs_its_family(tiny_models_dir):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "training", "evaluate", str(tiny_models_dir)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "needs --family" in done.stderr
