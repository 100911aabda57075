"""Issue 51 must 1: a report per class. A class of 3 answers NSP, Be the BERT and concept items with
an answer key written here; some items are revealed, some not. The scores and right/wrong below are
worked out by hand from that key (the truths read from the data files themselves: the shipped NSP bank,
app/concepts.json, the sentences this test hides characters of), and the report JSON, both CSVs and
each phone's own end-screen score must say the same. BERT's answers are the app's own NSP quiz and
mask-fill endpoints'."""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import update

from app.classes.models import ClassSession
from tests.app.class_kit import browser, go, served, start
from tests.conftest import SHIPPED_MODELS

TOKEN = "report-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NSP_BANK = {it["id"]: it for it in json.loads((SHIPPED_MODELS / "nsp_quiz.json").read_text())["items"]}
CONCEPTS = {q["id"]: q for q in json.loads((Path(__file__).parents[2] / "app" / "concepts.json").read_text())["questions"]}
CONCEPT_IDS = ["self-supervised", "clm-loss", "mlm-loss"]
FILLS = {"f1": ("the king", [4, 5], "the __ng", "ki"), "f2": ("a rose by any name", [2, 3], "a __se by any name", "ro")}
R, W = "right", "wrong"  # NSP and concept answers are written as right or wrong, turned into the choice below
# The answer key. N1..N3 are the session's NSP items, C1..C3 the concept questions above; missing = no answer.
KEY = {
    "Ana": {"N1": R, "N2": R, "N3": W, "f1": "ki", "f2": "ro", "C1": R, "C2": W, "C3": R},
    "Ben": {"N1": W, "N2": R, "N3": R, "f1": "Ki", "f2": "rs", "C1": R, "C2": R, "C3": W},
    "=Cy": {"N1": W, "N3": R, "f1": "wi", "C1": R},  # a nickname a spreadsheet would run as a formula
}
REVEALED = ["N1", "N2", "f1", "f2", "C1", "C2"]  # N3 and C3 are answered but never revealed: they do not count
# Worked out by hand from KEY and REVEALED (right / counted items per activity):
SCORES = {"Ana": {"nsp": (2, 2), "fill": (2, 2), "concept": (1, 2), "total": (5, 6)},
          "Ben": {"nsp": (1, 2), "fill": (0, 2), "concept": (2, 2), "total": (3, 6)},
          "=Cy": {"nsp": (0, 2), "fill": (0, 2), "concept": (1, 2), "total": (1, 6)}}
CLASS = {"nsp": (3, 5), "fill": (2, 5), "concept": (4, 5), "all": (9, 15)}  # right answers / answers, counted items
ITEM_RIGHT = {"N1": (1, 3), "N2": (2, 2), "N3": (2, 3), "f1": (1, 3), "f2": (1, 2), "C1": (3, 3), "C2": (1, 2), "C3": (1, 2)}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with served(tmp_path_factory.mktemp("data"), TOKEN) as application:
        yield application


def run_class(app) -> tuple[str, dict, dict]:
    """The lesson: (code, the phones by nickname, {item name: (activity, item id, truth, the answer's choice text)})."""
    teacher = browser(app, "127.0.0.1", headers=AUTH)
    code = start(teacher, nsp_count=3, concepts=CONCEPT_IDS)
    phones = {}
    for name in KEY:
        phones[name] = browser(app)
        assert phones[name].post(f"/api/sessions/{code}/join", json={"nickname": name}).status_code == 200
    for key, (text, positions, _, _) in FILLS.items():
        assert teacher.post(f"/api/sessions/{code}/items", json={"activity": "fill", "text": text,
                                                                 "positions": positions}).json()["item"] == key
    nsp_ids = [it["item"] for it in go(teacher, code)["items"]["nsp"]]
    items = {}
    for n, item in enumerate(nsp_ids, 1):
        truth = "IsNext" if NSP_BANK[item]["is_next"] else "NotNext"
        items[f"N{n}"] = ("nsp", item, truth, truth)
    for key, (_, _, _, truth) in FILLS.items():
        items[key] = ("fill", key, truth, truth)
    for n, item in enumerate(CONCEPT_IDS, 1):
        truth = CONCEPTS[item]["answer"]
        items[f"C{n}"] = ("concept", item, str(truth), CONCEPTS[item]["choices"][truth]["text"])
    for name, (act, item, truth, _) in items.items():
        go(teacher, code, page=act, item=item)
        for nickname, answers in KEY.items():
            if name in answers:
                answer = answers[name]
                if answer in (R, W):  # the other choice when wrong: NSP's other label, the next concept choice
                    choices = ["IsNext", "NotNext"] if act == "nsp" else [str(k) for k in range(len(CONCEPTS[item]["choices"]))]
                    answer = truth if answer == R else choices[(choices.index(truth) + 1) % len(choices)]
                r = phones[nickname].post(f"/api/sessions/{code}/answers", json={"activity": act, "item": item, "answer": answer})
                assert r.status_code == 201, r.text
        if name in REVEALED:
            go(teacher, code, revealed=True)
    return code, phones, items


def test_a_class_of_three_gets_the_scores_an_answer_key_gives(app):
    teacher = browser(app, "127.0.0.1", headers=AUTH)
    code, phones, items = run_class(app)
    during = teacher.get(f"/api/sessions/{code}/report.json")
    assert during.status_code == 200 and not during.json()["ended"]
    # during the lesson no phone gets a score, its own or anyone's
    assert "score" not in phones["Ana"].get(f"/api/sessions/{code}").json()["me"]
    go(teacher, code, ended=True)
    r = teacher.get(f"/api/sessions/{code}/report.json")
    assert r.headers["content-disposition"] == f'attachment; filename="class-{code}-report.json"'
    report = r.json()
    assert report["ended"] and "revealed" in report["rule"]
    # each student's score, per activity and in all, and right or wrong per answer
    for student in report["students"]:
        name, score = student["nickname"], student["score"]
        parts = {p["activity"]: (p["right"], p["of"]) for p in score["activities"]}
        assert {**parts, "total": (score["right"], score["of"])} == SCORES[name], name
        for item_name, given in KEY[name].items():
            act, item, truth, _ = items[item_name]
            mine = student["answers"][f"{act}:{item}"]
            assert mine["right"] == (given == R or (act == "fill" and given == truth)), (name, item_name)
        assert len(student["answers"]) == len(KEY[name])
    assert [s["nickname"] for s in report["students"]] == ["=Cy", "Ana", "Ben"]
    # each item: its text, its right answer, whether it counts, how many of the class were right
    by_name = {name: next(it for it in report["items"] if (it["activity"], it["item"]) == (act, item))
               for name, (act, item, _, _) in items.items()}
    for name, it in by_name.items():
        act, item, truth, right_text = items[name]
        assert (it["right"], it["answered"]) == ITEM_RIGHT[name] and it["revealed"] == (name in REVEALED), name
        assert it["truth"] == truth and it["right_answer"] == right_text
    a, b = (" ".join(NSP_BANK[items["N1"][1]][k].split()) for k in "ab")  # the play's line breaks as spaces
    assert by_name["N1"]["text"] == f"A: {a} | B: {b}"
    assert by_name["f1"]["text"] == "the __ng" and by_name["f2"]["text"] == "a __se by any name"
    assert by_name["C2"]["text"] == CONCEPTS["clm-loss"]["question"] and by_name["C2"]["model_answer"] is None
    # the class's accuracy per activity and in all, on the counted items
    per = {a["activity"]: a for a in report["activities"]}
    for act in ("nsp", "fill", "concept"):
        assert (per[act]["right"], per[act]["answers"]) == CLASS[act]
        assert per[act]["class_accuracy"] == pytest.approx(CLASS[act][0] / CLASS[act][1])
    assert (report["class"]["right"], report["class"]["answers"]) == CLASS["all"]
    # BERT's: its answers as the NSP quiz and mask-fill give them (the session has ended: nothing is held back)
    bert = {}
    for name, (act, item, _, _) in items.items():
        if act == "nsp":
            quiz = teacher.post(f"/api/nsp/quiz/{item}/answer", json={"guess": "IsNext"}).json()
            bert[name] = (quiz["model_guess"], quiz["model_correct"])
        elif act == "fill":
            text, positions, _, truth = FILLS[item]
            fill = teacher.post("/api/mask-fill", json={"text": text, "positions": positions, "top_k": 5}).json()
            guess = "".join(m["predictions"][0]["char"] for m in fill["masks"])
            bert[name] = (guess, guess == truth)
    for name, (guess, right) in bert.items():
        assert (by_name[name]["model_answer"], by_name[name]["model_right"]) == (guess, right), name
    for act, names in (("nsp", ["N1", "N2"]), ("fill", ["f1", "f2"])):
        assert per[act]["model_right"] == sum(bert[n][1] for n in names)
        assert per[act]["model_accuracy"] == pytest.approx(sum(bert[n][1] for n in names) / 2)
    assert per["concept"]["model_right"] is None

    # scores.csv: one row per student with the same totals; a nickname never runs as a formula
    rows = list(csv.DictReader(io.StringIO(teacher.get(f"/api/sessions/{code}/scores.csv").text)))
    assert [row["nickname"] for row in rows] == ["'=Cy", "Ana", "Ben"]
    for row in rows:
        want = SCORES[row["nickname"].lstrip("'")]
        assert {act: (int(row[f"{act}_right"]), int(row[f"{act}_of"])) for act in ("nsp", "fill", "concept")} == \
            {act: want[act] for act in ("nsp", "fill", "concept")}
        assert (int(row["total_right"]), int(row["total_of"])) == want["total"]
        assert int(row["percent"]) == round(100 * want["total"][0] / want["total"][1])

    # export.csv: every answer with the item's text, its right answer, right or wrong, and whether it counts
    answers = list(csv.DictReader(io.StringIO(teacher.get(f"/api/sessions/{code}/export.csv").text)))
    assert len(answers) == sum(len(k) for k in KEY.values())
    texts = {name: by_name[name]["text"] for name in items}
    for row in answers:
        nickname = row["nickname"].lstrip("'")
        name = next(n for n, (act, item, _, _) in items.items() if (act, item) == (row["activity"], row["item"]))
        given = KEY[nickname][name]
        act, _, truth, right_text = items[name]
        assert row["right"] == ("yes" if given == R or (act == "fill" and given == truth) else "no"), (nickname, name)
        assert row["right_answer"] == right_text and row["item_text"] == texts[name]
        assert row["revealed"] == ("yes" if name in REVEALED else "no")
    assert {row["nickname"] for row in answers} == {"'=Cy", "Ana", "Ben"}

    # each phone's end screen: its own score only; the projector (no cookie) gets none
    for name, phone in phones.items():
        state = phone.get(f"/api/sessions/{code}").json()
        score = state["me"]["score"]
        assert (score["right"], score["of"]) == SCORES[name]["total"]
        assert {p["activity"]: (p["right"], p["of"]) for p in score["activities"]} == \
            {act: SCORES[name][act] for act in ("nsp", "fill", "concept")}
        others = [n for n in KEY if n != name]
        assert not any(n in json.dumps(state) for n in others) and "participants" not in state and "leaders" not in state
    projector = browser(app).get(f"/api/sessions/{code}").json()
    assert "me" not in projector and "participants" not in projector and "leaders" not in projector


def test_the_report_is_the_instructors_and_names_what_is_wrong(app):
    teacher = browser(app, "127.0.0.1", headers=AUTH)
    code = start(teacher, nsp_count=1)
    student = browser(app)
    assert student.post(f"/api/sessions/{code}/join", json={"nickname": "Dee"}).status_code == 200
    for path in ("report.json", "scores.csv", "export.csv"):
        r = student.get(f"/api/sessions/{code}/{path}")  # a student, with the session's cookie, is not the teacher
        assert r.status_code == 401 and r.json()["parameter"] == "token", path
        r = teacher.get(f"/api/sessions/ZZZZZZ/{path}")
        assert r.status_code == 404 and r.json()["parameter"] == "code", path
        r = teacher.get(f"/api/sessions/{'X' * 21}/{path}")
        assert r.status_code == 422 and r.json()["parameter"] == "code", path
    # nothing revealed yet: an empty report, every score 0 of 0
    report = teacher.get(f"/api/sessions/{code}/report.json").json()
    assert report["items"] == [] and report["students"][0]["score"] == {"right": 0, "of": 0, "activities": []}
    # kept until the session expires, then gone with it
    with app.state.classes.db.writing() as s:
        s.execute(update(ClassSession).where(ClassSession.code == code)
                  .values(expires_at=datetime.now(timezone.utc) - timedelta(seconds=1)))
    for path in ("report.json", "scores.csv", "export.csv"):
        r = teacher.get(f"/api/sessions/{code}/{path}")
        assert r.status_code == 410 and r.json()["parameter"] == "code", path
