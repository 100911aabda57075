"""A family is a checked contract (issue 54), the browser's side: for every family the specs declare,
on a set holding them all (tests/family_set.py), the home page draws its model card with its own
piece's tables (static/families/<name>.js cardTables) and its spec's words for its attention, and the
Train page draws its loss curve (and its held-out figure, where its piece has one) from its own piece,
fed with the numbers its tiny training run measured. The rest of the contract:
tests/app/test_family_contract.py."""
from __future__ import annotations

import json

import pytest

from app.contract import SPECS, card_file
from tests.family_set import family_set_dir  # noqa: F401 (the fixture)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def built(family_set_dir):  # noqa: F811
    return family_set_dir


@pytest.fixture(scope="module")
def server(built, app_server, tmp_path_factory):
    from app.config import Settings
    from app.main import create_app

    with app_server(create_app(Settings(models_dir=built / "models", data_dir=tmp_path_factory.mktemp("data")))) as url:
        yield url


OWN_TABLES = """async (name) => {
  const { PIECES } = await import("/static/families/index.js");
  const card = (await (await fetch("/api/models")).json()).cards[name];
  const own = PIECES[name];  // its own piece, not the plain one a family without a script gets
  const drawn = own && own.cardTables ? own.cardTables(card) : [];
  const caption = (node) => (node.matches("table") ? node.caption : node.querySelector("caption"));
  return { own: !!own, captions: drawn.map(caption).filter(Boolean).map((c) => c.textContent) };
}"""

TRAIN_CURVE = """async ([name, card]) => {
  const { PIECES } = await import("/static/families/index.js");
  const curves = await import("/static/pages/train_curves.js");
  const piece = PIECES[name];
  const points = card.curves.filter((c) => Number.isFinite(c.step));
  const view = { curves: { [name]: { train: points.map((c) => [c.step, c.train_loss]), val: points.map((c) => [c.step, c.val_loss]) } },
    held: {}, finished: null };
  if (piece.heldOut) view.held[name] = [[card.training.steps, ...piece.heldOut.final(card.evaluation.test)]];
  curves.layout([name]);
  curves.draw(view);
  return { caption: piece.chart.caption, yLabel: piece.chart.yLabel, held: piece.heldOut ? piece.heldOut.caption : null };
}"""


@pytest.mark.parametrize("name", list(SPECS))
def test_its_home_card_and_train_curve_come_from_its_own_piece(browser, make_page, server, built, screenshots, name):
    spec = SPECS[name]
    card = json.loads((built / "models" / card_file(name)).read_text(encoding="utf-8"))
    context, page, rec = make_page(browser, server, 1280, 720)
    assert page.goto("/").ok
    article = page.locator(f"article.model-card[data-model='{name}']")
    article.wait_for()
    own = page.evaluate(OWN_TABLES, name)
    assert own["own"], f"static/families/{name}.js is not registered in static/families/index.js"
    shown = article.locator("table caption").all_text_contents()
    assert own["captions"] and set(own["captions"]) <= set(shown)  # its own tables, on its card
    assert f"{spec.attention} ({spec.sees})" in article.inner_text()  # the spec's words for its attention
    article.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / f"family-card-{name}.png"))

    assert page.goto("/train").ok
    page.wait_for_load_state("networkidle")
    drawn = page.evaluate(TRAIN_CURVE, [name, card])
    figure = page.locator(f"#t-chart-{name}")
    assert figure.locator("figcaption").text_content() == drawn["caption"]
    assert figure.locator("svg path.train").count() == 1 and drawn["yLabel"] in figure.inner_text()
    held = page.locator(f"#t-held-{name}")
    if drawn["held"]:  # its held-out figure, with the measured number said in words
        assert held.locator("figcaption").text_content() == drawn["held"] and "%" in held.inner_text()
    else:  # no empty figure for a measure it does not have
        assert held.count() == 0 and page.locator("#t-charts > figure").count() == 1
    figure.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / f"family-train-{name}.png"))
    rec.assert_clean(page)
    context.close()
