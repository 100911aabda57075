"""Reliability of training runs and streams (issue 17): a token guesser cannot lock the class out,
a run's state follows facts (a full disk, a killed server, a stopped server), nothing is signalled
that is not proven to be the trainer, streams end cleanly, logins are revocable, names are plain."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from run_servers import AUTH, TOKEN, fake_trainer, server_process, write_run


def settings(models_dir, data_dir, **kw) -> Settings:
    return Settings(models_dir=models_dir, data_dir=data_dir, instructor_token=TOKEN, run_test_presets=True, **kw)


def wait_status(get, statuses, timeout=60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        run = get()
        if run["status"] in statuses or time.monotonic() > deadline:
            return run
        time.sleep(0.2)


# ---- 1. a token guesser ------------------------------------------------------------------------

@pytest.mark.slow
def test_a_token_guesser_neither_holds_model_slots_nor_guesses_faster_with_more_connections(tiny_models_dir, tmp_path):
    with server_process(tiny_models_dir, tmp_path / "data", tmp_path / "log", "--max-concurrent-requests", "4") as (url, _):
        stop = threading.Event()
        answers: list[tuple[int, float]] = []

        def guesser(i: int) -> None:
            with httpx.Client(base_url=url, timeout=30) as c:
                n = 0
                while not stop.is_set():
                    t0 = time.monotonic()
                    r = c.post("/api/runs", json={"preset": "tiny"}, headers={"Authorization": f"Bearer guess-{i}-{n}"})
                    answers.append((r.status_code, time.monotonic() - t0))
                    n += 1

        t0 = time.monotonic()
        with ThreadPoolExecutor(40) as pool:
            for i in range(40):
                pool.submit(guesser, i)
            time.sleep(1)
            with httpx.Client(base_url=url, timeout=30) as student:
                served = [student.post("/api/mask-fill", json={"text": "Line 3 [MASK]peaks"}).status_code
                          for _ in range(15)]
            stop.set()
        elapsed = time.monotonic() - t0
        assert served == [200] * 15, served  # the student is served throughout the flood
        statuses = [s for s, _ in answers]
        assert set(statuses) <= {403, 429} and len(statuses) > 60
        # 10 at once, then 1 per 6 s, whatever the number of connections
        assert statuses.count(403) <= 10 + elapsed / 6 + 1, (statuses.count(403), elapsed)


# ---- 2. a full disk ----------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


@pytest.mark.slow
def test_a_full_disk_fails_the_run_with_the_reason_and_leaves_nothing_half_written(tiny_models_dir, small_disk):
    data = small_disk / "data"
    with TestClient(create_app(settings(tiny_models_dir, data))) as c:
        run_id = c.post("/api/runs", json={"preset": "tiny-slow", "minutes": 5, "families": ["gpt"]},
                        headers=AUTH).json()["id"]
        wait_status(lambda: c.get(f"/api/runs/{run_id}").json(), ("running",))
        deadline = time.monotonic() + 60
        while not c.get(f"/api/runs/{run_id}").json()["progress"] and time.monotonic() < deadline:
            time.sleep(0.2)
        filler = fill(small_disk)
        run = wait_status(lambda: c.get(f"/api/runs/{run_id}").json(), ("failed", "cancelled", "interrupted", "finished"))
        assert run["status"] == "failed" and run["reason"].startswith("disk full"), run
        assert c.get("/api/runs").json()["active"] is None
        health = c.get("/api/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert "disk full" in health.json()["storage"]
        with c.stream("GET", f"/api/runs/{run_id}/events") as stream:  # ends: the run has ended
            assert "failed" in "".join(stream.iter_text())
        assert not [p.name for p in data.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".tmp-")]
        # starting another with the disk full: a clean 507, no folder left behind
        before = sorted(p.name for p in (data / "runs").iterdir())
        r = c.post("/api/runs", json={"preset": "tiny"}, headers=AUTH)
        assert r.status_code == 507 and "disk full" in r.json()["detail"]
        assert sorted(p.name for p in (data / "runs").iterdir()) == before
        filler.unlink()
        c.app.state.runs.scan()  # the state kept in memory is stored once there is room
    with TestClient(create_app(settings(tiny_models_dir, data))) as c:  # and survives a restart
        run = c.get(f"/api/runs/{run_id}").json()
        assert run["status"] == "failed" and run["reason"].startswith("disk full")


# ---- 3. a stale PID ----------------------------------------------------------------------------

def test_a_run_left_running_by_a_killed_server_is_settled_and_its_old_pid_never_signalled(tiny_models_dir, tmp_path):
    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:
        # another server, killed -9 mid-run, left this behind; its trainer's PID now belongs to a stranger
        stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
        run_dir = write_run(tmp_path, "r-20260101-000000-dead", "running", [{"event": "progress", "t": 1}],
                            pid=stranger.pid)
        (run_dir / "trainer.lock").write_text(json.dumps({"pid": stranger.pid, "start": 1}))
        try:
            r = c.delete("/api/runs/r-20260101-000000-dead", headers=AUTH)
            assert r.status_code == 200 and r.json()["status"] == "interrupted", r.json()
            assert stranger.poll() is None  # not signalled
            assert c.get("/api/runs").json()["active"] is None
            assert "server stopped" in c.get("/api/runs/r-20260101-000000-dead").json()["reason"]
        finally:
            stranger.kill()
            stranger.wait()


def test_a_live_trainer_of_another_server_is_proven_by_its_lock(tiny_models_dir, tmp_path):
    from app.jobs.liveness import trainer_alive, trainer_pid

    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:
        run_dir = write_run(tmp_path, "r-20260101-000000-11fe", "running", [{"event": "progress", "t": 1}])
        trainer = fake_trainer(run_dir)
        try:
            assert trainer_alive(run_dir) and trainer_pid(run_dir) == trainer.pid
            c.app.state.runs.scan()
            assert c.get("/api/runs").json()["active"] == "r-20260101-000000-11fe"  # alive: left running
            r = c.post("/api/runs", json={"preset": "tiny"}, headers=AUTH)
            assert r.status_code == 409  # nothing trains beside it
            assert c.delete("/api/runs/r-20260101-000000-11fe", headers=AUTH).json()["status"] == "cancelling"
            assert trainer.wait(timeout=10) == -signal.SIGTERM  # the proven trainer is the one signalled
            c.app.state.runs.scan()
            run = c.get("/api/runs/r-20260101-000000-11fe").json()
            assert run["status"] == "cancelled" and not trainer_alive(run_dir)
        finally:
            trainer.kill()
            trainer.wait()


# ---- 4. shutdown with a browser watching -------------------------------------------------------

@pytest.mark.slow
def test_sigint_with_an_open_stream_stops_promptly_and_the_next_start_settles_the_run(tiny_models_dir, tmp_path):
    data, log = tmp_path / "data", tmp_path / "log"
    with server_process(tiny_models_dir, data, log) as (url, server):
        run_id = httpx.post(f"{url}/api/runs", json={"preset": "tiny-slow", "minutes": 5, "families": ["gpt"]},
                            headers=AUTH, timeout=60).json()["id"]
        run = wait_status(lambda: httpx.get(f"{url}/api/runs/{run_id}").json(), ("running",))
        deadline = time.monotonic() + 60
        while not run["progress"] and time.monotonic() < deadline:
            run = httpx.get(f"{url}/api/runs/{run_id}").json()
            time.sleep(0.2)
        trainer = json.loads((data / "runs" / run_id / "run.json").read_text())["pid"]
        ended = threading.Event()

        def watch() -> None:
            try:
                with httpx.stream("GET", f"{url}/api/runs/{run_id}/events", timeout=60) as s:
                    for _ in s.iter_bytes():
                        pass
            except httpx.HTTPError:
                pass
            ended.set()

        threading.Thread(target=watch, daemon=True).start()
        time.sleep(1)
        server.send_signal(signal.SIGINT)
        server.wait(timeout=15)  # not held open by the stream
        assert ended.wait(5)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists(f"/proc/{trainer}"):
            time.sleep(0.1)
        assert not os.path.exists(f"/proc/{trainer}")  # the trainer stopped with it
    with server_process(tiny_models_dir, data, log) as (url, _):
        run = httpx.get(f"{url}/api/runs/{run_id}").json()
        assert run["status"] == "interrupted" and "server stopped" in run["reason"]
        assert httpx.get(f"{url}/api/runs").json()["active"] is None


# ---- 5. a lone surrogate, orphan folders --------------------------------------------------------

def test_a_lone_surrogate_in_the_corpus_is_refused_and_nothing_is_written(tiny_models_dir, tmp_path):
    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:
        body = '{"preset": "tiny", "corpus": "' + "A line of text.\\n" * 200 + '\\ud800"}'
        r = c.post("/api/runs", content=body, headers={**AUTH, "Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["parameter"] == "corpus", r.json()
        assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def test_orphan_run_folders_are_cleaned_at_start_up(tiny_models_dir, tmp_path):
    orphan = tmp_path / "runs" / "r-20260101-000000-0f0f"
    orphan.mkdir(parents=True)
    (orphan / "corpus.txt").write_text("")
    kept = write_run(tmp_path, "r-20260101-000000-abcd", "finished")
    (kept / ".run.json.123.456.tmp").write_text("{")
    (tmp_path / ".deleted-r-20260101-000000-beef").mkdir()
    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:
        assert [r["id"] for r in c.get("/api/runs").json()["runs"]] == ["r-20260101-000000-abcd"]
    assert not orphan.exists() and not (tmp_path / ".deleted-r-20260101-000000-beef").exists()
    assert not list(kept.glob("*.tmp"))


# ---- 6. clients leaving streams ----------------------------------------------------------------

@pytest.mark.slow
def test_clients_leaving_a_stream_early_log_no_traceback(tiny_models_dir, tmp_path):
    data, log = tmp_path / "data", tmp_path / "log"
    with server_process(tiny_models_dir, data, log) as (url, _):
        events = [{"event": "progress", "t": i, "family": "gpt", "step": i, "loss": 3.0} for i in range(2000)]
        run_dir = write_run(data, "r-20260101-000000-1234", "running", events)
        trainer = fake_trainer(run_dir)
        try:
            for _ in range(40):
                with httpx.stream("GET", f"{url}/api/runs/r-20260101-000000-1234/events", timeout=30) as s:
                    next(s.iter_bytes())  # then the client goes away
            time.sleep(1.5)
            assert httpx.get(f"{url}/api/health").status_code == 200
        finally:
            trainer.kill()
            trainer.wait()
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "Exception in ASGI" not in text, text[-3000:]


# ---- 10. logins ---------------------------------------------------------------------------------

def test_each_login_has_its_own_revocable_session_and_logout_refuses_other_sites(tiny_models_dir, tmp_path):
    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:
        def login() -> str:
            r = c.post("/login", data={"token": TOKEN}, follow_redirects=False)
            assert r.status_code == 303
            c.cookies.clear()
            return r.cookies["pp_instructor"]

        def is_instructor(session) -> bool:
            c.cookies.clear()
            return c.get("/api/runs", cookies={"pp_instructor": session}).json()["instructor"]

        first, second = login(), login()
        assert first != second and TOKEN not in first and is_instructor(first) and is_instructor(second)
        cross = c.post("/logout", cookies={"pp_instructor": first}, follow_redirects=False,
                       headers={"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"})
        assert cross.status_code == 403 and is_instructor(first)
        c.cookies.clear()
        own = c.post("/logout", cookies={"pp_instructor": first}, follow_redirects=False,
                     headers={"Sec-Fetch-Site": "same-origin"})
        assert own.status_code == 303 and not is_instructor(first) and is_instructor(second)
        c.cookies.clear()
        r = c.delete("/api/runs/r-20260101-000000-abcd", cookies={"pp_instructor": first},
                     headers={"Sec-Fetch-Site": "same-origin"})
        assert r.status_code == 403  # a revoked session is refused
    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:  # shared through the data folder
        assert c.get("/api/runs", cookies={"pp_instructor": second}).json()["instructor"]


# ---- 11. run names -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["Our\x00poems", "Our \u202epoems", "a\u2066b", "zero\u200bwidth", "two\nlines",
                                  "   ", "\u2029"])
def test_run_names_must_be_plain_text_on_one_line(tiny_models_dir, tmp_path, name):
    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:
        r = c.post("/api/runs", json={"preset": "tiny", "name": name}, headers=AUTH)
        assert r.status_code == 422 and r.json()["parameter"] == "name", r.json()
        assert not (tmp_path / "runs").exists()
