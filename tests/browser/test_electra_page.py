"""The Objectives page's ELECTRA strip, live on the shipped set: every position selected in the draw
is filled by the generator and each character shows the discriminator's own probability of
"replaced" (the same numbers as POST /api/objectives/electra); the student's own sentence too."""
from __future__ import annotations

import httpx

from app.config import REPO, Settings
from app.main import create_app

TEXT = "To be, or not to be, that is the question"


def shown(p: float) -> str:
    """The page's pct(p, 0) (static/lib/text.js): "<1 %" below one percent, else whole percents."""
    return "0 %" if p == 0 else "<1 %" if p < 0.01 else f"{round(p * 100)} %"


def test_strip_shows_the_discriminator_on_the_generators_fills(app_server, browser, make_page):
    with app_server(create_app(Settings(models_dir=REPO / "models"))) as url:
        _, page, rec = make_page(browser, url)
        page.goto(url + "/objectives?text=" + TEXT.replace(" ", "+") + "&seed=4")
        page.wait_for_selector("#o-rtd .tok")
        draw = httpx.post(url + "/api/objectives/corrupt", json={"text": TEXT, "seed": 4}).json()
        positions = [s["position"] for s in draw["selected"]]
        r = httpx.post(url + "/api/objectives/electra", json={"text": TEXT, "positions": positions, "seed": 4}).json()
        assert r["filled"] == len(positions)  # the generator filled every masked position
        notes = page.eval_on_selector_all("#o-rtd .tok .tok-note", "ns => ns.map(n => n.textContent)")
        assert notes == [shown(c["p_replaced"]) for c in r["chars"]]
        assert page.locator("#o-rtd .tok.is-replaced").count() == r["replaced"]
        assert f"filled all {len(positions)} masked positions" in page.text_content("#o-rtd-summary")
        page.fill("#o-rtd-own", "the kong and the crewn")
        page.wait_for_function("() => document.querySelectorAll('#o-rtd-own-strip .tok').length === 22")
        own = httpx.post(url + "/api/objectives/electra", json={"text": "the kong and the crewn"}).json()
        notes = page.eval_on_selector_all("#o-rtd-own-strip .tok .tok-note", "ns => ns.map(n => n.textContent)")
        assert notes == [shown(c["p_replaced"]) for c in own["chars"]]
        # What the card measured is said beside the strip (the model's own figures, not typed).
        import json

        ev = json.loads((REPO / "models" / "electra.card.json").read_text())["evaluation"]["validation"]
        page.wait_for_function("() => document.querySelector('#o-rtd-measured').textContent.length > 0")
        measured = page.text_content("#o-rtd-measured")
        assert f"catches {round(ev['replaced_recall'] * 100)} %" in measured
        assert f"{ev['always_original_accuracy'] * 100:.1f} %" in measured
        rec.assert_clean(page)
