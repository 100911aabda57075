"""Schema fuzzing: schemathesis drives every documented operation from the served OpenAPI schema
(positive and negative data, all default checks: no 5xx, every status and content type
documented, bodies match their schemas, invalid data rejected, valid data accepted, 405 with
Allow for undocumented methods).

The app runs on the tiny real models (tests/conftest.py). Its schema carries the limits of the
loaded models (app/openapi.py), so generated requests are as costly as the documented limits
allow and no more (max_new_tokens <= 1000, contexts of the tiny models).

Valid-by-schema requests that break a rule JSON Schema cannot state get the documented 422
naming the parameter; "valid data accepted" allows that 422 only where such a rule exists:
  /api/mask-fill     text needs [MASK] markers or positions (not both); positions inside the
                     text, distinct; the text after markers fits BERT's context
  /api/nsp/predict   len(a) + len(b) + 3 <= BERT's context
  /api/next-token    generated < the number of prompt characters
  /api/compare       position inside the text; the text fits BERT's context
  /api/objectives/corrupt  the text fits BERT's context
  /api/runs          corpus length and text checks; the run name is plain text on one line;
                     a preset of GET /api/runs; minutes within the preset bounds
  /api/finetune-plan exactly one of task and task_text; a shipped task's name; a task file's lines
  /api/finetunes     the same, and `task_name` is plain text on one line (the run-name rule)
  /api/sessions      a lesson's session takes no items of its own (nsp_count, concepts, labels, lines)
  /api/lessons, /api/lessons/{id}, /api/lesson-preview  a lesson file's own rules: hidden positions
                     inside their sentence and never a space, distinct labels, count or items (with a
                     seed) for NSP, one label stage, the NSP pairs and questions of the banks

The training-run API is fuzzed too, with the instructor's bearer header on every request (a data
folder of the test's own; test presets on, one trainer thread at the lowest priority). A valid
start trains for real until the fixture ends; further starts answer the documented 409.
"""
from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.config import SchemathesisConfig  # noqa: E402

from app.config import Settings  # noqa: E402
from app.main import create_app  # noqa: E402

CROSS_FIELD_RULES = ["/api/mask-fill", "/api/nsp/predict", "/api/next-token", "/api/compare", "/api/objectives/corrupt",
                     "/api/runs", "/api/finetune-plan", "/api/finetunes", "/api/sessions", "/api/lessons",
                     "/api/lessons/{id}", "/api/lesson-preview"]
TOKEN = "fuzzing-instructor-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
POSITIVE_OK = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]  # schemathesis' default


def fuzz_config() -> SchemathesisConfig:
    return SchemathesisConfig.from_dict({
        "seed": 20240601,  # reproducible in CI; change it locally to explore further
        # Invalid bodies larger than --max-body-bytes are refused by size (413) before they are read.
        "checks": {"negative_data_rejection": {"expected-statuses": [
            "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]}},
        "operations": [{"include-path": path, "checks": {
            "positive_data_acceptance": {"expected-statuses": [*POSITIVE_OK, "422"]}}}
            for path in CROSS_FIELD_RULES],
    })


@pytest.fixture(scope="module")
def fuzzed_app(tiny_models_dir, tmp_path_factory):
    # No admission cap: the fuzzer sends one request at a time, a 503 would only hide bugs.
    app = create_app(Settings(models_dir=tiny_models_dir, max_concurrent_requests=0,
                              data_dir=tmp_path_factory.mktemp("fuzz-data"), instructor_token=TOKEN,
                              run_test_presets=True, run_threads=1, run_nice=19))
    with TestClient(app):  # runs the lifespan: models loaded before the schema is read
        yield app


@pytest.fixture(scope="module")
def api_schema(fuzzed_app):
    return schemathesis.openapi.from_asgi("/openapi.json", fuzzed_app, config=fuzz_config())


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@pytest.mark.slow
def test_every_operation_conforms_to_the_schema(case, fuzzed_app):
    fuzzed_app.state.auth_throttle = None  # every request is the instructor's: no guess budget spent
    response = case.call_and_validate(headers=AUTH)
    if response.status_code >= 400 and "json" in response.headers.get("content-type", ""):
        body = response.json()
        assert set(body) == {"detail", "parameter"}, body
        assert "Traceback" not in body["detail"] and "/app/" not in body["detail"]


def test_the_fuzzed_schema_has_the_model_limits_and_every_status(fuzzed_app, tiny_models_dir):
    """What the fuzzer relies on: model limits and every status (and SSE) are in the schema."""
    spec = TestClient(fuzzed_app).get("/openapi.json").json()
    models = fuzzed_app.state.registry.default
    props = spec["components"]["schemas"]["NextTokenRequest"]["properties"]
    assert props["top_k"]["maximum"] == models.vocab.size
    corrupt = spec["components"]["schemas"]["CorruptRequest"]["properties"]
    assert corrupt["text"]["maxLength"] == models.bert.context - 2
    assert spec["components"]["schemas"]["NextTokenRequest"]["additionalProperties"] is False
    index = next(p for p in spec["paths"]["/api/nsp/quiz"]["get"]["parameters"] if p["name"] == "index")
    assert index["schema"]["anyOf"][0]["maximum"] == len(models.quiz) - 1
    for method in ("get", "post"):
        stream = spec["paths"]["/api/generate/stream"][method]["responses"]
        assert "text/event-stream" in stream["200"]["content"]
        assert {"422", "503"} <= set(stream)
    runs = spec["paths"]
    assert {"401", "403", "409", "422", "429", "507"} <= set(runs["/api/runs"]["post"]["responses"])
    assert {"404", "409"} <= set(runs["/api/runs/{run_id}"]["delete"]["responses"])
    assert "text/event-stream" in runs["/api/runs/{run_id}/events"]["get"]["responses"]["200"]["content"]
    for path in ("/api/mask-fill", "/api/mask-fill/corrupt", "/api/next-token", "/api/generate",
                 "/api/generate/stream", "/api/nsp/predict", "/api/nsp/quiz/{item_id}/answer"):
        assert {"400", "413", "422", "503"} <= set(spec["paths"][path]["post"]["responses"]), path
