"""Issue 50 musts 1 and 2 in a real browser: the /lessons page. The shipped lesson is listed, copied
and edited (two stages swapped, one deleted, a Be-the-BERT stage added by clicking characters) and
what the server then holds is exactly that; a refused save and a refused import name the field's path
beside it and store nothing; a class stage and an applet stage are previewed as the projector will
show them; Give starts a class with the lesson and lands on its class page. Screenshots of the list,
the editor and a preview at the teacher's, the projector's and a phone's sizes."""
from __future__ import annotations

import copy
import json
import re

import httpx
import pytest

from app.lessons import store

pytestmark = pytest.mark.browser
TOKEN = "lessons-page-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SHIPPED = "what-pretraining-is"
SIZES = ((1280, 720), (1024, 768), (390, 844))


@pytest.fixture(scope="module")
def server(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("lessons-page")) as url:
        yield url


def shipped_file() -> dict:
    return json.loads((store.SHIPPED / f"{SHIPPED}.json").read_text(encoding="utf-8"))


def saved_ids(base: str) -> list[str]:
    return [x["id"] for x in httpx.get(f"{base}/api/lessons", headers=AUTH).json() if not x["shipped"]]


def teacher(make_page, browser, base: str, width: int = 1280, height: int = 720):
    context, page, rec = make_page(browser, base, width, height)
    page.goto(f"/login#token={TOKEN}")
    page.wait_for_url(lambda url: "/login" not in url)
    return context, page, rec


def stage(page, n: int):
    """The card of stage n (1-based)."""
    return page.locator(f"#l-stages > li.l-stage:nth-child({n})")


def refused(rec) -> int:
    """How many requests the browser logged as refused with a 422 (the ones the test asked for), now taken
    out of the console errors (anything else still fails assert_clean)."""
    n = sum("status of 422" in e for e in rec.console_errors)
    rec.console_errors[:] = [e for e in rec.console_errors if "status of 422" not in e]
    return n


def assert_readable(page) -> None:
    text = page.inner_text("body")
    assert "[object Object]" not in text and "undefined" not in text and "NaN" not in text
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px"


def test_the_shipped_lesson_is_copied_edited_and_saved_exactly_as_shown(browser, server, make_page):
    before = saved_ids(server)
    context, page, rec = teacher(make_page, browser, server)
    try:
        page.goto("/lessons")
        shipped = page.locator(f".l-lesson[data-id='{SHIPPED}']")
        assert "What pretraining is" in shipped.inner_text() and "ships with the app" in shipped.inner_text()
        assert page.locator(".l-lesson").first.get_attribute("data-id") == SHIPPED  # shipped first
        assert shipped.locator("[data-act='delete']").count() == 0  # a shipped lesson is not deleted
        shipped.get_by_role("button", name="Copy to edit").click()
        page.wait_for_selector("#l-editor:not([hidden]) #l-stages > li.l-stage")
        assert page.input_value("#l-title") == "What pretraining is (copy)"
        assert "not saved yet" in page.inner_text("#l-editor-h")
        file = shipped_file()
        assert page.locator("#l-stages > li.l-stage").count() == len(file["stages"])

        # stage 2 up, with the keyboard: the moved card keeps the focus
        stage(page, 2).locator("[data-act='up']").focus()
        page.keyboard.press("Enter")
        assert file["stages"][1]["title"] in stage(page, 1).inner_text()
        assert page.evaluate("document.activeElement.closest('li.l-stage').dataset.index") == "0"
        # delete stage 3 (the GPT stage), then add a Be-the-BERT stage at the end
        assert file["stages"][2]["title"] in stage(page, 3).inner_text()
        stage(page, 3).locator("[data-act='delete']").click()
        assert page.locator("#l-stages > li.l-stage").count() == len(file["stages"]) - 1
        assert "Deleted stage 3" in page.inner_text("#l-edit-status")
        page.select_option("#l-add-kind", "fill")
        page.click("#l-add")
        added = page.locator("#l-stages > li.l-stage").last
        assert "Be the BERT" in added.locator(".l-kind").inner_text()
        added.locator("input[data-path$='.items[0].text']").fill("the king and the crown")

        # saved with no character hidden: refused, the sentence beside the strip, nothing stored
        page.click("#l-save")
        n = len(file["stages"])  # stages: the shipped ones, one deleted, one added
        path = f"stages[{n - 1}].items[0].positions"
        error = page.locator(".field-error").first
        error.wait_for()
        assert path in error.inner_text() and path in page.inner_text("#l-edit-status")
        strip = added.locator(f"[data-path='{path}']")
        assert strip.get_attribute("aria-invalid") == "true"
        assert saved_ids(server) == before and "edit=new" not in page.url

        # hide "kin": click k, then i and n with the keyboard (one Tab stop, ←/→ move along the strip)
        strip.locator("button.ch[data-index='4']").click()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Space")
        for _ in range(3):
            page.keyboard.press("ArrowLeft")
        page.keyboard.press("Enter")  # on the space before "king": it cannot be hidden, and says so
        assert "space cannot be hidden" in added.inner_text()
        assert strip.locator("button.ch[data-index='3']").get_attribute("aria-pressed") == "false"
        assert "3 characters hidden: kin" in added.inner_text()
        page.click("#l-save")
        page.wait_for_function("() => document.querySelector('#l-edit-status').textContent.startsWith('Saved')")
        lesson_id = re.search(r"edit=(\d+)", page.url).group(1)
        assert saved_ids(server) == [lesson_id] + before

        expected = copy.deepcopy(file)
        expected["title"] = "What pretraining is (copy)"
        s = expected["stages"]
        s[0], s[1] = s[1], s[0]
        del s[2]
        s.append({"kind": "fill", "title": "Be the BERT: guess the hidden characters",
                  "items": [{"text": "the king and the crown", "positions": [4, 5, 6]}], "notes": ""})
        assert httpx.get(f"{server}/api/lessons/{lesson_id}", headers=AUTH).json() == expected
        assert page.inner_text("#l-save") == "Saved"
        assert_readable(page)
        assert refused(rec) == 1  # the save without a hidden character
        rec.assert_clean(page)
    finally:
        context.close()


def test_a_bad_file_is_refused_by_its_path_and_nothing_is_stored(browser, server, make_page):
    context, page, rec = teacher(make_page, browser, server)
    try:
        page.goto("/lessons")
        page.wait_for_selector(".l-lesson")
        before = httpx.get(f"{server}/api/lessons", headers=AUTH).json()
        bad = shipped_file()
        bad["stages"][3]["state"]["projector"] = "1"  # a key the class session sets
        page.set_input_files("#l-import", files=[{"name": "bad.lesson.json", "mimeType": "application/json",
                                                   "buffer": json.dumps(bad).encode()}])
        said = page.locator("#l-import-error")
        said.wait_for()
        assert "Not imported" in said.inner_text() and "stages[3].state" in said.inner_text()
        assert "stages[3].state" in page.inner_text("#l-list-status")
        assert httpx.get(f"{server}/api/lessons", headers=AUTH).json() == before
        # not JSON at all: said so, nothing sent
        page.set_input_files("#l-import", files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"{not json"}])
        page.wait_for_function("() => { const n = document.querySelector('#l-import-error');"  # redrawn: absent a moment
                               " return !!n && n.textContent.includes('not JSON'); }")
        # the mended file is imported and listed
        page.set_input_files("#l-import", files=[{"name": "good.lesson.json", "mimeType": "application/json",
                                                   "buffer": json.dumps(shipped_file()).encode()}])
        page.wait_for_function("() => document.querySelector('#l-list-status').textContent.startsWith('Imported')")
        after = httpx.get(f"{server}/api/lessons", headers=AUTH).json()
        assert len(after) == len(before) + 1 and page.locator(".l-lesson").count() == len(after)
        assert page.locator("#l-import-error").count() == 0
        assert refused(rec) == 1  # the bad file; the one that is not JSON never left the page
        rec.assert_clean(page)
    finally:
        context.close()


def open_saved_copy(page, base: str) -> str:
    made = httpx.post(f"{base}/api/lessons", json=shipped_file(), headers=AUTH)
    assert made.status_code == 201
    lesson_id = made.json()["id"]
    page.goto(f"/lessons?edit={lesson_id}")
    page.wait_for_selector("#l-editor:not([hidden]) #l-stages > li.l-stage")
    return lesson_id


def test_a_class_stage_and_an_applet_stage_are_previewed_as_the_projector_shows_them(browser, server, make_page,
                                                                                     screenshots):
    context, page, rec = teacher(make_page, browser, server)
    try:
        open_saved_copy(page, server)
        file = shipped_file()
        # Be the BERT: three sentences, their holes, the answer only when asked
        stage(page, 1).locator("[data-act='preview']").click()
        page.wait_for_selector("#l-screen .c-bert-line")
        first = file["stages"][0]["items"][0]
        assert page.locator("#l-screen .c-hole").count() == len(first["positions"])
        assert "▢" in page.inner_text("#l-screen") and "item 1 of 3" in page.inner_text("#l-item-n")
        hidden = "".join(first["text"][p] for p in first["positions"])
        assert hidden not in page.inner_text("#l-screen .c-bert-line")
        page.check("#l-answer")
        assert page.inner_text("#l-screen .c-bert-line") == first["text"]
        page.click("#l-next-item")
        assert "item 2 of 3" in page.inner_text("#l-item-n") and "All the world" in page.inner_text("#l-screen")
        assert page.inner_text("#l-screen .c-hole.is-truth") == "s"  # the answer stays shown while it is ticked
        page.uncheck("#l-answer")
        assert page.locator("#l-screen .c-hole.is-truth").count() == 0 and "stage" not in page.inner_text("#l-screen .c-bert-line")
        # the preview follows the stage's edits (on the same item)
        stage(page, 1).locator("[data-act='edit']").click()
        stage(page, 1).locator("input[data-path='stages[0].items[1].text']").fill("All the world's a stage!")
        page.wait_for_function("() => document.querySelector('#l-screen .c-bert-line').textContent.endsWith('!')")
        assert "item 2 of 3" in page.inner_text("#l-item-n")
        # the concept check: the first question, its right choice marked only with the answer shown
        stage(page, 8).locator("[data-act='preview']").click()
        page.wait_for_function("() => document.querySelector('#l-screen .c-question') !== null")
        bank = {q["id"]: q for q in httpx.get(f"{server}/api/concepts").json()["questions"]}
        assert page.inner_text("#l-screen .c-question") == bank[file["stages"][7]["questions"][0]]["question"]
        assert page.locator("#l-screen li.is-truth").count() == 0
        page.check("#l-answer")
        assert page.locator("#l-screen li.is-truth").count() == 1
        # the screen is the projector's shape, shrunk to the frame
        box = page.locator("#l-frame").bounding_box()
        assert abs(box["width"] / box["height"] - 1280 / 720) < 0.05
        # an applet: the applet itself, in projector mode, with the stage's settings
        stage(page, 4).locator("[data-act='preview']").click()
        frame_el = page.wait_for_selector("#l-screen iframe")
        src = frame_el.get_attribute("src")
        assert src.startswith("/generate?") and "projector=1" in src and "temperature=0.5" in src and "top_k=5" in src
        frame = frame_el.content_frame()
        frame.wait_for_load_state()
        frame.wait_for_function("() => document.documentElement.classList.contains('projector')")
        assert "temperature=0.5" in frame.url
        assert "the same applet" in page.inner_text("#l-preview-note")
        frame.wait_for_load_state("networkidle")
        page.locator("#l-preview").screenshot(path=str(screenshots / "lessons-preview-applet-1280.png"))
        assert_readable(page)
        rec.assert_clean(page)
    finally:
        context.close()


def test_give_starts_a_class_with_the_lesson_and_opens_its_class_page(browser, server, make_page):
    context, page, rec = teacher(make_page, browser, server)
    try:
        page.goto("/lessons")
        page.locator(f".l-lesson[data-id='{SHIPPED}']").get_by_role("button", name="Give").click()
        page.wait_for_url(re.compile(r"/class\?code="))
        code = re.search(r"code=([^&]+)", page.url).group(1)
        state = httpx.get(f"{server}/api/sessions/{code}", headers=AUTH).json()
        assert state["lesson"]["title"] == "What pretraining is"
        assert state["lesson"]["of"] == len(shipped_file()["stages"])
    finally:
        context.close()


def test_the_list_the_editor_and_a_preview_at_every_size(browser, server, make_page, screenshots):
    context, page, rec = teacher(make_page, browser, server)
    lesson_id = open_saved_copy(page, server)
    context.close()
    for width, height in SIZES:
        context, page, rec = teacher(make_page, browser, server, width, height)
        try:
            page.goto("/lessons")
            page.wait_for_selector(".l-lesson")
            assert_readable(page)
            page.screenshot(path=str(screenshots / f"lessons-list-{width}.png"))
            page.goto(f"/lessons?edit={lesson_id}")
            page.wait_for_selector("#l-editor:not([hidden]) #l-stages > li.l-stage")
            for edit in page.locator("#l-stages [data-act='edit']").all():  # every stage's fields, unfolded
                edit.click()
            assert page.locator(".l-stage-body:visible").count() == len(shipped_file()["stages"])
            assert_readable(page)
            stage(page, 1).locator("[data-act='preview']").click()
            page.wait_for_selector("#l-screen .c-bert-line")
            page.evaluate("window.scrollTo(0, 0)")
            assert_readable(page)
            page.screenshot(path=str(screenshots / f"lessons-editor-{width}.png"))
            page.locator("#l-preview").scroll_into_view_if_needed()
            page.locator("#l-preview").screenshot(path=str(screenshots / f"lessons-preview-{width}.png"))
            stage(page, 2).locator("[data-act='edit']").click()  # an applet's fields
            stage(page, 2).scroll_into_view_if_needed()
            page.screenshot(path=str(screenshots / f"lessons-applet-{width}.png"))
            rec.assert_clean(page)
        finally:
            context.close()
