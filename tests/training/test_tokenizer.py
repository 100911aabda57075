from training.tokenizer import MASK, SPECIALS, UNK, CharTokenizer


def test_round_trip_and_unknown_characters(tmp_path):
    tok = CharTokenizer.from_text("To be, or not to be.\n")
    text = "not to be, or to be.\n"
    assert tok.decode(tok.encode(text)) == text
    ids = tok.encode("be?")  # '?' never appeared in the training text
    assert ids[-1] == UNK and tok.decode(ids) == "be[UNK]"
    assert tok.vocab_size == len(SPECIALS) + len(set("To be, or not to be.\n"))
    path = tmp_path / "vocab.json"
    tok.save(path)
    again = CharTokenizer.load(path)
    assert again.itos == tok.itos and again.counts == tok.counts
    assert again.itos[MASK] == "[MASK]"
