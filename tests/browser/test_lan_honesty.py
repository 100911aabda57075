"""Issue 44 must 4, on a plain-http LAN address (a teacher's laptop: http://playground.test here, not
localhost, so not a secure context: no Cache API, no service worker): the page says honestly that the
models are on the device for this visit only, and the server's headers give no console error there
(Cross-Origin-Opener-Policy is sent only where the browser honours it)."""
from __future__ import annotations

import pytest

from app.config import Settings
from app.main import create_app
from tests.browser.conftest import close_contexts

pytestmark = pytest.mark.browser
LAN = "http://playground.test"


def test_on_a_plain_http_lan_address_nothing_is_said_to_be_kept_and_no_header_error(browser, app_server, tiny_models_dir,
                                                                                    tmp_path, screenshots):
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path / "data", instructor_token="t" * 32,
                        models_on_phones=True, allowed_hosts=["*"])
    with app_server(create_app(settings)) as base:
        context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=LAN, service_workers="block")
        try:
            def forward(route):  # the LAN name's requests reach the server with their own Host header
                headers = {**route.request.headers, "host": "playground.test"}
                route.fulfill(response=route.fetch(url=base + route.request.url[len(LAN):], headers=headers))

            context.route(LAN + "/**", forward)
            page = context.new_page()
            console = []
            page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
            page.goto("/generate?prompt=the%20king%20&seed=5")
            assert page.evaluate("window.isSecureContext") is False
            page.wait_for_function("() => /visit only/.test(document.querySelector('.engine-status')?.textContent || '')",
                                   timeout=120000)
            said = page.inner_text(".engine-status")
            assert "kept for your next visit" not in said and "downloads them again" in said, said
            page.screenshot(path=str(screenshots / "lan-not-kept-390.png"))
            assert not console, console  # no "Cross-Origin-Opener-Policy header has been ignored"
        finally:
            close_contexts([context])
