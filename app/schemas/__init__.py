"""Request and response bodies (the API contract shared with the applets; keep names stable), in
one package: this module (inference, models, health, shared pieces), lessons.py (compare,
attention, objectives, ELECTRA, concepts), runs.py, finetunes.py and classes.py.

Limits that depend on the loaded models (context lengths, vocabulary size) are checked in the
routers against the cards (and written into the served schema by app/openapi.py); the static
ones are here, so they show in the OpenAPI schema.

Request bodies are strict: a field the endpoint does not know is a 422 naming that field
(`extra="forbid"`), so a misspelt knob ("temprature") is reported instead of silently ignored;
and values are not coerced (`strict=True`): `true` or "5" is no integer, `false` no position.
Query parameters arrive as text, so GenerateQuery (GET /api/generate/stream) parses numbers.
"""
from __future__ import annotations

from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..contract import PARTS, SET_ID_PATTERN

MAX_PROMPT_CHARS = 10_000
MAX_TEXT_CHARS = 10_000  # hard cap before the model's own context check
MAX_MASKS = 32
MAX_TEMPERATURE = 5.0
MAX_NEW_TOKENS = 1000
MAX_SEED = 2**32 - 1
MAX_COMPARE_CHARS = 64  # /api/compare: every position is one BERT forward for the strip: keep it a sentence
MAX_DRAWS = 200  # /api/objectives/recovery
MAX_LESSON_MASK_RATE = 0.5  # /api/objectives/*
MAX_MEAN_SPAN = 8.0  # /api/objectives/*

TEMPERATURE_DOC = (f"Softmax temperature, 0 to {MAX_TEMPERATURE:g}. 0 = greedy (always the most likely "
                   "character, no randomness); otherwise the logits are divided by it (<1 sharpens, >1 flattens).")
TOP_K_DOC = ("Keep only the k most likely characters (applied first, ties broken by vocabulary order). "
             "0 = off. At most the vocabulary size (see /api/models).")
TOP_P_DOC = ("Nucleus sampling, 0 < p <= 1, applied after top-k: keep the smallest set of most likely "
             "characters whose probability mass reaches p, then renormalise. 1.0 = off.")
SEED_DOC = (f"Seed, 0 to {MAX_SEED}: character i is drawn with a uniform number hashed from (seed, i), so the "
            "same prompt, settings and seed give the same text however it is generated (up to float rounding "
            "between a cached and a full forward, ~1e-5 in the logits).")
CORRUPT_SEED_DOC = f"Seed of numpy's default_rng, 0 to {MAX_SEED}: the same seed gives the same corruption."


def _integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _int_items(annotation: Any) -> bool:
    """Is this a list whose items may be integers (list[int], list[int | Literal["all"]], optional or not)?"""
    lists = [a for a in (get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,))
             if get_origin(a) is list]
    items = [get_args(a)[0] for a in lists if get_args(a)]
    arms = [x for i in items for x in (get_args(i) if get_origin(i) in (Union, UnionType) else (i,))]
    return any((get_args(x)[0] if get_origin(x) is Annotated else x) is int for x in arms)


MODEL_DOC = ("Id of the model set to use (GET /api/models lists them: the shipped set, finished training "
             "runs and their snapshots). Omitted = the shipped set.")
MODEL_ID_PATTERN = SET_ID_PATTERN


class Strict(BaseModel):
    """Base of every request body: unknown fields and wrong JSON types are rejected (422 naming the field)."""

    model_config = ConfigDict(extra="forbid", strict=True, protected_namespaces=())

    model: str | None = Field(None, max_length=64, pattern=MODEL_ID_PATTERN, description=MODEL_DOC)

    @model_validator(mode="before")
    @classmethod
    def _integral_numbers_are_integers(cls, data: Any) -> Any:
        """JSON has one number type: 3.0 is the integer 3 (as in JSON Schema); 3.5 is not one."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name, field in cls.model_fields.items():
            if name not in data:
                continue
            value = data[name]
            if field.annotation in (int, int | None):
                data[name] = _integral(value)
            elif isinstance(value, list) and _int_items(field.annotation):
                data[name] = [_integral(v) for v in value]
        return data


class ErrorBody(BaseModel):
    detail: str = Field(description="What was wrong, naming the parameter.")
    parameter: str | None = Field(None, description="The offending parameter, when there is one.")


class UnknownChar(BaseModel):
    position: int = Field(description="Character index (into the text, prompt or `tokens`) of a character "
                                      "outside the vocabulary; the model saw [UNK] there.")
    char: str
    segment: Literal["a", "b"] | None = Field(None, description="For /api/nsp/predict: which sentence.")


class CharProb(BaseModel):
    char: str
    prob: float


# ---- meta ----

class SetHealth(BaseModel):
    status: Literal["ok", "degraded", "failed"]
    problems: list[str] = Field(description="What failed a check when loading, and why (empty when ok).")


class HealthResponse(BaseModel):
    status: Literal["ok", "degraded"] = Field(description="'ok' when every loaded set passed every check and runs "
                                                          "can be stored; otherwise 'degraded'. HTTP 503 only when the "
                                                          "default set failed; other sets' problems answer 200.")
    storage: str | None = Field(None, description="What stops training runs from being stored (a full disk, a "
                                                  "data folder that is not writable), or null.")
    models: dict[str, bool] = Field(description="Which models of the default set are served, by family name (app/contract/families.py).")
    sets: dict[str, SetHealth] = Field(description="Every loaded model set by id (sets not used yet are not loaded).")


class VocabInfo(BaseModel):
    specials: list[str]
    chars: list[str] = Field(description="Ordinary characters; token id = 5 + index.")


class Limits(BaseModel):
    """Bounds the server enforces, for the pages (no copies in the JavaScript)."""

    max_masks: int = MAX_MASKS
    max_seed: int = MAX_SEED
    max_text_chars: int = MAX_TEXT_CHARS
    max_prompt_chars: int = MAX_PROMPT_CHARS
    max_new_tokens: int = MAX_NEW_TOKENS
    max_temperature: float = MAX_TEMPERATURE
    max_compare_chars: int = MAX_COMPARE_CHARS
    max_draws: int = MAX_DRAWS
    max_lesson_mask_rate: float = MAX_LESSON_MASK_RATE
    max_mean_span: float = MAX_MEAN_SPAN


class SetExamples(BaseModel):
    source: str = Field(description="Where the lines come from: the held-out part of the set's own training text.")
    lines: list[str] = Field(description="A few readable lines of that text (the applets' examples).")
    prompt: str = Field(description="Generation's default prompt: the first words of a line.")
    sentence: str = Field(description="Mask-Fill's default sentence.")
    mask: list[int] = Field(description="Mask-Fill's default blanks: character positions in `sentence`.")


class ModelSetInfo(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    id: str = Field(description="Pass it as `model` to any inference endpoint.")
    name: str = Field(description="For people, e.g. 'Shakespeare (shipped)' or 'Our poems · step 200'.")
    kind: Literal["shipped", "extra", "run", "snapshot", "classifier"]
    run: str | None = Field(description="The training run it came from (runs and snapshots).")
    step: int | None = Field(description="Training step of a snapshot.")
    families: list[Literal[PARTS]] = Field(description="What the set holds: " + ", ".join(PARTS) + ".")
    status: str = Field(description="ok, degraded, failed, or 'not loaded' (loaded on first use).")
    problems: list[str]
    cards: dict[str, dict[str, Any]] = Field(description=(
        "Its model cards. In GET /api/models: without their loss curves (only the home page draws them: "
        "GET /api/models/{id} has them), and empty for the default set, whose cards are the response's own."))


EXAMPLES_DOC = ("Lines of the set's own held-out text (a training run's sets: the applets' default prompt, "
                "sentence and examples); null for a set without them (the shipped Shakespeare set).")


class FamilyInfo(BaseModel):
    name: str = Field(description="File and API name: <name>.onnx, <name>.card.json, a run's families.")
    label: str
    objective: str = Field(description="What it learns, in plain words.")
    attention: str = Field(description="Which positions each position may look at: causal, bidirectional, prefix or permuted.")
    sees: str = Field(description="Its attention in a few words for a student (the home page's model card).")
    optional: bool = Field(description="A model set is whole without it.")
    trainable: bool = Field(description="The Train page offers it.")
    uses_nsp: bool
    pages: list[str]
    activities: list[str]
    live_view: str = Field(description="What the Train page shows of it while it trains.")
    metric: str
    card_label: str
    cached: bool = Field(description="Its graph carries a key/value cache per layer.")
    script: str = Field(description="Its page pieces (static/families/<name>.js).")


class FamiliesResponse(BaseModel):
    families: list[FamilyInfo] = Field(description="Every model family, in the contract's order (app/contract/families.py).")


class ModelsResponse(BaseModel):
    default: str = Field(description="Id of the set used when a request names none.")
    sets: list[ModelSetInfo]
    limits: Limits
    vocab: VocabInfo = Field(description="The default set's vocabulary.")
    cards: dict[str, dict[str, Any]] = Field(description="The default set's model cards (gpt.card.json, bert.card.json).")
    examples: SetExamples | None = Field(None, description="The default set's examples. " + EXAMPLES_DOC)
    families: list[FamilyInfo] = Field(default_factory=list, description="Every model family (as GET /api/families).")
    models_on_phones: bool = Field(False, description="Pages download the device copies of the models as they open "
                                   "(the server's --models-on-phones); otherwise only when the server is busy or away.")


class ModelSetDetail(ModelSetInfo):
    vocab: VocabInfo | None
    examples: SetExamples | None = Field(None, description=EXAMPLES_DOC)


# ---- mask fill ----

class MaskFillRequest(Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description=(
        "Text with one or more literal [MASK] markers, or plain text plus `positions`. After each "
        "[MASK] becomes one token it must fit the BERT context minus 2 ([CLS] and [SEP])."))
    positions: list[int] | None = Field(None, max_length=MAX_MASKS, description=(
        f"0-based character indices of `text` to mask (only when `text` has no [MASK] marker). At most {MAX_MASKS}."))
    top_k: int = Field(8, ge=1, description="How many predictions per mask (1 to the vocabulary size).")


class Original(BaseModel):
    char: str
    prob: float
    rank: int = Field(description="1-based rank of the original character among the predictions.")


class MaskResult(BaseModel):
    position: int = Field(description="Index into `tokens`.")
    predictions: list[CharProb] = Field(description="top_k characters, most likely first.")
    original: Original | None = Field(description="The hidden character's score (only when `positions` were given "
                                                  "and the character is in the vocabulary).")


class MaskFillResponse(BaseModel):
    tokens: list[str] = Field(description="The text as the model sees it, one entry per character; "
                                          "'[MASK]' at masks, '[UNK]' for characters outside the vocabulary.")
    unknown_chars: list[UnknownChar]
    masks: list[MaskResult]


class CorruptRequest(Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="Plain text (at most the BERT context minus 2).")
    mask_rate: float = Field(0.15, gt=0, le=1, allow_inf_nan=False,
                             description="Probability that each ordinary character is selected (0 < x <= 1).")
    seed: int = Field(0, ge=0, le=MAX_SEED, description=CORRUPT_SEED_DOC)


class Selected(BaseModel):
    position: int
    original: str
    action: Literal["mask", "random", "unchanged"] = Field(description="80 % mask, 10 % random character, 10 % unchanged.")
    shown: str = Field(description="What the model saw at this position.")
    prediction: str
    prob: float
    correct: bool
    top: list[CharProb] = Field(description="The 5 most likely characters.")


class CorruptResponse(BaseModel):
    tokens: list[str] = Field(description="The original text, one entry per character ('[UNK]' outside the vocabulary).")
    corrupted: list[str] = Field(description="What the model saw.")
    selected: list[Selected]
    accuracy: float | None = Field(description="Fraction of selected positions recovered; null when none was selected.")
    unknown_chars: list[UnknownChar]


# ---- generation ----

class SamplingParams(Strict):
    temperature: float = Field(1.0, ge=0, le=MAX_TEMPERATURE, allow_inf_nan=False, description=TEMPERATURE_DOC)
    top_k: int = Field(0, ge=0, description=TOP_K_DOC)
    top_p: float = Field(1.0, gt=0, le=1, allow_inf_nan=False, description=TOP_P_DOC)


class PromptParams(SamplingParams):
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS, description=(
        f"1 to {MAX_PROMPT_CHARS} characters; only the last `context` characters (GPT card) are read."))


class NextTokenRequest(PromptParams):
    # prompt + the characters stepped so far (the original prompt itself is checked in the router)
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT_CHARS + MAX_NEW_TOKENS, description=(
        f"1 to {MAX_PROMPT_CHARS} characters, plus up to {MAX_NEW_TOKENS} generated ones (see `generated`); "
        "only the last `context` characters (GPT card) are read."))
    seed: int | None = Field(None, ge=0, le=MAX_SEED, description=(
        "With a seed, the answer also holds `sample`: the character generation with this seed draws "
        "here (stepping one character at a time gives the same text as /api/generate)."))
    generated: int = Field(0, ge=0, le=MAX_NEW_TOKENS, description=(
        "How many trailing characters of `prompt` were generated (0 = none): the index of the character "
        "to draw, and where the prompt ended, so the model reads the window generation would read."))


class Entropy(BaseModel):
    raw: float
    tempered: float
    final: float


class Sample(BaseModel):
    char: str = Field(description="The character drawn from `final`.")
    index: int = Field(description="Its index in `chars`.")
    prob: float = Field(description="Its probability in `final`.")
    u: float = Field(description="The uniform number in [0, 1) that drew it (a hash of seed and `generated`).")


class NextTokenResponse(BaseModel):
    chars: list[str] = Field(description="All ordinary characters, in vocabulary order (special tokens are never predicted).")
    raw: list[float] = Field(description="softmax(logits).")
    tempered: list[float] = Field(description="softmax(logits / temperature); all mass on the argmax when greedy.")
    final: list[float] = Field(description="After top-k then top-p, renormalised; 0 for cut characters. Sampling draws from this.")
    kept: list[bool]
    entropy: Entropy = Field(description="Entropies of the three distributions, in nats.")
    greedy: bool
    context_used: int = Field(description="How many prompt characters the model read.")
    unknown_chars: list[UnknownChar]
    sample: Sample | None = Field(None, description="With `seed`: the character drawn here.")


class GenerateRequest(PromptParams):
    max_new_tokens: int = Field(100, ge=1, le=MAX_NEW_TOKENS, description=f"1 to {MAX_NEW_TOKENS} new characters.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description=SEED_DOC)


class GenerateQuery(GenerateRequest):
    """GenerateRequest as query parameters: numbers arrive as text and are parsed."""

    model_config = ConfigDict(strict=False, extra="forbid", protected_namespaces=())


class GenerateStep(BaseModel):
    char: str
    prob: float = Field(description="Its probability in the final distribution.")
    top: list[CharProb] = Field(description="Up to 5 most likely characters of the final distribution (kept ones only).")


class GenerateResponse(BaseModel):
    text: str = Field(description="The new characters only.")
    steps: list[GenerateStep]
    context_used: int = Field(description="How many prompt characters were read (the last ones, when the prompt is longer than the context).")
    unknown_chars: list[UnknownChar]


# ---- next-sentence prediction ----

class QuizItem(BaseModel):
    id: str
    index: int = Field(description="Position in the bank (0-based).")
    a: str
    b: str
    count: int = Field(description="Number of items in the bank.")


class QuizQuery(Strict):
    """Query of GET /api/nsp/quiz (text, so numbers are parsed)."""

    model_config = ConfigDict(strict=False, extra="forbid", protected_namespaces=())
    index: int | None = Field(None, ge=0, description="Item to show (0-based, below the bank size); a random one when left out.")


class QuizAnswer(Strict):
    guess: Literal["IsNext", "NotNext"]


class QuizResult(BaseModel):
    id: str
    correct: bool
    truth: Literal["IsNext", "NotNext"]
    p_is_next: float
    model_guess: Literal["IsNext", "NotNext"]
    model_correct: bool
    source_a: str
    source_b: str


class NSPRequest(Strict):
    a: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="Sentence A.")
    b: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description=(
        "Sentence B. len(a) + len(b) + 3 must fit the BERT context ([CLS] a [SEP] b [SEP])."))


class NSPResponse(BaseModel):
    p_is_next: float
    prediction: Literal["IsNext", "NotNext"]
    unknown_chars: list[UnknownChar]
