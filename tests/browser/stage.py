"""What a person in the classroom would check on a screen, as browser helpers for the lesson tests:
is it inside the visible screen, does the page scroll, does any visible text read like a
programmer's word ("[object Object]", "undefined", "NaN", "null")."""
from __future__ import annotations

import re

from tests.browser.conftest import CSP_PROBE, Recorder

PROGRAMMER_WORDS = re.compile(r"\[object \w+\]|\bundefined\b|\bNaN\b|\bnull\b")
PHONE = {"width": 390, "height": 844}


def visible_text(page) -> str:
    """Every piece of text a person can see (innerText skips what is not rendered), plus the values
    of visible fields and buttons."""
    return page.evaluate("""() => {
      const fields = [...document.querySelectorAll('input, textarea, select')]
        .filter((n) => n.offsetParent !== null && n.type !== 'hidden').map((n) => n.value);
      const labels = [...document.querySelectorAll('[aria-label], img[alt]')]
        .filter((n) => n.offsetParent !== null).map((n) => n.getAttribute('aria-label') || n.getAttribute('alt'));
      return [document.body.innerText, ...fields, ...labels].join('\\n');
    }""")


def programmer_words(page) -> list[str]:
    return [m.group(0) for m in PROGRAMMER_WORDS.finditer(visible_text(page))]


def box(page, selector: str) -> dict | None:
    """The element's rectangle in the viewport (after no scrolling), or None when it is not shown."""
    return page.evaluate("""(s) => {
      const n = document.querySelector(s);
      if (!n || n.offsetParent === null && getComputedStyle(n).position !== 'fixed') return null;
      const r = n.getBoundingClientRect();
      return {top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right,
              width: r.width, height: r.height};
    }""", selector)


def inside(page, selector: str) -> bool:
    """Shown, not empty, and entirely inside the viewport with the page scrolled to the top."""
    b = box(page, selector)
    size = page.viewport_size
    return bool(b and b["height"] > 0 and b["top"] >= -1 and b["left"] >= -1
                and b["bottom"] <= size["height"] + 1 and b["right"] <= size["width"] + 1)


def overflow(page) -> dict:
    """How far the page reaches past the viewport (0 and 0: nothing to scroll)."""
    return page.evaluate("""() => ({down: document.documentElement.scrollHeight - innerHeight,
                                    sideways: document.documentElement.scrollWidth - innerWidth})""")


def phone_page(browser, base: str):
    """A 390x844 touch phone (pointer: coarse), with the suite's recorder of errors and requests."""
    context = browser.new_context(viewport=PHONE, base_url=base, is_mobile=True, has_touch=True,
                                  device_scale_factor=2, service_workers="block")
    rec = Recorder(base)
    page = context.new_page()
    page.add_init_script(CSP_PROBE)
    page.on("console", lambda m: rec.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: rec.page_errors.append(str(e)))
    page.on("request", lambda r: rec.requests.append(r.url))
    return context, page, rec


def cut_sideways(page, *selectors: str) -> list[dict]:
    """What a projector cuts off on the right (issue 43 must 5: a height check passed while BERT's [PAD]
    columns were hidden): each selector shown, its box inside the screen across and inside every
    ancestor that clips sideways, wider than none of them (scrollWidth - clientWidth <= 1 for the key
    element and each such container: nothing hidden behind a scrollbar or an edge), and no scroll box
    on the screen hides anything sideways. [] when nothing is cut."""
    return page.evaluate("""(sels) => {
      const W = innerWidth, out = [], seen = new Set();
      const shown = (n) => n.getClientRects().length > 0 && getComputedStyle(n).visibility !== 'hidden';
      const name = (n) => n.tagName.toLowerCase() + (n.id ? '#' + n.id : '') + [...n.classList].map((c) => '.' + c).join('');
      const wider = (n, why) => {
        if (seen.has(n)) return;
        seen.add(n);
        const over = n.scrollWidth - n.clientWidth;
        if (n.clientWidth > 0 && over > 1) out.push({what: name(n), why, over});
      };
      for (const s of sels) {
        const n = document.querySelector(s);
        if (!n || !shown(n)) { out.push({what: s, why: 'not shown'}); continue; }
        const r = n.getBoundingClientRect();
        if (r.left < -1 || r.right > W + 1) out.push({what: s, why: 'past the screen', left: r.left, right: r.right, screen: W});
        if (getComputedStyle(n).display !== 'inline') wider(n, 'its content is wider than ' + s);
        for (let a = n.parentElement; a && a !== document.body; a = a.parentElement) {
          if (getComputedStyle(a).overflowX === 'visible') continue;
          const ar = a.getBoundingClientRect();
          if (r.left < ar.left - 1 || r.right > ar.right + 1)
            out.push({what: s, why: 'cut by ' + name(a), right: r.right, edge: ar.right});
          wider(a, 'the scroll box of ' + s);
        }
      }
      for (const n of document.body.querySelectorAll('*')) {
        const x = getComputedStyle(n).overflowX;
        if ((x === 'auto' || x === 'scroll') && shown(n)) wider(n, 'a scroll box on the screen');
      }
      return out;
    }""", list(selectors))
