"""Request and response bodies of the lesson views (issue 13): GPT vs BERT on one blank, real
attention weights, the other pretraining objectives, the concept check. Same conventions as
app/schemas/__init__.py: strict bodies with the optional `model`, documented fields."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, create_model

from ..contract.families import for_page
from . import (MAX_COMPARE_CHARS, MAX_DRAWS, MAX_LESSON_MASK_RATE, MAX_MEAN_SPAN, MAX_SEED, SEED_DOC, CharProb,
                Strict, UnknownChar)

MAX_ATTENTION_CHARS = 48  # a grid a person can read
MAX_PAD = 8


# ---- GPT vs BERT on the same blank ----

class CompareRequest(Strict):
    text: str = Field(min_length=1, max_length=MAX_COMPARE_CHARS, description=f"A sentence (1 to {MAX_COMPARE_CHARS} characters).")
    position: int = Field(ge=0, description="0-based index of the character both models guess.")
    top_k: int = Field(5, ge=1, le=20, description="How many top guesses to list for each model.")
    strip: bool = Field(True, description="Also compute the strip (every position; one BERT forward each). "
                                          "The page asks for it when the text changes, not when the position moves.")


class Guess(BaseModel):
    available: bool = Field(description="False for GPT at position 0 (nothing to its left to read).")
    p_true: float | None = Field(description="Probability of the true character.")
    rank: int | None = Field(description="1-based rank of the true character.")
    entropy: float | None = Field(description="Entropy of the distribution, in nats.")
    top: list[CharProb]
    reads: str = Field(description="What the model read.")


# One field per family the compare page shows (its spec lists "compare"), named by the family.
StripEntry = create_model("StripEntry", position=(int, ...), char=(str, ...), **{
    s.name: (float | None, Field(description=f"{s.label}'s probability of this character, reading it its own way "
                                             "(null where it cannot: GPT at position 0).")) for s in for_page("compare")})

CompareResponse = create_model("CompareResponse", tokens=(list[str], ...), position=(int, ...), char=(str, ...), **{
    s.name: (Guess, Field(description=f"{s.label}'s guess ({s.attention} attention).")) for s in for_page("compare")},
    strip=(list[StripEntry] | None, Field(description="Each model's probability of the true character at every "
                                                      "position (null when not asked).")),
    unknown_chars=(list[UnknownChar], ...))


# ---- real attention ----

MAX_VIEW_INDEX = 63  # a layer or head index; the set's own n_layer / n_head is checked per request

class AttentionRequest(Strict):
    text: str = Field(min_length=1, max_length=MAX_ATTENTION_CHARS, description=f"1 to {MAX_ATTENTION_CHARS} characters.")
    pad: int = Field(2, ge=0, le=MAX_PAD, description="[PAD] slots appended to BERT's input (their columns stay empty).")
    layer: int = Field(-1, ge=-1, le=MAX_VIEW_INDEX, description=(
        "Which layer's weights to send (0-based); -1 = the mean over the layers. Must be below the models' n_layer."))
    head: int = Field(-1, ge=-1, le=MAX_VIEW_INDEX, description=(
        "Which head's weights to send (0-based); -1 = the mean over the heads. Must be below the models' n_head."))
    seed: int = Field(0, ge=0, le=MAX_SEED, description=(
        "The random order a permuted family (PLM) reads in: 0 .. n-1 shuffled by the random stream with this seed."))
    families: list[Literal[tuple(s.name for s in for_page("attention"))]] | None = Field(None, max_length=8, description=(
        "Only these families' weights (the others null): a device that has GPT and BERT but not yet T5's and PLM's "
        "weights asks for those it has. Default: every family the page shows."))


class AttentionMaps(BaseModel):
    tokens: list[str] = Field(description=(
        "What the model read: the text (GPT); [CLS] text [SEP] [PAD]... (BERT); the text with a span hidden behind "
        "⟨0⟩, [SEP], ⟨0⟩ and the span written back (T5); the text, then a [MASK] query per guessed place (PLM)."))
    n_layer: int
    n_head: int
    layer: int = Field(description="The layer sent (-1 = mean over the layers).")
    head: int = Field(description="The head sent (-1 = mean over the heads).")
    weights: list[list[float]] = Field(description=(
        "(query, key) weights of the chosen layer and head (or their mean), rounded to 4 decimals: each row sums "
        "to 1 over the allowed keys."))
    served_logits_max_abs_diff: float = Field(description="Max |logits of the inspection graph - logits of the served graph| on this input.")
    row_sum_max_error: float = Field(description="Max |sum of a row over allowed keys - 1|, every layer and head, before rounding.")
    blocked_max: float = Field(description="Largest weight on a blocked cell, every layer and head (0 when the mask holds).")


# One entry per family the attention page shows (its spec lists "attention"), named by the family.
# Null for a family the request's `families` left out, and for an optional family (a set is whole
# without it) the set has no inspection graph of.
AttentionResponse = create_model("AttentionResponse", **{
    s.name: (AttentionMaps | None, Field(None, description=f"{s.label}'s weights ({s.attention} attention); null when "
                                                           "not asked for" + (f", or when this set has no {s.label} with an "
                                                                              "inspection graph" if s.optional else "") + "."))
    for s in for_page("attention")},
    unknown_chars=(list[UnknownChar], ...))


# ---- the other objectives ----

Scheme = Literal["char", "span", "word"]
SCHEME_DOC = ("char: each character selected with probability mask_rate (BERT's own recipe); span: contiguous "
              "spans (geometric lengths, mean `mean_span`, SpanBERT style) up to mask_rate of the characters; "
              "word: whole words up to mask_rate of the characters. 80/10/10 applies to each unit as a whole.")


class ObjectivesCorruptRequest(Strict):
    text: str = Field(min_length=1, max_length=10_000, description="Plain text (at most the BERT context minus 2).")
    scheme: Scheme = Field("char", description=SCHEME_DOC)
    mask_rate: float = Field(0.15, gt=0, le=MAX_LESSON_MASK_RATE, allow_inf_nan=False, description="Share of characters selected (0 < x <= 0.5).")
    mean_span: float = Field(3.0, ge=1, le=MAX_MEAN_SPAN, allow_inf_nan=False, description="Mean span length (span scheme).")
    seed: int = Field(0, ge=0, le=MAX_SEED, description=SEED_DOC)


class Corrupted(BaseModel):
    position: int
    original: str
    action: Literal["mask", "random", "unchanged"]
    shown: str
    prediction: str
    prob: float
    correct: bool
    p_original: float = Field(description="BERT's probability of the original character here.")
    replaced: bool = Field(description="ELECTRA's label: the model saw a different character here.")


class Loss(BaseModel):
    loss: float | None = Field(description="Mean negative log-likelihood, nats.")
    positions: int = Field(description="Positions that carry loss.")


class ObjectivesCorruptResponse(BaseModel):
    tokens: list[str]
    corrupted: list[str]
    scheme: Scheme
    units: list[list[int]] = Field(description="Selected positions grouped by unit (character, span or word).")
    rate: float = Field(description="Share of ordinary characters selected in this draw.")
    selected: list[Corrupted]
    accuracy: float | None
    mlm: Loss = Field(description="MLM: mean over the selected positions of -log p(original | corrupted text).")
    clm: Loss = Field(description="CLM (GPT, same text uncorrupted): mean over every position of -log p(next | left).")
    unknown_chars: list[UnknownChar]


class RecoveryRequest(Strict):
    scheme: Scheme = Field("char", description=SCHEME_DOC)
    mask_rate: float = Field(0.15, gt=0, le=MAX_LESSON_MASK_RATE, allow_inf_nan=False)
    mean_span: float = Field(3.0, ge=1, le=MAX_MEAN_SPAN, allow_inf_nan=False)
    draws: int = Field(40, ge=1, le=MAX_DRAWS, description=f"Corruptions to run (1 to {MAX_DRAWS}), one held-out text each.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description=SEED_DOC)


class ActionStats(BaseModel):
    positions: int
    recovered: int
    accuracy: float | None


class RecoveryResponse(BaseModel):
    scheme: Scheme
    draws: int
    texts: int = Field(description="Distinct held-out texts used.")
    source: str = Field(description="Where the held-out text comes from.")
    by_action: dict[Literal["mask", "random", "unchanged"], ActionStats]
    positions: int
    accuracy: float | None
    selected_rate: float = Field(description="Share of characters selected over all draws.")


# ---- concept check ----

class ConceptQuestion(BaseModel):
    id: str
    number: int = Field(description="1-based position in this order.")
    topic: str
    question: str
    choices: list[str]
    applet: str = Field(description="Page that shows the concept live.")
    applet_label: str


class ConceptQuiz(BaseModel):
    order: int | None = Field(description="The order's seed (a class set); null = the bank's own order.")
    questions: list[ConceptQuestion]


class ConceptAnswer(Strict):
    choice: int = Field(ge=0, le=9, description="0-based index into the question's choices, as shown in `order`.")
    order: int | None = Field(None, ge=0, le=MAX_SEED, description=(
        "The class set the choices were shown in (as given to GET /api/concepts); omitted = the bank's order."))


class ConceptResult(BaseModel):
    id: str
    correct: bool
    answer: int = Field(description="Index of the right choice, as shown in the request's `order`.")
    why: str | None = Field(description="Why the chosen answer is wrong; null when it is right.")
    explanation: str
    applet: str
    applet_label: str


# ---- ELECTRA, live (POST /api/objectives/electra) ----

class ElectraRequest(Strict):
    text: str = Field(min_length=1, max_length=10_000, description="The sentence (at most the context minus 2 characters).")
    positions: list[int] = Field([], max_length=512, description="Positions (0-based) the generator masks and fills "
                                 "(ELECTRA's recipe); empty: judge the text as written.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description=SEED_DOC + " (the generator's draws)")


class ElectraChar(BaseModel):
    char: str = Field(description="The character the discriminator read here.")
    original: str = Field(description="The student's character here.")
    filled: bool = Field(description="The generator masked and refilled this position.")
    replaced: bool = Field(description="The truth: the character read differs from the original.")
    p_replaced: float = Field(description="The discriminator's probability that this character was replaced.")


class ElectraResponse(BaseModel):
    chars: list[ElectraChar]
    filled: int = Field(description="Positions the generator filled (every masked one).")
    replaced: int = Field(description="Filled positions whose character differs from the original.")
    flagged: int = Field(description="Characters the discriminator calls replaced (p > 0.5).")
    correct: int = Field(description="Characters where that call matches the truth.")
    generator: str = Field(description="What filled the masked positions.")
    unknown_chars: list[UnknownChar]
