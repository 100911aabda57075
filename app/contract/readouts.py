"""The readout vocabulary (issue 32, issue 42): how the fine-tune lab's `readout` arm reads the pretrained
model's own head for a task, with no label taught. One vocabulary for the shipped table
(training/tasks/tasks.json "readout"), a task file's first line, `python -m training finetune --readout
JSON` and `POST /api/finetunes` "readout"; checked here, in plain Python (the server and `--check-task`
run it without torch):

    {"insert": CHARS}        per character: BERT's masked-LM head at a [MASK] inserted after each
                             character: p(one of CHARS there)                (spaces " ", punctuation ",.;:!?")
    {"masked": "other"}      per character: that character masked: 1 - p(the character that is there)  (typos)
    {"masked": "upper"}      per character: that letter masked: p(its capital) / (p(capital) + p(small))
                             (capitals)
      + "positions": "letters" | "all"   (optional, per character) which characters the readout scores: with
                             "letters" any other character (a space, a mark, a digit) is never marked and
                             the one threshold is set on letters alone. Default "all".
    {"gpt": LABEL}           whole input, two labels: GPT's mean log-probability per character of the text;
                             LABEL (one of the task's labels) is what the likelier texts are
    {"nsp": LABEL}           whole input, two labels, each text two lines joined by "\n": BERT's
                             next-sentence head, p(IsNext) of [CLS] first line [SEP] second line [SEP];
                             LABEL is what the texts it finds likelier to follow are (issue 52: `follows`)
    "none"                   no readout (the arm is skipped and says why)

A per-character readout marks one tag against the other, so the task needs exactly two tags (the
marked one is "1" where there is one, else the rarer). A whole-input task is read by GPT only when
it declares {"gpt": LABEL}: GPT's likelihood says "looks like English", which means nothing for most
questions (sentiment: 43 %), so it is never a default; the same for {"nsp": LABEL}.

{"nsp": LABEL} splits each text at its first line break: the first line is segment A, the rest segment
B. A text with no line break is read as it is, a first line with an empty second ([CLS] text [SEP]
[SEP]): the head still answers, so nothing fails, and a task whose texts are not pairs simply gets a
readout that means little (the page offers "nsp" only for a file whose every text holds a line break).

A task file declares its readout on its first line, alone: {"readout": {...}} (app/contract/task_format.py).
"""
from __future__ import annotations

import json
import unicodedata

KINDS = {"insert": "token", "masked": "token", "gpt": "sequence", "nsp": "sequence"}
WHOLE = ("gpt", "nsp")  # the whole-input readouts: each names the label of the texts scored higher
READS = {"gpt": "GPT's likelihood", "nsp": "BERT's next-sentence head"}
MASKED = ("other", "upper")
POSITIONS = ("all", "letters")
MAX_INSERT = 20
EXAMPLE = ('{"insert": " "}, {"masked": "other" | "upper"} (+ "positions": "letters"), {"gpt": LABEL}, '
           '{"nsp": LABEL} or "none"')


def _short(value) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    text = text if len(text) <= 40 else text[:37] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")  # half a character (\ud800) shown escaped


def _halves(text: str) -> bool:
    """Does `text` hold a lone surrogate (half of a character: a JSON escape like \\ud800), which no file,
    trainer argument or answer in UTF-8 can carry?"""
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _unseen(text: str) -> str | None:
    """The first character of `text` that no text shows as itself: NUL and the other controls (a new
    line is a character of the corpus, so it may be read), invisible formatting (bidirectional
    overrides, zero-width spaces) and line or paragraph separators. None when there is none."""
    return next((ch for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")), None)


def shape_problem(value) -> str | None:
    """What is wrong with a declaration whatever the task (None when it is in the vocabulary)."""
    if value == "none":
        return None
    if isinstance(value, str):
        return f"{_short(value)} is not a readout: give \"none\" or an object, e.g. {EXAMPLE}"
    if not isinstance(value, dict):
        return f"must be an object like {EXAMPLE}"
    ways = [k for k in KINDS if k in value]
    if len(ways) != 1:
        return ("give exactly one of \"insert\", \"masked\", \"gpt\" or \"nsp\"" + (f" (got {', '.join(ways)})" if ways else "")
                + f", e.g. {EXAMPLE}")
    way = ways[0]
    allowed = {way} | ({"positions"} if way not in WHOLE else set())
    extra = sorted(str(k) for k in value if k not in allowed)
    if extra:
        return f"unknown key {extra[0][:40]!r} with \"{way}\" (allowed: {', '.join(sorted(allowed))})"
    v = value[way]
    if way == "insert" and (not isinstance(v, str) or not v or len(v) > MAX_INSERT or len(set(v)) != len(v)):
        return f"\"insert\" must be the characters to read at the inserted [MASK]: 1 to {MAX_INSERT} different characters"
    if way == "insert" and _halves(v):
        return "\"insert\" must be whole characters; it holds a lone surrogate (half of a character)"
    if way == "insert" and _unseen(v):
        bad = _unseen(v)
        return (f"\"insert\" must be characters a text shows; it holds U+{ord(bad):04X} "
                f"({unicodedata.name(bad, 'a control character').lower()}), which no task text can mark")
    if way == "masked" and v not in MASKED:
        return f"\"masked\" must be \"other\" or \"upper\" (got {_short(v)})"
    if way == "gpt" and (not isinstance(v, str) or not v):
        return "\"gpt\" must be the label the likelier texts have"
    if way == "nsp" and (not isinstance(v, str) or not v):
        return "\"nsp\" must be the label of the texts whose second line BERT finds likelier to follow the first"
    if "positions" in value and value["positions"] not in POSITIONS:
        return f"\"positions\" must be \"letters\" or \"all\" (got {_short(value['positions'])})"
    return None


def fit_problem(value, kind: str, labels: list[str]) -> str | None:
    """What is wrong with a declaration for a task of this kind and these labels (None when it fits)."""
    problem = shape_problem(value)
    if problem or value == "none":
        return problem
    way = next(k for k in KINDS if k in value)
    if KINDS[way] != kind:
        return (f"\"{way}\" reads every character, for a per-character task ({{\"tags\"}}); this is a whole-input task: "
                "give {\"gpt\": LABEL} or {\"nsp\": LABEL}" if kind == "sequence" else
                f"\"{way}\" reads a whole text ({READS[way]}), "
                "for a whole-input task; this is a per-character task: give "
                "{\"insert\": CHARS} or {\"masked\": \"other\" | \"upper\"}")
    if len(labels) != 2:
        what = "labels" if kind == "sequence" else "tags"
        return f"a readout sets one threshold between two {what}; this task has {len(labels)} ({', '.join(labels)})"
    if way in WHOLE and value[way] not in labels:
        return f"\"{way}\": {value[way][:60]!r} is not a label of this task ({', '.join(labels)})"
    return None


def parse_json(text: str):
    """A declaration given as text (--readout): JSON, or the bare word none. ValueError says what is wrong."""
    if text.strip() == "none":
        return "none"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno}); give e.g. '{{\"masked\": \"other\"}}'") from None
    problem = shape_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def words(value, kind: str) -> str:
    """One sentence: what the readout reads (for --check-task and the trainer's start line)."""
    if value is None or value == "none":
        return ("none: no readout (a per-character readout is declared as " + '{"insert": CHARS} or {"masked": ...})'
                if kind == "token" else
                "none: no readout (GPT's likelihood or BERT's next-sentence head only when declared: {\"gpt\": LABEL} "
                "or {\"nsp\": LABEL}, LABEL = what the likelier texts are)")
    if "gpt" in value:
        return (f"GPT's mean log-probability per character of the text; zero labels: {value['gpt']!r} when the text costs "
                "the GPT less than 2 x its held-out loss per character; then one threshold set on the labels")
    if "nsp" in value:
        return (f"BERT's next-sentence head: p(IsNext) of the text's second line after its first (split at the first line "
                f"break; no break: the whole text, then an empty line); zero labels: {value['nsp']!r} when p(IsNext) > 0.5; "
                "then one threshold set on the labels")
    where = " (letters only: any other character is never marked)" if value.get("positions") == "letters" else ""
    if "insert" in value:
        what = " or ".join(repr(c) for c in value["insert"])
        return f"BERT's masked-LM head at a [MASK] inserted after each character: p({what}); zero labels: > 0.5" + where
    if value["masked"] == "upper":
        return ("BERT's masked-LM head at each masked letter: p(capital) / (p(capital) + p(small)); zero labels: > 0.5"
                + where)
    return "BERT's masked-LM head at each masked character: 1 - p(the character there); zero labels: p < 1 %" + where


def why_not(value, kind: str, labels: list[str], has_gpt: bool) -> str | None:
    """Why the readout arm cannot run for a task with this declaration (None: it runs), in the trainer's
    words: the trainer skips the arm with it (training/finetune/readout.py), the page's plan says it first."""
    if value is None or value == "none":
        if value == "none":
            return "this task declares no readout (its answer is not something the pretrained heads predict)"
        if kind == "sequence":
            if len(labels) != 2:
                return f"the readout sets one threshold between two labels; this task has {len(labels)}"
            return ("this whole-input task declares no readout: GPT's likelihood (or BERT's next-sentence head) is read "
                    "only when the task says which label the likelier texts have (a readout chosen on the fine-tune page, "
                    '{"gpt": LABEL} or {"nsp": LABEL} on the file\'s first line, or --readout)')
        return ("this per-character task declares no readout (which character to read at a [MASK]: "
                'a readout chosen on the fine-tune page, {"insert": CHARS} or {"masked": "other" | "upper"} on the '
                "file's first line, or --readout)")
    problem = fit_problem(value, kind, labels)
    if problem:
        return problem
    if "gpt" in value and not has_gpt:  # BERT is always there: the lab starts from it
        return "this model set has no GPT (gpt.onnx) to read the texts"
    return None


def zero_label(value, kind: str) -> bool:
    """Has the readout a zero-label rule (size 0 in the results)? Every declaration that runs has one."""
    return value not in (None, "none") and (kind == "token" or any(w in value for w in WHOLE))
