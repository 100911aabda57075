"""Sharing with a class (issue 18): a link or QR code made in projector mode opens phones in the normal
layout unless projector mode is asked for; on localhost no QR code of an address no phone can open; the
model picker does not reload on every arrow key; the home page links the Train and Fine-tune pages."""
from __future__ import annotations

import json
import shutil
from urllib.parse import parse_qs, urlparse

import pytest


pytestmark = pytest.mark.browser


def params(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def test_a_link_made_in_projector_mode_carries_projector_only_when_asked(lan_page_factory):
    page, errors = lan_page_factory()
    page.goto("/attention?projector=1&text=the+king")
    page.wait_for_selector("#share-body", state="attached")
    assert page.evaluate("document.documentElement.classList.contains('projector')")
    page.click("#share-quick")  # the projector's way to open the panel
    page.wait_for_selector("#share-qr img.qr")
    assert not page.is_checked("#share-projector")
    link = page.input_value("#share-url")
    assert "projector" not in params(link) and params(link)["text"] == "the king"
    # the QR code is this very link: phones that scan it get the normal layout
    assert params(page.get_attribute("#share-qr img.qr", "src"))["text"] == link
    page.check("#share-projector")  # asked for: then, and only then, the link has it
    assert params(page.input_value("#share-url"))["projector"] == "1"
    page.uncheck("#share-projector")
    assert "projector" not in params(page.input_value("#share-url"))
    assert not errors


def test_on_localhost_no_qr_code_and_the_way_to_reach_the_class(page_factory):
    page, rec = page_factory()
    page.goto("/generate?projector=1")
    page.wait_for_selector("#share-body", state="attached")
    page.click("#share-quick")
    note = page.wait_for_selector("#share-qr #share-no-qr")
    assert page.locator("#share-qr .qr").count() == 0
    assert "--host 0.0.0.0" in note.inner_text() and "In a classroom on a LAN" in note.inner_text()
    assert not page.is_checked("#share-projector") and "projector" not in params(page.input_value("#share-url"))
    rec.assert_clean(page)


def test_home_links_the_train_and_finetune_pages(page_factory):
    page, rec = page_factory(390, 844)
    page.goto("/")
    hrefs = page.eval_on_selector_all(".applet-list .card a", "as => as.map(a => new URL(a.href).pathname)")
    assert "/train" in hrefs and "/finetune" in hrefs
    rec.assert_clean(page)


@pytest.fixture(scope="module")
def two_sets(tiny_models_dir, tmp_path_factory, app_server):
    from app.config import Settings
    from app.main import create_app

    second = tmp_path_factory.mktemp("picker") / "second"
    shutil.copytree(tiny_models_dir, second)
    (second / "set.json").write_text(json.dumps({"id": "second", "name": "Second set"}))
    with app_server(create_app(Settings(models_dir=tiny_models_dir, extra_models=[second]))) as url:
        yield url


def test_model_picker_keeps_focus_on_arrow_keys_and_loads_on_enter(browser, two_sets):
    context = browser.new_context(base_url=two_sets, service_workers="block")
    try:
        page = context.new_page()
        page.goto("/generate")
        page.wait_for_selector("#model-picker")
        loads = []
        page.on("framenavigated", lambda frame: loads.append(frame.url) if frame == page.main_frame else None)
        page.focus("#model-picker")
        page.keyboard.press("ArrowDown")
        assert page.input_value("#model-picker") == "second"
        page.wait_for_timeout(500)  # a reload would have begun by now
        assert not loads and "model" not in params(page.url)
        assert page.evaluate("document.activeElement.id") == "model-picker"
        page.keyboard.press("ArrowUp")
        page.keyboard.press("ArrowDown")
        assert not loads
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert params(page.url)["model"] == "second"
        page.wait_for_selector("#model-picker")
        assert page.input_value("#model-picker") == "second"
        # a pick with the mouse (or a tap) loads at once
        default = page.evaluate("fetch('/api/models').then(r => r.json()).then(d => d.default)")
        with page.expect_navigation():
            page.select_option("#model-picker", default)
        assert "model" not in params(page.url)
    finally:
        context.close()
