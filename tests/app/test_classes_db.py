"""Class sessions' storage, with real server processes and a real database: a restart keeps a
session and its answers, two server processes share one database (SQLite file, and PostgreSQL
started from Debian's binaries by the fixture below), an older schema is upgraded in place and a
newer one refused, and `python -m app` prints the address students can reach."""
from __future__ import annotations

import glob
import itertools
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from app.classes import db as dbmod
from app.classes.db import Database, SchemaTooNew, database_url
from tests.app.run_servers import free_port
from tests.conftest import REPO, SHIPPED_MODELS

TOKEN = "class-db-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PIDS: dict[str, int] = {}  # base URL -> the `python -m app` process serving it




@contextmanager
def server(data_dir: Path, *extra: str):
    """`python -m app` as a real subprocess on a free loopback port; yields its base URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PLAYGROUND_ALLOWED_HOSTS", None)
    proc = subprocess.Popen([sys.executable, "-m", "app", "--port", str(port), "--data-dir", str(data_dir),
                             "--models-dir", str(SHIPPED_MODELS), "--instructor-token", TOKEN, "--log-level",
                             "warning", *extra], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    url = f"http://127.0.0.1:{port}"
    PIDS[url] = proc.pid
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited: {proc.stdout.read()}")
            try:
                if httpx.get(url + "/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def start_session(url: str, **body) -> str:
    r = httpx.post(url + "/api/sessions", json=body, headers=AUTH)
    assert r.status_code == 201, r.text
    return r.json()["code"]


_addresses = itertools.count(2)


def join(url: str, code: str, nickname: str) -> httpx.Client:
    """A phone on its own loopback address (the budget of new nicknames is per address)."""
    n = next(_addresses)
    c = httpx.Client(base_url=url, timeout=30,
                     transport=httpx.HTTPTransport(local_address=f"127.1.{n >> 8 & 255}.{n & 255}"))
    r = c.post(f"/api/sessions/{code}/join", json={"nickname": nickname})
    assert r.status_code == 200, r.text
    return c


def pace(url: str, code: str, **state) -> dict:
    r = httpx.put(f"{url}/api/sessions/{code}/state", json=state, headers=AUTH)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_a_restart_keeps_the_session_and_its_answers(tmp_path):
    with server(tmp_path) as url:
        code = start_session(url, nsp_count=2)
        ana = join(url, code, "Ana")
        item = pace(url, code, page="nsp")["item"]
        assert ana.post(f"/api/sessions/{code}/answers",
                        json={"activity": "nsp", "item": item, "answer": "IsNext"}).status_code == 201
        cookies = dict(ana.cookies)
    with server(tmp_path) as url:  # the same data folder: the same SQLite file
        back = httpx.Client(base_url=url, cookies=cookies)
        state = back.get(f"/api/sessions/{code}").json()
        assert state["me"]["nickname"] == "Ana" and state["item"] == item
        assert state["current"]["your_answer"] == "IsNext"
        r = back.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item, "answer": "NotNext"})
        assert r.status_code == 409  # still answered once
        pace(url, code, revealed=True)
        counts = httpx.get(f"{url}/api/sessions/{code}/results", headers=AUTH).json()["items"][0]["counts"]
        assert counts == {"IsNext": 1, "NotNext": 0}


def two_workers_share_one_database(data_dir: Path, *extra: str) -> None:
    """Two server processes, one database: a class joined on one is paced and counted on the other,
    and 30 students answering through both at once (each twice) are counted exactly once each."""
    with server(data_dir, *extra) as one, server(data_dir, *extra) as two:
        code = start_session(one, nsp_count=1)
        students = [join(one if k % 2 else two, code, f"S{k}") for k in range(30)]
        item = pace(two, code, page="nsp")["item"]
        with httpx.Client() as c:  # the dashboard on worker one sees worker two's pacing
            assert c.get(f"{one}/api/sessions/{code}", headers=AUTH).json()["joined"] == 30
        statuses: list[int] = []
        barrier = threading.Barrier(60)

        def send(k: int, via: str) -> None:
            s = students[k]
            barrier.wait()
            r = httpx.post(f"{via}/api/sessions/{code}/answers", cookies=dict(s.cookies), timeout=60,
                           json={"activity": "nsp", "item": item, "answer": "IsNext" if k % 3 else "NotNext"})
            statuses.append(r.status_code)

        threads = [threading.Thread(target=send, args=(k, via)) for k in range(30) for via in (one, two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(statuses) == [201] * 30 + [409] * 30
        pace(one, code, revealed=True)
        for url in (one, two):
            pooled = httpx.get(f"{url}/api/sessions/{code}/results", headers=AUTH).json()["items"][0]
            assert pooled["counts"] == {"IsNext": 20, "NotNext": 10}


@pytest.mark.slow
def test_two_server_processes_share_one_sqlite_file(tmp_path):
    two_workers_share_one_database(tmp_path)
    db = Database(database_url(None, tmp_path))
    with db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("SELECT count(*) FROM class_answers")).scalar() == 30
    db.close()


# --- `--workers 2`: uvicorn's worker processes, one data folder ---------------------------------

def children(pid: int) -> set[int]:
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def serving_pid(server_port: int, client_port: int, pids: set[int]) -> int | None:
    """Which of `pids` holds the server end of the loopback connection from `client_port` (/proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if int(f[1].rsplit(":", 1)[1], 16) == server_port and int(f[2].rsplit(":", 1)[1], 16) == client_port:
                inodes.add(f"socket:[{f[9]}]")
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd) in inodes:
                    return pid
            except OSError:
                continue
    return None


class Conn:
    """One keep-alive connection, so that every request on it reaches the same worker."""

    def __init__(self, url: str):
        self.port = int(url.rsplit(":", 1)[1])
        self.http = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.call("GET", "/api/health")

    def call(self, method: str, path: str, body: dict | None = None, headers: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        self.http.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        r = self.http.getresponse()
        text = r.read()
        return r.status, (json.loads(text) if text else None), r.getheader("Set-Cookie")

    def events(self, path: str, headers: dict):
        """(event, data) of a server-sent event stream on this connection, as they arrive."""
        self.http.request("GET", path, headers=headers)
        r = self.http.getresponse()
        assert r.status == 200
        kind = None
        while line := r.fp.readline():
            line = line.decode().rstrip("\r\n")
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:") and kind:
                yield kind, json.loads(line[5:])


@pytest.mark.slow
def test_two_uvicorn_workers_share_one_database(tmp_path):
    """`python -m app --workers 2`: a student joins through one worker and the other sees her; the
    teacher paces through the second, she answers through it, and the first worker's results and its
    live dashboard stream count her answer once."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("telling which worker holds a connection needs Linux's /proc")
    with server(tmp_path, "--workers", "2") as url:
        processes = children(PIDS[url])  # the two workers (and multiprocessing's resource tracker)
        by_worker: dict[int, list[Conn]] = {}
        for _ in range(60):  # the kernel hands each new connection to whichever worker accepts first
            c = Conn(url)
            by_worker.setdefault(serving_pid(c.port, c.http.sock.getsockname()[1], processes), []).append(c)
            if sum(len(v) >= 2 for v in by_worker.values()) == 2:
                break
        workers = {pid for pid, v in by_worker.items() if len(v) >= 2}
        assert None not in by_worker and len(by_worker) == 2 and len(workers) == 2, \
            f"60 connections did not reach two workers twice each: {by_worker}"
        (one, one_stream), (two, _) = (by_worker[w][:2] for w in sorted(workers))
        status, made, _ = one.call("POST", "/api/sessions", {"nsp_count": 1}, AUTH)
        assert status == 201
        path = f"/api/sessions/{made['code']}"
        status, ana, cookie = one.call("POST", path + "/join", {"nickname": "Ana"})
        assert status == 200 and cookie
        student = {"Cookie": cookie.split(";")[0]}
        status, state, _ = two.call("GET", path, headers=student)  # her browser, through the other worker
        assert status == 200 and state["joined"] == 1 and state["me"] == ana
        assert two.call("GET", path, headers=AUTH)[1]["participants"][0]["nickname"] == "Ana"
        dashboard = one_stream.events(path + "/events", AUTH)  # worker one's live dashboard
        item = two.call("PUT", path + "/state", {"page": "nsp"}, AUTH)[1]["item"]
        assert one.call("GET", path, headers=student)[1]["current"]["item"] == item
        body = {"activity": "nsp", "item": item, "answer": "IsNext"}
        assert two.call("POST", path + "/answers", body, student)[0] == 201
        assert one.call("POST", path + "/answers", body, student)[0] == 409  # once, whichever worker
        assert one.call("GET", path + "/results", headers=AUTH)[1]["items"][0]["answered"] == 1  # not the split yet
        deadline = time.monotonic() + 10
        for kind, data in dashboard:
            if kind == "results" and data["items"] and data["items"][0]["answered"] == 1:
                break
            assert time.monotonic() < deadline, "worker one's dashboard never showed the other worker's answer"
        for conns in by_worker.values():
            for c in conns:
                c.http.close()


def test_an_older_schema_is_upgraded_in_place_and_a_newer_one_refused(tmp_path, monkeypatch):
    url = database_url(None, tmp_path)
    db = Database(url)
    assert db.migrate() == dbmod.LATEST
    with db.writing() as s:
        s.execute(text("INSERT INTO class_sessions (code, created_at, expires_at, plan, page, locked, revealed, "
                       "leaderboard, version) VALUES ('KMT4HX', '2026-01-01', '2999-01-01', '{}', 'lobby', 0, 0, 0, 1)"))
    db.close()
    # the next release adds a column: the step runs once, the old session is kept
    monkeypatch.setattr(dbmod, "LATEST", dbmod.LATEST + 1)
    monkeypatch.setitem(dbmod.MIGRATIONS, dbmod.LATEST, ["ALTER TABLE class_sessions ADD COLUMN note TEXT"])
    db = Database(url)
    assert db.migrate() == dbmod.LATEST
    assert db.migrate() == dbmod.LATEST  # idempotent: a second worker starting finds it done
    with db.reading() as s:
        assert s.execute(text("SELECT code, note FROM class_sessions")).all() == [("KMT4HX", None)]
        assert s.execute(text("SELECT version FROM schema_version")).scalar() == dbmod.LATEST
    db.close()
    monkeypatch.setattr(dbmod, "LATEST", 1)  # an older server meets the newer database
    with pytest.raises(SchemaTooNew):
        Database(url).migrate()


def test_database_url_forms(tmp_path):
    assert database_url(None, tmp_path) == f"sqlite:///{tmp_path.resolve()}/classes.sqlite3"
    assert database_url("postgresql://u:p@h:5/db", tmp_path) == "postgresql+psycopg://u:p@h:5/db"
    with pytest.raises(ValueError):
        database_url("mysql://u@h/db", tmp_path)


@pytest.mark.slow
def test_startup_prints_the_addresses_students_can_reach(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args, expect, refuse in (
            (["--host", "127.0.0.1"], "Students cannot reach this server", "/join"),
            (["--host", "0.0.0.0", "--public-url", "https://playground.school.lan"],
             "https://playground.school.lan/join", "127.0.0.1:")):
        port = str(free_port())
        proc = subprocess.Popen([sys.executable, "-m", "app", "--port", port, "--data-dir", str(tmp_path),
                                 "--models-dir", str(SHIPPED_MODELS), *args], cwd=REPO, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            lines = [proc.stdout.readline()]
            while not lines[-1].startswith("Students"):  # the logins, then the students' block
                lines.append(proc.stdout.readline())
            if lines[-1].rstrip().endswith(":"):
                lines.append(proc.stdout.readline())
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        printed = "".join(lines)
        students = printed[printed.index("Students"):]
        assert "/login#token=" in "".join(lines)
        assert expect in students and refuse not in students, lines


# --- PostgreSQL: a real server from Debian's binaries ------------------------------------------

def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="module")
def postgres_url():
    """A throwaway PostgreSQL cluster in a temp folder, on a free port. initdb refuses to run as
    root, so as root (CI) it runs as the `postgres` user (or `nobody`)."""
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL's server binaries are not installed (Debian: apt-get install postgresql)")
    pytest.importorskip("psycopg")
    root = Path(tempfile.mkdtemp(prefix="pp-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        user = next((u for u in ("postgres", "nobody") if _user_exists(u)), None)
        if user is None:
            pytest.skip("running as root and no postgres/nobody user to run the PostgreSQL server as")
        shutil.chown(root, user)
        prefix = ["runuser", "-u", user, "--"]
    data, port = root / "data", free_port()
    run = lambda *cmd: subprocess.run([*prefix, *cmd], check=True, capture_output=True, text=True)  # noqa: E731
    run(str(bindir / "initdb"), "-D", str(data), "-U", "pp", "-A", "trust", "-E", "UTF8")
    run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60", "-o",
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
    try:
        yield f"postgresql://pp@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@pytest.mark.slow
def test_postgresql_two_servers_one_database(postgres_url, tmp_path):
    db = Database(database_url(postgres_url, tmp_path))
    assert db.dialect == "postgresql" and db.migrate() == dbmod.LATEST
    with db.writing() as s:  # the step that frees removed nicknames (an UPDATE, so it may run again) is PostgreSQL too
        for statement in dbmod.MIGRATIONS[3]:
            s.execute(text(statement))
    db.close()
    # separate data folders: the only thing the two servers share is the PostgreSQL database
    a, b = tmp_path / "a", tmp_path / "b"
    with server(a, "--database-url", postgres_url) as one, server(b, "--database-url", postgres_url) as two:
        code = start_session(one, nsp_count=1)
        ana = join(two, code, "Ana")
        item = pace(one, code, page="nsp")["item"]
        assert ana.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item,
                                                                "answer": "NotNext"}).status_code == 201
        pace(one, code, revealed=True)
        pooled = httpx.get(f"{one}/api/sessions/{code}/results", headers=AUTH).json()["items"][0]
        assert pooled["counts"] == {"IsNext": 0, "NotNext": 1}
    assert not (a / "classes.sqlite3").exists()
    two_workers_share_one_database(tmp_path / "c", "--database-url", postgres_url)
