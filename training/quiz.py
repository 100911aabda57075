"""The NSP quiz bank: held-out pairs a person can judge, built the way BERT's NSP pairs are built,
and BERT's own score on them, measured with the exported ONNX file exactly as the server answers.

Pair construction (the same as training/data.py NSPPairs, restricted to what a person can read):
- A is whole lines of one held-out document, from a line start, ending just after a line break
  (blank lines between speeches stay in, as in training);
- IsNext: B starts at the very next line start of the same document;
  NotNext: B starts at a random line start of a different held-out document;
- B is whole lines too, ending at a line end (never cut inside a line);
- [CLS] A [SEP] B [SEP] fits BERT's context (one token per character). A's length budget is drawn
  as in training (a quarter to three quarters of the room), B fills what is left.
Half the items are IsNext, half NotNext, shuffled, with fixed ids q000, q001, ...

Scoring runs bert.onnx with onnxruntime, one item at a time: ids [CLS] a [SEP] b [SEP], token types
0 for [CLS] a [SEP] and 1 for b [SEP], BERT says IsNext when P(IsNext) >= 0.5. That is what
app/routers/nsp.py does for each answer, so the card's figure is what a student sees answering
every item."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .data import Document
from .tokenizer import CLS, SEP, CharTokenizer

QUIZ_FILE = "nsp_quiz.json"
RULE = ("bert.onnx via onnxruntime, one item at a time: [CLS] a [SEP] b [SEP] with token types 0 for "
        "[CLS] a [SEP] and 1 for b [SEP]; BERT says IsNext when P(IsNext) >= 0.5 (as the server answers)")
CONSTRUCTION = ("A = whole lines from a line start of a held-out play; B = whole lines from the next line start "
                "(IsNext) or from a random line start of a different held-out play (NotNext); no line is cut; "
                "[CLS] A [SEP] B [SEP] fits BERT's context; half IsNext, half NotNext")


class _Doc:
    """A document's text and where its non-blank lines start and end."""

    def __init__(self, doc: Document):
        self.name, self.text = doc.name, doc.text
        starts, ends, pos = [], [], 0
        for line in doc.text.split("\n"):
            if line.strip():
                starts.append(pos)
                ends.append(pos + len(line))  # index of the line's "\n" (or the text's end)
            pos += len(line) + 1
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)

    def span(self, first: int, budget: int, keep_break: bool) -> tuple[str, int] | None:
        """Whole lines from non-blank line `first` while they fit `budget` characters; returns
        (text, index of the next non-blank line) or None when not even the first line fits.
        keep_break: end just after the last line's break, blank lines included (A, as in training,
        ends where the next line starts); otherwise end at the last line's end (B)."""
        start, last = int(self.starts[first]), None
        for k in range(first, len(self.starts)):
            end = int(self.starts[k + 1]) if keep_break and k + 1 < len(self.starts) else int(self.ends[k]) + keep_break
            if end - start > budget:
                break
            last = (end, k + 1)
        if last is None:
            return None
        end, nxt = last
        return self.text[start:min(end, len(self.text))], nxt


def title_of(doc: Document) -> str:
    """How a person names the document: its first line when that is its title ("THE TEMPEST" for
    tempest, "TWELFTH NIGHT; OR, WHAT YOU WILL" for twelfth_night: the part before ";"), else its
    file name in words ("my_play" -> "My Play")."""
    small = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to"}

    def words(text):
        return "".join(c.lower() if c.isalnum() else " " for c in text).split()

    def titled(text):
        ws = text.split()
        roman = {"ii", "iii", "iv", "v", "vi", "vii", "viii", "ix"}
        return " ".join(w.upper() if w.lower() in roman else w.lower() if k and w.lower() in small else w.capitalize()
                        for k, w in enumerate(ws))

    first = next((ln.strip() for ln in doc.text.split("\n") if ln.strip()), "")
    head = first.split(";")[0].strip()
    name_words = words(doc.name)
    head_words = words(head)
    inside = any(head_words[i:i + len(name_words)] == name_words for i in range(len(head_words)))
    if name_words and inside and len(head) <= 60:
        return titled(head.lower())
    return titled(" ".join(name_words)) or doc.name


def _readable(text: str, min_letters: int) -> bool:
    return sum(c.isalpha() for c in text) >= min_letters


def build_quiz(docs: list[Document], context: int, n_items: int = 200, seed: int = 7) -> list[dict]:
    """Balanced, shuffled NSP items from held-out documents (see the module docstring)."""
    plays = [d for d in (_Doc(doc) for doc in docs) if len(d.starts) >= 4]
    if len(plays) < 2:
        raise ValueError("the NSP quiz needs two held-out documents with at least 4 non-blank lines each")
    room = context - 3  # [CLS] A [SEP] B [SEP]
    min_letters = max(6, room // 8)  # a bare speaker's name is not enough to judge by
    rng = np.random.default_rng(seed)
    p_doc = np.array([len(d.starts) for d in plays], dtype=np.float64)
    p_doc /= p_doc.sum()
    items, used = [], set()
    for _attempt in range(200 * n_items):
        if len(items) == n_items:
            break
        is_next = len(items) % 2 == 0
        di = int(rng.choice(len(plays), p=p_doc))
        doc = plays[di]
        first = int(rng.integers(len(doc.starts)))
        budget_a = int(rng.integers(room // 4, 3 * room // 4 + 1))
        a = doc.span(first, budget_a, keep_break=True)
        if a is None or not _readable(a[0], min_letters) or (di, first) in used:
            continue
        a_text, nxt = a
        if is_next:
            if nxt >= len(doc.starts):
                continue
            bi, b_first = di, nxt
        else:
            bi = int(rng.integers(len(plays) - 1))
            bi = bi + 1 if bi >= di else bi  # any document but A's
            b_first = int(rng.integers(len(plays[bi].starts)))
        b = plays[bi].span(b_first, room - len(a_text), keep_break=False)
        if b is None or not _readable(b[0], min_letters) or (a_text, b[0]) in used:
            continue
        used.update({(di, first), (a_text, b[0])})  # each A position once, each pair's text once
        items.append({"a": a_text, "b": b[0], "is_next": is_next, "source_a": doc.name, "source_b": plays[bi].name})
    if len(items) < n_items:
        raise ValueError(f"could only build {len(items)} of {n_items} NSP quiz items: the held-out lines are too "
                         f"long for BERT's context of {context} (A and B must be whole lines)")
    order = rng.permutation(len(items))
    return [{"id": f"q{k:03d}", **items[int(i)]} for k, i in enumerate(order)]


def pair_input(a_ids: list[int], b_ids: list[int]) -> tuple[list[int], list[int]]:
    """The ids and token types of a pair as BERT's next-sentence head reads it: [CLS] a [SEP] b [SEP],
    type 0 for [CLS] a [SEP] and 1 for b [SEP] (the quiz's score here, and the fine-tune lab's "nsp"
    readout, training/finetune/readout.py)."""
    return [CLS, *a_ids, SEP, *b_ids, SEP], [0] * (len(a_ids) + 2) + [1] * (len(b_ids) + 1)


def p_is_next(session, tok: CharTokenizer, a: str, b: str) -> float:
    """P(IsNext) from an onnxruntime session of bert.onnx, exactly as app/ computes it."""
    row, row_types = pair_input(tok.encode(a), tok.encode(b))
    ids, types = np.asarray([row], dtype=np.int64), np.asarray([row_types], dtype=np.int64)
    nsp = session.run(["nsp_logits"], {"input_ids": ids, "token_type_ids": types})[0][0].astype(np.float64)
    e = np.exp(nsp - nsp.max())
    return float(e[0] / e.sum())


def score_quiz(models_dir: str | Path, items: list[dict]) -> dict:
    """BERT's answers to every item of the bank, from models_dir/bert.onnx and vocab.json."""
    import onnxruntime as ort

    models_dir = Path(models_dir)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(models_dir / "bert.onnx"), options, providers=["CPUExecutionProvider"])
    tok = CharTokenizer.load(models_dir / "vocab.json")
    probs = np.array([p_is_next(session, tok, it["a"], it["b"]) for it in items])
    truth = np.array([bool(it["is_next"]) for it in items])
    said = probs >= 0.5
    correct = int((said == truth).sum())
    return {
        "items": len(items), "correct": correct, "accuracy": correct / len(items),
        "is_next_items": int(truth.sum()), "is_next_said": int(said.sum()),
        "correct_on_is_next": int((said & truth).sum()), "correct_on_not_next": int((~said & ~truth).sum()),
        "mean_p_is_next": {"is_next_items": float(probs[truth].mean()) if truth.any() else None,
                           "not_next_items": float(probs[~truth].mean()) if (~truth).any() else None},
        "rule": RULE,
    }


def write_aside(path: Path, text: str) -> None:
    """Write next to the target, then rename into place: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_quiz(models_dir: str | Path, docs: list[Document], n_items: int = 200, seed: int = 7) -> dict:
    """Build the bank for the model set in models_dir, score it with its bert.onnx, write
    nsp_quiz.json and the quiz section of bert.card.json. Returns the quiz section."""
    models_dir = Path(models_dir)
    card_path = models_dir / "bert.card.json"
    card = json.loads(card_path.read_text(encoding="utf-8"))
    items = build_quiz(docs, int(card["config"]["context"]), n_items, seed)
    bank = {"source": "held-out plays: " + ", ".join(sorted({it["source_a"] for it in items})),
            "construction": CONSTRUCTION, "seed": seed, "items": items}
    used = {it["source_a"] for it in items} | {it["source_b"] for it in items}
    titles = {d.name: title_of(d) for d in docs if d.name in used}  # the page names plays by these
    section = {**score_quiz(models_dir, items), "bank": QUIZ_FILE, "seed": seed, "construction": CONSTRUCTION,
               "titles": titles}
    write_aside(models_dir / QUIZ_FILE, json.dumps(bank, indent=1, ensure_ascii=False) + "\n")
    card["quiz"] = section
    write_aside(card_path, json.dumps(card, indent=1) + "\n")
    return section


def drop_quiz(models_dir: str | Path, reason: str) -> dict:
    """No bank can be built: remove a stale one (it would be scored by another model) and say why
    in the card. The server then answers the quiz endpoints with 503."""
    models_dir = Path(models_dir)
    (models_dir / QUIZ_FILE).unlink(missing_ok=True)
    card_path = models_dir / "bert.card.json"
    card = json.loads(card_path.read_text(encoding="utf-8"))
    card["quiz"] = {"items": 0, "error": reason}
    write_aside(card_path, json.dumps(card, indent=1) + "\n")
    return card["quiz"]


def quiz_documents(models_dir: str | Path, corpus: str | Path | None = None) -> list[Document]:
    """The held-out documents of the corpus BERT in models_dir was trained on (its card names the
    corpus and its split). The shipped corpus is found by name; another needs `corpus`."""
    from .data import DEFAULT_CORPUS

    card = json.loads((Path(models_dir) / "bert.card.json").read_text(encoding="utf-8"))
    info = card.get("corpus", {})
    if corpus is None:
        if info.get("name") != DEFAULT_CORPUS.name:
            raise ValueError(f"BERT was trained on the corpus {info.get('name')!r}: pass its path with --corpus")
        corpus = DEFAULT_CORPUS
    docs = held_out_for_quiz(corpus)
    expected = info.get("split", {}).get("validation", []) + info.get("split", {}).get("test", [])
    if expected and [d.name for d in docs] != expected:
        raise ValueError(f"{corpus} holds out {[d.name for d in docs]}, but BERT's card says {expected}")
    return docs


def held_out_for_quiz(corpus: str | Path) -> list[Document]:
    """Validation + test documents of a corpus (whole held-out plays for the shipped one)."""
    from .data import load_corpus

    splits = load_corpus(corpus)
    return splits["validation"] + splits["test"]
