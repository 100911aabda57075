"""The three masking schemes: the share they hide, the units they hide, one decision per unit."""
import pytest
import torch

from training.data import load_corpus
from training.masking import MAX_SPAN, SCHEMES, mask_tokens, word_table
from training.tokenizer import MASK, CharTokenizer


@pytest.fixture(scope="module")
def rows(tiny_corpus):
    text = "".join(d.text for d in load_corpus(tiny_corpus)["train"])
    tok = CharTokenizer.from_text(text)
    ids = torch.tensor([tok.encode(text[i * 64:(i + 1) * 64]) for i in range(200)])
    return tok, ids


def runs(mask_row):
    """Lengths of the runs of True in a 1-d bool tensor."""
    out, n = [], 0
    for v in mask_row.tolist() + [False]:
        if v:
            n += 1
        elif n:
            out.append(n)
            n = 0
    return out


@pytest.mark.parametrize("scheme", SCHEMES)
def test_each_scheme_hides_about_fifteen_percent(rows, scheme):
    tok, ids = rows
    _, labels = mask_tokens(ids, tok.vocab_size, tok.first_char_id, torch.Generator().manual_seed(0), 0.15,
                            scheme, word_table(tok.itos))
    assert 0.12 < (labels != -100).float().mean().item() < 0.18


def test_char_scheme_draws_as_the_original_recipe(rows):
    tok, ids = rows
    a = mask_tokens(ids, tok.vocab_size, tok.first_char_id, torch.Generator().manual_seed(3))
    b = mask_tokens(ids, tok.vocab_size, tok.first_char_id, torch.Generator().manual_seed(3), 0.15, "char")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_spans_are_runs_and_words_are_whole_words(rows):
    tok, ids = rows
    is_word = word_table(tok.itos)
    gen = torch.Generator().manual_seed(1)
    corrupted, labels = mask_tokens(ids, tok.vocab_size, tok.first_char_id, gen, 0.15, "span", is_word)
    lengths = [n for row in labels != -100 for n in runs(row)]
    assert sum(lengths) / len(lengths) > 1.8  # runs, not single characters
    corrupted, labels = mask_tokens(ids, tok.vocab_size, tok.first_char_id, gen, 0.15, "word", is_word)
    sel = labels != -100
    assert is_word[ids[sel]].all()  # only word characters
    # a selected character's word neighbours are selected too: whole words
    inside = is_word[ids]
    left = sel[:, 1:] & inside[:, :-1] & ~sel[:, :-1]
    assert not left.any()
    assert max(n for row in sel for n in runs(row)) <= max(MAX_SPAN, 20)


def test_one_decision_per_unit(rows):
    tok, ids = rows
    corrupted, labels = mask_tokens(ids, tok.vocab_size, tok.first_char_id, torch.Generator().manual_seed(2), 0.15,
                                    "word", word_table(tok.itos))
    sel = labels != -100
    for r in range(20):
        start = None
        for i in range(ids.size(1) + 1):
            inside = i < ids.size(1) and bool(sel[r, i])
            if inside and start is None:
                start = i
            if not inside and start is not None:
                masked = (corrupted[r, start:i] == MASK).tolist()
                assert all(masked) or not any(masked)  # a word is all [MASK] or none of it
                start = None
