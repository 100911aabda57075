"""The applets as a class uses them (issue 10), continued: a share link restores every setting, the
model set included, and a single model set draws no picker. A second model set (a copy of the tiny
one) is served beside the default by a second server for the picker test."""
from __future__ import annotations

import json
import shutil
from urllib.parse import parse_qs, quote, urlparse

import pytest

from tests.browser.test_classroom import FINAL_READY, TEXT, query, wait_count

pytestmark = pytest.mark.browser


# ---------------------------------------------------------------- a second server with two model sets
@pytest.fixture(scope="module")
def two_sets_server(tiny_models_dir, tmp_path_factory, app_server):
    """Base URL of a server with the tiny set as default and a copy of it as set "second"."""
    from app.config import Settings
    from app.main import create_app

    second = tmp_path_factory.mktemp("sets") / "second"
    shutil.copytree(tiny_models_dir, second)
    (second / "set.json").write_text(json.dumps({"id": "second", "name": "Second set"}))
    app = create_app(Settings(models_dir=tiny_models_dir, extra_models=[second]))
    with app_server(app) as url:
        yield url


# ---------------------------------------------------------------- projector
# ---------------------------------------------------------------- share links and the model picker
def test_copy_link_restores_every_setting_including_the_model(browser, two_sets_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=two_sets_server,
                                  service_workers="block")
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    try:
        page = context.new_page()
        bodies = []
        page.on("request", lambda r: bodies.append(r.post_data) if r.url.endswith("/api/next-token") else None)
        page.goto("/generate?prompt=" + quote("the king"))
        page.wait_for_selector("#model-picker")
        assert page.locator("#model-picker option").count() == 2
        page.select_option("#model-picker", "second")
        page.wait_for_url("**model=second**")
        bodies.clear()  # what the page sent before the choice had no model
        page.wait_for_selector(FINAL_READY)
        assert page.input_value("#model-picker") == "second"
        page.fill("#g-seed", "11")
        page.focus("#g-temp")
        for _ in range(4):
            page.keyboard.press("ArrowLeft")
        page.focus("#g-topk")
        for _ in range(6):
            page.keyboard.press("ArrowRight")
        page.click("#g-step")
        wait_count(page, 1)
        page.click("#g-tab-raw")
        assert bodies and all(json.loads(b)["model"] == "second" for b in bodies if b), bodies
        page.click("#share-panel summary")
        page.check("#share-hide-top_p")
        page.check("#share-projector")
        link = page.input_value("#share-url")
        page.click("#share-copy")
        page.wait_for_function("() => document.querySelector('#share-status').textContent.length > 0")
        settings = {k: query(page)[k] for k in ("prompt", "out", "temperature", "top_k", "seed", "model", "view")}

        other = context.new_page()
        other.goto(link)
        other.wait_for_selector("#g-dists .dist-panel[data-dist='raw'] .bar-row")  # the tab the link chose
        restored = {k: v[0] for k, v in parse_qs(urlparse(other.url).query).items()}
        assert {k: restored[k] for k in settings} == settings
        assert other.input_value("#model-picker") == "second"
        assert other.input_value("#g-prompt") == "the king" and other.inner_text("#g-count") == "1"
        assert other.input_value("#g-seed") == "11" and other.input_value("#g-temp") == "0.8"
        assert other.input_value("#g-topk") == "6"
        assert other.is_hidden("[data-control='top_p']")
        assert other.evaluate("document.documentElement.classList.contains('projector')")
        assert other.get_attribute("#g-tab-raw", "aria-selected") == "true"
        # links to the other applets keep projector mode and the model set
        for href in other.eval_on_selector_all("nav a", "as => as.map(a => a.getAttribute('href'))"):
            assert "projector=1" in href and "model=second" in href
        other.goto("/?projector=1&model=second")
        other.wait_for_selector("#h-cards .model-card")
        for href in other.eval_on_selector_all(".applet-list a", "as => as.map(a => a.getAttribute('href'))"):
            assert "projector=1" in href and "model=second" in href
        # Mask-Fill on the chosen set sends it too
        sent = []
        other.on("request", lambda r: sent.append(r.post_data) if "/api/mask-fill" in r.url else None)
        other.goto("/mask-fill?model=second&pos=1&text=" + quote(TEXT))
        other.wait_for_selector("#mf-results .mask-card")
        assert sent and all(json.loads(b)["model"] == "second" for b in sent)
    finally:
        context.close()


def test_a_single_model_set_draws_no_picker(page_factory):
    page, rec = page_factory()
    page.goto("/generate")
    page.wait_for_selector(FINAL_READY)
    page.wait_for_load_state("networkidle")
    assert page.locator("#model-picker").count() == 0
    rec.assert_clean(page)
