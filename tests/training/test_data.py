import numpy as np
import torch

from training.data import CLMBatches, NSPPairs, load_corpus, mask_tokens, read_documents
from training.tokenizer import CLS, MASK, PAD, SEP, CharTokenizer


def test_masking_statistics_follow_bert_recipe():
    gen = torch.Generator().manual_seed(0)
    vocab, first = 60, 5
    ids = torch.randint(first, vocab, (400, 128), generator=gen)
    ids[:, 0], ids[:, 64], ids[:, -1] = CLS, SEP, SEP
    ids[:, -10:-1] = PAD
    corrupted, labels = mask_tokens(ids, vocab, first, gen, mask_rate=0.15)
    selected = labels != -100
    ordinary = ids >= first
    assert not selected[~ordinary].any(), "special tokens must never be selected"
    rate = selected.sum().item() / ordinary.sum().item()
    assert abs(rate - 0.15) < 0.01
    became_mask = (corrupted[selected] == MASK).float().mean().item()
    unchanged = (corrupted[selected] == ids[selected]).float().mean().item()
    became_random = 1 - became_mask - unchanged
    assert abs(became_mask - 0.8) < 0.02
    # a random replacement can draw the same character (1/55 of the time): expected ~0.1 + 0.1/55
    assert abs(unchanged - 0.1) < 0.02 and abs(became_random - 0.1) < 0.02
    assert torch.equal(labels[selected], ids[selected])
    assert torch.equal(corrupted[~selected], ids[~selected])
    # dynamic masking: the next draw selects other positions
    _, labels2 = mask_tokens(ids, vocab, first, gen)
    assert not torch.equal(labels, labels2)


def test_mask_rate_is_an_option():
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 40, (200, 100), generator=gen)
    _, labels = mask_tokens(ids, 40, 5, gen, mask_rate=0.4)
    assert abs((labels != -100).float().mean().item() - 0.4) < 0.02


def test_nsp_pairs_are_balanced_and_negatives_come_from_another_document():
    # Four documents written in disjoint alphabets: every character tells its document.
    rng = np.random.default_rng(0)
    alphabets = ["abcde", "fghij", "klmno", "pqrst"]
    texts = ["\n".join("".join(rng.choice(list(al), size=rng.integers(5, 40))) for _ in range(300)) + "\n"
             for al in alphabets]
    tok = CharTokenizer.from_text("".join(texts))
    pairs = NSPPairs([np.asarray(tok.encode(t)) for t in texts], tok.stoi["\n"], context=64, seed=0)
    x, seg, labels = pairs.sample(400)
    assert abs(labels.float().mean().item() - 0.5) < 0.08

    def source(part):
        found = {i for i, al in enumerate(alphabets) if set(part) & set(al)}
        assert len(found) == 1
        return found.pop()

    for row, s, label in zip(x, seg, labels):
        row = row.tolist()
        assert row[0] == CLS and row.count(SEP) == 2
        sep1, sep2 = row.index(SEP), row.index(SEP, row.index(SEP) + 1)
        assert (s[: sep1 + 1] == 0).all() and (s[sep1 + 1: sep2 + 1] == 1).all()
        a, b = tok.decode(row[1:sep1]), tok.decode(row[sep1 + 1: sep2])
        if not a.strip() or not b.strip():
            continue
        if label == 0:  # IsNext: B is the text that follows A (from the next line start) in A's document
            text = texts[source(a)]
            at = text.find(a)
            assert source(b) == source(a) and text.find(b, at) - (at + len(a)) in range(0, 41)
        else:
            assert source(b) != source(a)


def test_clm_targets_are_inputs_shifted_by_one():
    data = [np.arange(5, 500) % 50 + 5]
    x, y = CLMBatches(data, context=16, seed=0).sample(4)
    assert x.shape == y.shape == (4, 16)
    assert torch.equal(x[:, 1:], y[:, :-1])


def test_any_text_file_is_a_corpus_with_held_out_documents(tmp_path):
    f = tmp_path / "class_notes.txt"
    f.write_text("\n".join(f"line {i} of our own class text" for i in range(400)), encoding="utf-8")
    splits = load_corpus(f)
    assert splits["train"] and splits["validation"] and splits["test"]
    names = [d.name for v in splits.values() for d in v]
    assert len(names) == len(set(names))
