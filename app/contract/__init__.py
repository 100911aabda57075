"""The contract between training/ and app/: what both sides agree on, in one place.

`app.contract` is the spec (app/contract/spec.py: file names, specials, families, ONNX input and
output names, cache layout, card keys, run-folder layout and event names, corpus limits, masking
schemes, the random stream, write-aside helpers) plus the load checks (app/contract/checks.py)
and a set's own example lines (app/contract/examples.py).
Both import only the standard library: app/ and training/ (and tests and benchmarks) may import
this package; it never imports torch, numpy or FastAPI.
"""
from .checks import check_classifier, check_graph, check_quiz  # noqa: F401
from .examples import EXAMPLES_FILE, examples_from_corpus, make_examples, read_examples  # noqa: F401
from .spec import *  # noqa: F401,F403
