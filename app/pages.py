"""The one page table: every page the app serves, in the navigation's order. Everything that lists
pages reads it: the page routes (`router`, one per row), the navigation (templates/base.html loops
over `nav_pages`), the static copy (app/static_build.py: the pages that run on the device) and the
README's table of pages (tests/app/test_pages.py holds it to this one). A new page is one row here
and its template."""
from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from . import deps


@dataclass(frozen=True)
class Page:
    path: str
    key: str  # the template is <key>.html; <body data-page="key"> picks the page's script
    title: str
    nav: str | None = None  # its label in the navigation (None: not there)
    teacher: str | None = None  # its label in the navigation while the instructor is logged in (templates/base.html)
    on_device: bool = False  # the static copy runs it in the browser, with no server


PAGES = (
    Page("/", "home", "Pretraining Playground", nav="Home", on_device=True),
    Page("/mask-fill", "mask_fill", "Mask fill", nav="Mask-Fill", on_device=True),
    Page("/spans", "spans", "Fill the missing spans", nav="Spans", on_device=True),
    Page("/generate", "generate", "Generate", nav="Generation", on_device=True),
    Page("/nsp", "nsp", "Next-sentence prediction", nav="NSP Quiz", on_device=True),
    Page("/attention", "attention", "Attention", nav="The mask", on_device=True),
    Page("/compare", "compare", "GPT vs BERT on the same blank", nav="GPT vs BERT", on_device=True),
    Page("/objectives", "objectives", "What the loss sees: pretraining objectives", nav="Objectives", on_device=True),
    Page("/concepts", "concepts", "Concept check", nav="Concepts"),
    Page("/train", "train", "Live pretraining", nav="Train"),
    Page("/finetune", "finetune", "Fine-tune lab", nav="Fine-tune"),
    Page("/teach", "teach", "Your class", teacher="Class"),  # the class's start page: lessons, a class, the last ones
    Page("/class", "class", "Class session"),
    Page("/lessons", "lessons", "Lessons", teacher="Lessons"),
    Page("/join", "join", "Join the class"),
    Page("/login", "login", "Instructor login"),
    Page("/report", "class_report", "Class report"),  # the teacher's, of one class session (?code=)
)
NAV = tuple(p for p in PAGES if p.nav)
TEACHER_NAV = tuple(p for p in PAGES if p.teacher)

router = APIRouter(include_in_schema=False)


def _route(page: Page) -> None:
    def show(request: Request) -> HTMLResponse:
        return deps.render(request, f"{page.key}.html", page.key, page.title)

    show.__name__ = f"{page.key}_page"
    router.add_api_route(page.path, show, methods=["GET", "HEAD"], response_class=HTMLResponse)


for _page in PAGES:
    _route(_page)
