"""The model families, declared once: what each is, what its graph takes and gives, and where its
code lives on each side. Standard library only (the contract's rule).

A family is one spec here plus one file per side, named by the spec:

    training/families/<name>.py  its entry: model, objective, export, evaluation, live view (the trainer's side)
    app/tasks/<name>.py         the serving task: one class with a smoke_test() the registry runs at load
    static/families/<name>.js   its page pieces (the Train page's live view and result rows)

The registry, the contract's checks, package and the inspection export, the Train page, the model
picker, the home cards, the device engine (static/lib/engine.js routes each API path to the family
that declares it), the attention and compare lessons (for_page), the class activities (which family
answers one) and the lab read these specs and never test a name; the browser learns them from the
server (GET /api/families, and `families` in GET /api/models). Adding a family = a spec below (the
registration line the server and the trainer read), its three files, and its import line in
static/families/index.js (the browser's list: a static host cannot list a folder).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable


def cache_names(n_layer: int, prefix: str = "past") -> list[str]:
    """gpt.onnx's cache inputs (prefix past) or outputs (present), layer by layer, key then value."""
    return [f"{prefix}_{kind}_{i}" for i in range(n_layer) for kind in ("key", "value")]


@dataclass(frozen=True)
class FamilySpec:
    name: str  # file names (<name>.onnx, <name>.card.json), CLI and API values
    label: str  # what a page calls it
    objective: str  # what it learns, in words for a 16-year-old
    attention: str  # "causal", "bidirectional", "prefix" or "permuted": which positions each position may look at
    inputs: Callable[[int], list[str]]  # ONNX input names, by the model's n_layer
    outputs: Callable[[int], list[str]]  # ONNX output names
    task: str  # "module:Class" of its serving task (app/tasks/<name>.py)
    trainer: str  # "module:FAMILY" of its trainer's entry (training/families/<name>.py): serving never imports it
    optional: bool = False  # a set is whole without it
    trainable: bool = True  # the Train page offers it (python -m training live --families)
    uses_nsp: bool = False  # its set carries the NSP quiz bank
    pages: tuple[str, ...] = ()  # the pages that need it
    activities: tuple[str, ...] = ()  # class activities that need it
    live_view: str = ""  # what the Train page shows of it while it trains
    metric: str = ""  # its held-out figure, in words
    card_label: str = ""  # the home page's card title (default: label)
    last_dims: dict = field(default_factory=dict)  # output -> its last dimension: "vocab", a number, or f(vocab) (load check)
    cached: bool = False  # its graph carries a key/value cache per layer (checked against the card's shapes)
    sees: str = ""  # its attention in a few words for a student (the home page's card: "sees only the past")

    def io(self, n_layer: int) -> tuple[list[str], list[str]]:
        return self.inputs(n_layer), self.outputs(n_layer)

    def public(self) -> dict:
        """What the browser learns (GET /api/families): everything but the code references."""
        out = {k: v for k, v in asdict(self).items() if k not in ("inputs", "outputs", "task", "trainer", "last_dims")}
        out["pages"], out["activities"] = list(self.pages), list(self.activities)
        out["script"] = f"/static/families/{self.name}.js"
        out["card_label"] = self.card_label or self.label
        return out


_ENCODER_IN = lambda n_layer: ["input_ids", "token_type_ids"]  # noqa: E731
T5_SENTINELS = 32  # T5's own specials, ids after the shared vocabulary's (training/t5.py)

SPECS: dict[str, FamilySpec] = {s.name: s for s in (  # the registration lines, one per family
    FamilySpec("gpt", "GPT", "guess the next character from the ones before it", "causal",
               inputs=lambda n: ["input_ids", "past_length", *cache_names(n)],
               outputs=lambda n: ["logits", *cache_names(n, "present")], task="app.tasks.gpt:GPT",
               trainer="training.families.gpt:FAMILY", sees="sees only the past",
               last_dims={"logits": "vocab"}, cached=True,
               pages=("generate", "compare", "attention", "objectives"),
               live_view="continues a prompt, one character at a time",
               metric="nats per character (lower is better)"),
    FamilySpec("bert", "BERT", "fill in hidden characters using both sides, and tell whether B follows A",
               "bidirectional", inputs=_ENCODER_IN, outputs=lambda n: ["mlm_logits", "nsp_logits"],
               task="app.tasks.bert:BERT", trainer="training.families.bert:FAMILY", uses_nsp=True, sees="sees both sides",
               last_dims={"mlm_logits": "vocab", "nsp_logits": 2},
               pages=("mask-fill", "nsp", "compare", "attention", "objectives", "finetune"),
               activities=("nsp", "fill"), live_view="fills the hidden characters of a test line",
               metric="hidden characters guessed right (top-1)"),
    FamilySpec("electra", "ELECTRA", "spot which characters were swapped for another one", "bidirectional",
               inputs=_ENCODER_IN, outputs=lambda n: ["replaced_logits"], task="app.tasks.electra:ELECTRA",
               trainer="training.families.electra:FAMILY", sees="sees both sides",
               optional=True, pages=("objectives",), card_label="ELECTRA discriminator",
               live_view="marks the characters it thinks were swapped in a test line",
               metric="swapped characters caught"),
    FamilySpec("t5", "T5", "write back the short spans hidden in a line, reading the rest of it from both sides",
               "prefix", inputs=lambda n: ["input_ids", "prefix_mask"], outputs=lambda n: ["logits"],
               task="app.tasks.t5:T5", trainer="training.families.t5:FAMILY", optional=True, pages=("spans", "attention"),
               sees="the given text sees both sides, the spans it writes only what came before",
               last_dims={"logits": lambda vocab: vocab + T5_SENTINELS},
               live_view="writes back the spans hidden in a test line", metric="hidden characters written back right"),
    FamilySpec("plm", "PLM", "guess characters in a random order, each from the ones guessed before it on both sides",
               "permuted", inputs=lambda n: ["input_ids", "position_ids", "ranks"], outputs=lambda n: ["logits"],
               task="app.tasks.plm:PLM", trainer="training.families.plm:FAMILY", optional=True, pages=("attention",),
               card_label="PLM (XLNet-style)", last_dims={"logits": "vocab"},
               sees="each character sees those before it in a random order",
               live_view="guesses the last characters of a random order of a test line",
               metric="characters guessed right, last 15 % of a random order"),
)}

FAMILIES = tuple(SPECS)  # every pretrained family a set may hold, by file name


def for_page(page: str) -> list[FamilySpec]:
    """The families a page (or a lesson's API) shows, in the specs' order: e.g. every family whose
    spec lists "attention" gets its grid on the attention page and its entry in POST /api/attention."""
    return [s for s in SPECS.values() if page in s.pages]
