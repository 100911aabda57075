"""Issue 50 must 7: the shipped lesson given end to end in real browsers against a real `python -m app`.

The teacher (1280x720) logs in, lands on Teach and gives "What pretraining is" in one click; the
projector is a second browser with no login at 1024x768, opened on the link the teacher's page gives;
three phones (390x844) join with the code, and 20 more students answer over HTTP, each from its own
loopback address (a phone on the school's Wi-Fi). The teacher walks every stage with the keyboard (→,
and R to reveal): on each class stage the students answer every item, the projector shows the item,
then its truth; on each applet stage the projector shows the applet in projector mode with the
stage's settings and the phones show the same applet (or "look at the projector", as the stage
says); on "Be the GPT" the teacher steps the applet and the projector and the phones follow. At every
stage: the projector neither scrolls nor cuts anything on the right, no screen reads like a
programmer's word, and on a class stage every text on the projector is above the floor of
tests/browser/test_stage_font_floor.py (24 px running text, 18 px labels). The end: the projector
link stops working. Screenshots of every stage and screen: tests/browser/screenshots/give/ (or
GIVE_SHOTS=/dir) for a person to look at."""
from __future__ import annotations

import os
import re
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.app.run_servers import AUTH, TOKEN, free_port, server_process
from tests.browser.conftest import close_contexts, new_page
from tests.browser.stage import cut_sideways, overflow, phone_page, programmer_words
from tests.browser.test_stage_font_floor import LABEL_PX, MEASURE, RUNNING, RUNNING_PX
from tests.conftest import SHIPPED_MODELS

pytestmark = pytest.mark.browser
STUDENTS = 20
FRAME = "iframe.c-applet-frame:not(.c-applet-next)"
FOLLOW_S = 15  # a loaded CI machine; benchmarks/lesson_follow.py prints how fast it really is


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("give")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with ExitStack() as stack:
        stack.enter_context(server_process(SHIPPED_MODELS, data / "data", data / "server.log", "--public-url", url,
                                           port=port))
        yield url


@pytest.fixture(scope="module")
def shots(screenshots) -> Path:
    path = Path(os.environ.get("GIVE_SHOTS") or screenshots / "give")
    path.mkdir(parents=True, exist_ok=True)
    return path


def state(base: str, code: str) -> dict:
    return httpx.get(f"{base}/api/sessions/{code}", headers=AUTH).json()


def until(check, what: str, timeout: float = FOLLOW_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what}")


def frame_query(page) -> str | None:
    return page.evaluate("(s) => { const f = document.querySelector(s); return f && f.contentWindow ? "
                         "f.contentWindow.location.pathname + f.contentWindow.location.search : null; }", FRAME)


def small_text(page) -> list[str]:
    return [f"{t['what']} {t['px']:.1f}px {t['text']!r}" for t in page.evaluate(MEASURE, RUNNING)
            if t["px"] < (RUNNING_PX if t["running"] else LABEL_PX) - 0.05]


def answers_for(kind: str, current: dict, k: int) -> list[tuple[str, str]]:
    """(item, answer) a student k sends on the class's current item (every line, for Label together)."""
    if kind == "nsp":
        return [(current["item"], ["IsNext", "NotNext"][k % 2])]
    if kind == "concept":
        return [(current["item"], str(k % len(current["content"]["choices"])))]
    if kind == "fill":
        masks = current["content"]["masks"]
        return [(current["item"], "etaoinshrd"[:masks] if k % 3 else "x" * masks)]
    return [(line["item"], current["content"]["choices"][k % 2]) for line in current["lines"]]


def test_the_shipped_lesson_is_given_from_start_to_end(browser, server, shots):
    base = server
    contexts, problems = [], []
    try:
        context, teacher, trec = new_page(browser, base, 1280, 720)
        contexts.append(context)
        teacher.on("dialog", lambda d: d.accept())
        teacher.goto(f"/login#token={TOKEN}")
        teacher.wait_for_url(lambda u: "/login" not in u)
        teacher.goto("/teach")
        teacher.get_by_role("button", name="Give What pretraining is").click()
        teacher.wait_for_url(re.compile(r"/class\?code="))
        code = re.search(r"code=([A-Z0-9]+)", teacher.url).group(1)
        teacher.wait_for_selector("#c-wall-open[href*='#key=']")
        wall_link = teacher.get_attribute("#c-wall-open", "href")
        context, wall, wrec = new_page(browser, base, 1024, 768)  # a second browser: no login, no cookie
        contexts.append(context)
        wall.goto(wall_link)
        wall.wait_for_function("() => document.body.classList.contains('class-wall') && !document.querySelector('#c-live').hidden")
        assert wall.evaluate("() => [...document.querySelectorAll('.c-controls button, [data-control] button')]"
                             ".filter((b) => b.checkVisibility()).length") == 0  # no teacher control on the wall
        phones = []
        for name in ("Ana", "Ben", "Cy"):
            context, phone, prec = phone_page(browser, base)
            contexts.append(context)
            phone.goto(f"/join?code={code}")
            phone.fill("#j-name", name)
            phone.click("#j-go")
            phone.wait_for_selector("#j-class:not([hidden])")
            phones.append((phone, prec))
        students = []
        for k in range(STUDENTS):
            client = httpx.Client(base_url=base, transport=httpx.HTTPTransport(local_address=f"127.0.3.{k + 10}"))
            assert client.post(f"/api/sessions/{code}/join", json={"nickname": f"Student {k + 1}"}).status_code == 200
            students.append(client)
        until(lambda: state(base, code)["joined"] == STUDENTS + 3, "everyone joined")
        lesson = state(base, code)["lesson"]
        for k, stage in enumerate(lesson["stages"]):
            teacher.keyboard.press("Escape")  # out of the applet's frame (static/lib/class_applet.js): the keys are the page's
            teacher.keyboard.press("ArrowRight")
            now = until(lambda: (s := state(base, code))["lesson"]["stage"] == k and s, f"stage {k}")
            kind = stage["kind"]
            if kind == "applet":
                applet = now["applet"]
                until(lambda: (q := frame_query(wall)) and q.startswith(applet["page"] + "?") and "projector=1" in q,
                      f"stage {k}: the projector shows {applet['page']} in projector mode")
                for phone, _ in phones:
                    if applet["phones"] == "projector":
                        phone.wait_for_selector(".c-look-up", timeout=FOLLOW_S * 1000)
                    else:
                        until(lambda p=phone: (q := frame_query(p)) and q.startswith(applet["page"] + "?"),
                              f"stage {k}: a phone shows {applet['page']}")
                if applet["page"] == "/generate":  # the teacher steps the applet: the wall and the phones follow
                    step = teacher.frame_locator(FRAME).get_by_role("button", name="Step")
                    for _ in range(2):
                        step.first.click()
                        teacher.wait_for_timeout(300)
                    out = until(lambda: (q := state(base, code)["applet"]["query"]) and "out=" in q and q, "the steps sent")
                    want = dict(httpx.QueryParams(out))["out"]
                    for screen in [wall] + [p for p, _ in phones]:
                        until(lambda s=screen: (q := frame_query(s)) and dict(httpx.QueryParams(q.split("?", 1)[1])).get("out") == want,
                              "the projector and the phones follow the teacher's steps")
                wall.wait_for_timeout(1500)  # the applet in the frame draws its answer
            else:
                keys = stage["keys"]
                for n, key in enumerate(keys if kind != "label" else keys[:1]):
                    cur = until(lambda: (s := state(base, code))["current"] and s["item"] == key and s["current"], f"{kind} {key}")
                    for j, client in enumerate(students):
                        for item, answer in answers_for(kind, cur, j):
                            r = client.post(f"/api/sessions/{code}/answers", json={"activity": kind, "item": item, "answer": answer})
                            assert r.status_code == 201, r.text
                    if n == 0 and kind in ("nsp", "concept"):  # a phone answers on its screen
                        phones[0][0].locator("#j-item button").first.click()
                    if n == 0:
                        wall.wait_for_timeout(800)
                        problems += [f"stage {k} ({kind}, open): {t}" for t in small_text(wall)]
                    teacher.keyboard.press("r")
                    until(lambda: state(base, code)["revealed"], f"{kind} {key} revealed")
                    wall.wait_for_timeout(800)
                    if n == 0:
                        problems += [f"stage {k} ({kind}, revealed): {t}" for t in small_text(wall)]
                    if n < len(keys) - 1 and kind != "label":
                        teacher.keyboard.press("ArrowRight")
                        until(lambda nxt=keys[n + 1]: state(base, code)["item"] == nxt, f"{kind}: the next item")
            over = overflow(wall)
            if over != {"down": 0, "sideways": 0}:
                problems.append(f"stage {k}: the projector scrolls {over}")
            cut = cut_sideways(wall, "main")
            if cut:
                problems.append(f"stage {k}: the projector cuts {cut}")
            for name, page in [("teacher", teacher), ("projector", wall)] + [(f"phone{i}", p) for i, (p, _) in enumerate(phones)]:
                page.screenshot(path=str(shots / f"stage{k:02d}-{name}.png"))
                words = programmer_words(page)
                if words:
                    problems.append(f"stage {k}: {name} reads {words}")
        httpx.put(f"{base}/api/sessions/{code}/state", json={"ended": True}, headers=AUTH)
        wall.wait_for_selector(".c-end-title")
        wall.screenshot(path=str(shots / "end-projector.png"))
        again = httpx.post(f"{base}/api/sessions/{code}/projector", json={"key": wall_link.split("#key=")[1]})
        assert again.status_code == 409  # the projector link stops working with the session
        assert not problems, "\n".join(problems)
        for rec, page in [(trec, teacher), (wrec, wall)] + [(r, p) for p, r in phones]:
            rec.assert_clean(page)
    finally:
        close_contexts(contexts)
