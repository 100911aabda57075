"""Issue 35: "models on the phones" per class session. The server's --models-on-phones is only the
default of a new session; the teacher turns it on or off for one session (PUT .../state), the phones
of that session read it from the session's state (and lib/compute.js then downloads the device copy),
another session keeps its own."""
from __future__ import annotations

from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.app.class_kit import browser, go, join, start
from tests.conftest import SHIPPED_MODELS

TOKEN = "phones-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def teacher_of(tmp_path, server_flag: bool):
    app = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path / "data", instructor_token=TOKEN,
                              models_on_phones=server_flag))
    with TestClient(app):
        yield app, browser(app, "127.0.0.1", headers=AUTH)


@pytest.mark.parametrize("server_flag", [False, True])
def test_the_server_flag_is_the_default_and_the_teacher_turns_it_per_session(tmp_path, server_flag):
    with teacher_of(tmp_path, server_flag) as (app, teacher):
        code, other = start(teacher), start(teacher)
        phone, status = join(app, code, "Ana")
        assert status == 200
        assert phone.get(f"/api/sessions/{code}").json()["models_on_phones"] is server_flag
        before = phone.get(f"/api/sessions/{code}").json()["version"]
        assert go(teacher, code, models_on_phones=not server_flag)["models_on_phones"] is (not server_flag)
        seen = phone.get(f"/api/sessions/{code}").json()
        assert seen["models_on_phones"] is (not server_flag) and seen["version"] > before  # the phones' watch sees it
        assert teacher.get(f"/api/sessions/{other}").json()["models_on_phones"] is server_flag  # per session
        assert app.state.settings.models_on_phones is server_flag  # the server's default is left as it was


def test_a_session_may_start_with_its_own_choice_and_bad_values_are_named(tmp_path):
    with teacher_of(tmp_path, False) as (app, teacher):
        code = start(teacher, models_on_phones=True)
        assert teacher.get(f"/api/sessions/{code}").json()["models_on_phones"] is True
        r = teacher.put(f"/api/sessions/{code}/state", json={"models_on_phones": "sometimes"})
        assert r.status_code == 422 and "models_on_phones" in r.text
        r = browser(app).put(f"/api/sessions/{code}/state", json={"models_on_phones": False})  # not the teacher
        assert r.status_code in (401, 403)
        assert teacher.get(f"/api/sessions/{code}").json()["models_on_phones"] is True
