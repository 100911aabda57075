"""The one page table (app/pages.py): every page it lists is served from its template,
the navigation is drawn from it, the static copy knows each page, and the README's table of pages
lists the same pages in the same order."""
from __future__ import annotations

import re

from app.pages import NAV, PAGES
from app.static_build import ON_DEVICE
from app.static_notes import NEEDS
from tests.conftest import REPO


def test_every_page_of_the_table_is_served_from_its_template(client):
    for page in PAGES:
        r = client.get(page.path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), page.path
        assert f'data-page="{page.key}"' in r.text, page.path  # its own template (<key>.html), its own script
    assert not {p.path for p in PAGES} & set(client.get("/openapi.json").json()["paths"])


def test_the_navigation_is_the_tables_in_its_order(client):
    html = client.get("/nsp").text
    nav = re.search(r'<nav aria-label="Applets">(.*?)</nav>', html, re.S).group(1)
    links = re.findall(r'<a href="([^"]+)"\s*(aria-current="page")?>([^<]+)</a>', nav)
    assert [(href, label) for href, _, label in links] == [(p.path, p.nav) for p in NAV]
    assert [href for href, current, _ in links if current] == ["/nsp"]


def test_the_static_copy_runs_or_explains_every_page():
    assert ON_DEVICE == ["/", "/mask-fill", "/spans", "/generate", "/nsp", "/attention", "/compare", "/objectives"]  # issue 35: on the device too
    assert {p.path for p in PAGES} - set(ON_DEVICE) <= set(NEEDS)


def test_the_readme_lists_the_tables_pages_in_order():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## The pages"):readme.index("Each page has a model picker")]
    listed = [path for row in table.splitlines() if row.startswith("| `/")
              for path in re.findall(r"`(/[a-z-]*)`", row.split("|")[1])]
    assert listed == [p.path for p in PAGES if p.path not in ("/", "/login")]
