"""Issue 35: the teacher turns on "models on the phones" for one class session (the server's
--models-on-phones stays off): a phone that joined downloads nothing from web/ while the server
answers, and the device copies (the engine, GPT, BERT) once the teacher presses the button."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.browser.test_class_session import teacher_at
from tests.browser.test_engine import LOAD_MS

pytestmark = pytest.mark.browser
TOKEN = "phones-browser-teacher-token"
SHOTS = Path("/tmp/static-site-shots")


def web_files(rec) -> list[str]:
    return [u for u in rec.requests if "/web/" in u and u.endswith(".gz")]


def test_the_teacher_turns_on_models_on_the_phones_for_the_session(browser, class_app, make_page, tmp_path):
    SHOTS.mkdir(exist_ok=True)
    with class_app(TOKEN, tmp_path / "data") as url:
        r = httpx.post(f"{url}/api/sessions", headers={"Authorization": f"Bearer {TOKEN}"}, json={"nsp_count": 1})
        assert r.status_code == 201, r.text
        code = r.json()["code"]
        teacher_ctx, teacher, teacher_rec = make_page(browser, url, 1280, 720)
        phone_ctx, phone, phone_rec = make_page(browser, url, 390, 844)
        try:
            teacher_at(teacher, code, TOKEN)
            teacher.wait_for_function("() => document.querySelector('#c-phones').textContent.endsWith('off')")
            phone.goto(f"/join?code={code}")
            phone.fill("#j-name", "Ana")
            phone.click("#j-go")
            phone.wait_for_selector("#j-class:not([hidden])")
            phone.wait_for_timeout(4000)  # past the 3 s after which a page with --models-on-phones would start
            assert web_files(phone_rec) == []  # off: the phone stays off the Wi-Fi while the server answers
            teacher.click("#c-phones")
            teacher.wait_for_function("() => document.querySelector('#c-phones').getAttribute('aria-pressed') === 'true'")
            assert teacher.inner_text("#c-phones") == "Models on the phones: on"
            phone.wait_for_function("() => (document.querySelector('.engine-status')?.textContent || '').includes('on your device now')",
                                    timeout=LOAD_MS)
            fetched = web_files(phone_rec)
            for name in ("/ort-wasm", "/gpt.", "/bert."):
                assert [u for u in fetched if name in u], (name, fetched)
            assert not [u for u in fetched if "_attn." in u or "electra." in u]  # the applets' models only
            phone.screenshot(path=str(SHOTS / "class-phone-models-390.png"))
            teacher.locator("#c-phones").scroll_into_view_if_needed()
            teacher.screenshot(path=str(SHOTS / "class-teacher-phones-1280.png"))
            teacher_rec.assert_clean(teacher)
            phone_rec.assert_clean(phone)
        finally:
            phone_ctx.close()
            teacher_ctx.close()
