"""Class sessions through the API (issue 20): join, answer, pool, reveal, export, pacing, and every
kind of bad input answering a 4xx that names the field with nothing half-written. Runs on the
shipped models (loaded, not trained: fast); BERT's answers are checked against the app's own NSP
quiz and mask-fill endpoints, not against fixed numbers."""
from __future__ import annotations

import json
import threading

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.classes import activities
from app.classes.codes import ALPHABET, CODE_LENGTH
from app.classes.models import Answer, ClassSession, Participant
from app.config import Settings
from app.main import create_app
from tests.conftest import SHIPPED_MODELS

TOKEN = "class-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=data, instructor_token=TOKEN))
    with TestClient(application):  # runs the lifespan: registry, database
        yield application


@pytest.fixture
def teacher(app):
    return TestClient(app, headers=AUTH)


_addresses = iter(range(10, 1 << 20))


def student(app) -> TestClient:
    """One browser: its own cookie jar and its own address (127.x.y.z), as a phone on the school's
    network has (limits on new nicknames and code guesses are per address: app/classes/guard.py)."""
    n = next(_addresses)
    return TestClient(app, client=(f"127.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}", 50000))


def start(teacher, **body) -> str:
    r = teacher.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()["code"]


def joined(app, code: str, nickname: str) -> TestClient:
    s = student(app)
    r = s.post(f"/api/sessions/{code}/join", json={"nickname": nickname})
    assert r.status_code == 200, r.text
    return s


def go(teacher, code, **state) -> dict:
    r = teacher.put(f"/api/sessions/{code}/state", json=state)
    assert r.status_code == 200, r.text
    return r.json()


def count_answers(app, code: str) -> int:
    db = app.state.classes.db
    with db.reading() as s:
        sid = s.scalar(select(ClassSession.id).where(ClassSession.code == code))
        return s.scalar(select(func.count()).select_from(Answer).where(Answer.session_id == sid))


def test_join_answer_pool_reveal_and_export(app, teacher):
    code = start(teacher, nsp_count=3)
    assert len(code) == CODE_LENGTH and set(code) <= set(ALPHABET)
    ana, ben, cy = (joined(app, code, n) for n in ("Ana", "Ben", "Cy"))
    state = go(teacher, code, page="nsp")
    item = state["item"]
    assert state["current"]["content"]["choices"] == ["IsNext", "NotNext"] and "truth" not in state["current"]
    for s, guess in ((ana, "IsNext"), (ben, "IsNext"), (cy, "NotNext")):
        r = s.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item, "answer": guess})
        assert r.status_code == 201, r.text
    # before the reveal students see nothing, and the instructor (the projector) how many answered, not the split
    assert ana.get(f"/api/sessions/{code}/results").json()["items"] == []
    pooled = teacher.get(f"/api/sessions/{code}/results").json()["items"][0]
    assert pooled["answered"] == 3 and "counts" not in pooled and "truth" not in pooled
    state = go(teacher, code, revealed=True)
    assert state["locked"] and state["revealed"] and state["answered"] == 3
    pooled = ana.get(f"/api/sessions/{code}/results").json()
    item_result = pooled["items"][0]
    # BERT's answer is the NSP quiz's own scoring of that item
    quiz = teacher.post(f"/api/nsp/quiz/{item}/answer", json={"guess": "IsNext"}).json()
    assert item_result["truth"] == quiz["truth"]
    assert item_result["model"] == {"answer": quiz["model_guess"], "p_is_next": pytest.approx(quiz["p_is_next"])}
    right = item_result["counts"][quiz["truth"]]
    assert item_result["class_correct"] == pytest.approx(right / 3)
    assert pooled["summary"]["nsp"] == {"items": 1, "answers": 3, "class_accuracy": pytest.approx(right / 3),
                                        "bert_accuracy": float(quiz["model_correct"])}
    # an answer after the reveal is refused and not stored
    late = joined(app, code, "Dee")
    r = late.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item, "answer": "IsNext"})
    assert r.status_code == 409 and r.json()["parameter"] == "item"
    assert count_answers(app, code) == 3
    csv_text = teacher.get(f"/api/sessions/{code}/export.csv").text.splitlines()
    assert len(csv_text) == 4
    assert csv_text[0] == "nickname,removed,activity,item,answer,right,right_answer,item_text,revealed,answered_at"
    assert sorted(line.split(",")[0] for line in csv_text[1:]) == ["Ana", "Ben", "Cy"]


def test_be_the_bert_concepts_and_label_together(app, teacher):
    code = start(teacher, nsp_count=0, concepts=["right-context"], labels=["happy", "sad"],
                 lines=["What a lovely day", "All is lost"])
    a, b = joined(app, code, "A"), joined(app, code, "B")
    r = teacher.post(f"/api/sessions/{code}/items", json={"activity": "fill", "text": "the king", "positions": [4, 5]})
    assert r.status_code == 201 and r.json()["item"] == "f1"
    state = go(teacher, code, page="fill")
    assert state["current"]["content"] == {"parts": ["the ", "", "ng"], "masks": 2}
    assert a.post(f"/api/sessions/{code}/answers", json={"activity": "fill", "item": "f1", "answer": "ki"}).status_code == 201
    r = b.post(f"/api/sessions/{code}/answers", json={"activity": "fill", "item": "f1", "answer": "k"})
    assert r.status_code == 422 and r.json()["parameter"] == "answer"
    assert b.post(f"/api/sessions/{code}/answers", json={"activity": "fill", "item": "f1", "answer": "wi"}).status_code == 201
    go(teacher, code, revealed=True)
    res = teacher.get(f"/api/sessions/{code}/results").json()["items"][0]
    assert res["counts"] == [{"k": 1, "w": 1}, {"i": 2}] and res["truth"] == "ki"
    fill = teacher.post("/api/mask-fill", json={"text": "the king", "positions": [4, 5], "top_k": 5}).json()
    assert [m["predictions"] for m in res["model"]["masks"]] == [m["predictions"] for m in fill["masks"]]
    # concept check: the distribution of choices
    go(teacher, code, page="concept")
    assert a.post(f"/api/sessions/{code}/answers", json={"activity": "concept", "item": "right-context", "answer": "3"}).status_code == 201
    assert b.post(f"/api/sessions/{code}/answers", json={"activity": "concept", "item": "right-context", "answer": "9"}).status_code == 422
    go(teacher, code, revealed=True)
    res = next(i for i in teacher.get(f"/api/sessions/{code}/results").json()["items"] if i["activity"] == "concept")
    assert res["counts"] == {"0": 0, "1": 0, "2": 0, "3": 1} and res["truth"] == "3" and res["class_correct"] == 1.0
    # label together: every line open at once; the majority becomes the task file, a tie is left out
    go(teacher, code, page="label")
    for s, line, lab in ((a, "l1", "happy"), (b, "l1", "happy"), (a, "l2", "sad"), (b, "l2", "happy")):
        r = s.post(f"/api/sessions/{code}/answers", json={"activity": "label", "item": line, "answer": lab})
        assert r.status_code == 201, r.text
    task = teacher.get(f"/api/sessions/{code}/labels.jsonl")
    assert task.status_code == 200
    assert [json.loads(line) for line in task.text.splitlines()] == [{"text": "What a lovely day", "label": "happy"}]
    assert a.get(f"/api/sessions/{code}/labels.jsonl").status_code == 401


def test_nicknames_rejoin_remove_and_privacy(app, teacher):
    code = start(teacher, nsp_count=2)
    ana = joined(app, code, "Ana")
    me = ana.get(f"/api/sessions/{code}").json()["me"]
    # rejoin from the same browser (its cookie): the same participant, whatever name is typed
    assert ana.post(f"/api/sessions/{code}/join", json={"nickname": "Other"}).json() == me
    other = student(app)
    for nickname, status in (("ANA", 409), ("<script>x</script>", 422), ("x" * 10_000, 422), ("   ", 422),
                             ("a\u202eb", 422), ("Bo" * 12 + "!", 422)):
        r = other.post(f"/api/sessions/{code}/join", json={"nickname": nickname})
        assert r.status_code == status and r.json()["parameter"] == "nickname", (nickname, r.text)
    ben = joined(app, code, "Ben")
    # students do not see each other's names; the instructor does
    assert "participants" not in ben.get(f"/api/sessions/{code}").json()
    roster = teacher.get(f"/api/sessions/{code}").json()["participants"]
    assert [p["nickname"] for p in roster] == ["Ana", "Ben"]
    # the leaderboard shows names to everyone once the teacher turns it on
    go(teacher, code, leaderboard=True)
    assert [x["nickname"] for x in ben.get(f"/api/sessions/{code}").json()["leaders"]] == ["Ana", "Ben"]
    # removing a nickname: its browser can no longer answer, and may join again under another name
    assert teacher.delete(f"/api/sessions/{code}/participants/{me['id']}").status_code == 204
    state = go(teacher, code, page="nsp")
    r = ana.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": state["item"], "answer": "IsNext"})
    assert r.status_code == 403 and r.json()["parameter"] == "participant"
    assert ana.post(f"/api/sessions/{code}/join", json={"nickname": "Ana again"}).status_code == 200
    assert [p["nickname"] for p in teacher.get(f"/api/sessions/{code}").json()["participants"]] == ["Ben", "Ana again"]


def test_bad_input_names_the_field_and_writes_nothing(app, teacher):
    code = start(teacher, nsp_count=2)
    other = start(teacher, nsp_count=2)
    s = joined(app, code, "Ana")
    state = go(teacher, code, page="nsp")
    item = state["item"]
    url = f"/api/sessions/{code}/answers"
    cases = [
        (s.post("/api/sessions/ZZZZZZ/join", json={"nickname": "x"}), 404, "code"),
        (s.post("/api/sessions/0OIL15/join", json={"nickname": "x"}), 404, "code"),
        (student(app).post(url, json={"activity": "nsp", "item": item, "answer": "IsNext"}), 403, "participant"),
        (s.post(url, json={"activity": "nsp", "item": "nope", "answer": "IsNext"}), 404, "item"),
        (s.post(url, json={"activity": "nsp", "item": state["items"]["nsp"][1]["item"], "answer": "IsNext"}), 409, "item"),
        (s.post(url, json={"activity": "concept", "item": "right-context", "answer": "1"}), 409, "activity"),
        (s.post(url, json={"activity": "nsp", "item": item, "answer": "Maybe"}), 422, "answer"),
        (s.post(url, json={"activity": "poll", "item": item, "answer": "IsNext"}), 422, "activity"),
        (s.post(url, json={"activity": "nsp", "item": item, "answer": "IsNext", "extra": 1}), 422, "extra"),
        (s.post(url, json={"activity": "nsp", "item": item, "answer": 1}), 422, "answer"),
        (s.put(f"/api/sessions/{code}/state", json={"locked": True}), 401, "token"),
        (s.delete(f"/api/sessions/{code}"), 401, "token"),
        (s.get(f"/api/sessions/{code}/export.csv"), 401, "token"),
        (s.post("/api/sessions", json={}), 401, "token"),
        (teacher.put(f"/api/sessions/{code}/state", json={"page": "nsp", "item": "zz"}), 404, "item"),
        (teacher.put(f"/api/sessions/{code}/state", json={"page": "quiz"}), 422, "page"),
        (teacher.post("/api/sessions", json={"concepts": ["no-such"]}), 422, "concepts"),
        (teacher.post("/api/sessions", json={"lines": ["a"], "labels": ["one"]}), 422, "labels"),
        (teacher.post(f"/api/sessions/{code}/items", json={"activity": "fill", "text": "abc", "positions": [7]}), 422, "positions"),
        (teacher.post(f"/api/sessions/{code}/items", json={"activity": "label", "text": "abc"}), 409, "activity"),
    ]
    for k, (r, status, parameter) in enumerate(cases):
        assert (r.status_code, r.json()["parameter"]) == (status, parameter), (k, r.text)
    assert count_answers(app, code) == 0
    # one session's participant cannot answer in another session; the other's data stays apart
    go(teacher, other, page="nsp")
    r = s.post(f"/api/sessions/{other}/answers", json={"activity": "nsp", "item": item, "answer": "IsNext"})
    assert r.status_code == 403
    assert teacher.get(f"/api/sessions/{other}").json()["joined"] == 0
    # locked: refused; ended: no more joins; deleted: gone
    go(teacher, code, locked=True)
    r = s.post(url, json={"activity": "nsp", "item": item, "answer": "IsNext"})
    assert (r.status_code, r.json()["parameter"]) == (409, "item")
    go(teacher, code, ended=True)
    r = student(app).post(f"/api/sessions/{code}/join", json={"nickname": "Late"})
    assert (r.status_code, r.json()["parameter"]) == (409, "code")
    with app.state.classes.db.reading() as db:
        sid = db.scalar(select(ClassSession.id).where(ClassSession.code == code))
    assert teacher.delete(f"/api/sessions/{code}").status_code == 204
    assert s.get(f"/api/sessions/{code}").status_code == 404
    with app.state.classes.db.reading() as db:
        assert db.scalar(select(func.count()).select_from(Participant).where(Participant.session_id == sid)) == 0


def test_expired_session_answers_410(app, teacher):
    code = start(teacher, hours=0.0001)  # 0.36 s
    import time

    time.sleep(0.5)
    r = student(app).post(f"/api/sessions/{code}/join", json={"nickname": "Ana"})
    assert (r.status_code, r.json()["parameter"]) == (410, "code")


def test_concurrent_answers_are_counted_exactly_once(app, teacher):
    """40 students answer at once, each sending the same answer twice from two threads: every
    answer is stored once (the database's unique constraint), the pool counts exactly 40."""
    code = start(teacher, nsp_count=1)
    students = [joined(app, code, f"S{k}") for k in range(40)]
    item = go(teacher, code, page="nsp")["item"]
    statuses: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(80)

    def send(s, k):
        barrier.wait()
        r = s.post(f"/api/sessions/{code}/answers",
                   json={"activity": "nsp", "item": item, "answer": "IsNext" if k % 4 else "NotNext"})
        with lock:
            statuses.append(r.status_code)

    threads = [threading.Thread(target=send, args=(s, k)) for k, s in enumerate(students) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [201] * 40 + [409] * 40
    assert count_answers(app, code) == 40
    go(teacher, code, revealed=True)
    pooled = teacher.get(f"/api/sessions/{code}/results").json()["items"][0]
    assert pooled["counts"] == {"IsNext": 30, "NotNext": 10} and pooled["answered"] == 40


def test_events_follow_the_teacher(app, teacher, parse_sse):
    code = start(teacher, nsp_count=2)
    s = joined(app, code, "Ana")
    go(teacher, code, page="nsp")
    with s.stream("GET", f"/api/sessions/{code}/events") as stream:
        first = None
        for line in stream.iter_lines():
            if line.startswith("data: "):
                first = json.loads(line[6:])
                break
    assert first["page"] == "nsp" and "participants" not in first
    teacher.delete(f"/api/sessions/{code}")
    with s.stream("GET", f"/api/sessions/{code}/events") as stream:
        assert stream.status_code == 404


def test_activity_names_cover_every_page():
    assert set(activities.NAMES) == set(activities.PAGES)
