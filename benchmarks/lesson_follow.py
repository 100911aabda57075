"""How fast the projector and a phone follow the teacher on a lesson's applet stage (issue 50 must 3:
"within a second"). Prints figures; no test bounds them.

    python -m benchmarks.lesson_follow                 # 12 steps of Generation, the shipped lesson
    python -m benchmarks.lesson_follow --steps 30

A real `python -m app` on the shipped models; Debian's Chromium (playwright) with three screens: the
teacher at 1280x720 (logged in), the projector's own link at 1024x768 (no login) and a phone at
390x844. The class is put on the shipped lesson's "Be the GPT" stage; each step clicks Step in the
teacher's applet, and the stopwatch runs from the click until (1) the session's state holds the new
settings (the teacher's page heard its applet and sent them), (2) the projector's and (3) the phone's
frame has loaded the page with them and drawn its distribution (its bars have the new character's
row). Per step: the three times; then min / median / max over the steps.

What the times are made of: the teacher's page hears its applet's address change at once
(history.replaceState), one PUT; the server's watcher polls the database every 0.25 s
(app/classes/events.py) and wakes every stream; each follower loads the applet page with the new
address in a second frame and swaps it in once loaded (static/lib/class_applet.js), and the page asks
the server for the next character's distribution."""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from app.config import REPO
from benchmarks.common import cpu, start_server, stop_server

TOKEN = "lesson-follow-benchmark-token"
STAGE = 2  # the shipped lesson's "Be the GPT: the next character" (app/lessons/shipped/what-pretraining-is.json)
FRAME = "iframe.c-applet-frame:not(.c-applet-next)"
SHOWN = """(want) => { const f = document.querySelector('iframe.c-applet-frame:not(.c-applet-next)');
  if (!f || !f.contentWindow) return false;
  const out = new URLSearchParams(f.contentWindow.location.search).get('out') || '';
  if (out !== want) return false;
  const d = f.contentDocument; return !!d && d.readyState === 'complete' && d.querySelectorAll('.bar-row').length > 0; }"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_server(REPO / "models", ["--data-dir", tmp, "--instructor-token", TOKEN,
                                                    "--public-url", "http://127.0.0.1"], Path(tmp) / "server.log")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        try:
            code = httpx.post(f"{base}/api/sessions", json={"lesson": "what-pretraining-is"}, headers=auth).json()["code"]
            key = httpx.get(f"{base}/api/sessions/{code}", headers=auth).json()["projector_key"]
            rows = []
            with sync_playwright() as pw:
                b = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
                teacher = b.new_context(viewport={"width": 1280, "height": 720}, base_url=base).new_page()
                teacher.goto(f"/login#token={TOKEN}")
                teacher.wait_for_url(lambda url: "/login" not in url)
                teacher.goto(f"/class?code={code}")
                wall = b.new_context(viewport={"width": 1024, "height": 768}, base_url=base).new_page()
                wall.goto(f"/class?code={code}&projector=1#key={key}")
                phone = b.new_context(viewport={"width": 390, "height": 844}, base_url=base, is_mobile=True,
                                      has_touch=True).new_page()
                phone.goto(f"/join?code={code}")
                phone.fill("#j-name", "Bench")
                phone.click("#j-go")
                httpx.put(f"{base}/api/sessions/{code}/state", json={"stage": STAGE}, headers=auth)
                for page in (teacher, wall, phone):
                    page.wait_for_selector(FRAME)
                step = teacher.frame_locator(FRAME).get_by_role("button", name="Step")
                step.first.wait_for()
                time.sleep(2)
                for _ in range(args.steps):
                    before = teacher.eval_on_selector(FRAME, "f => new URLSearchParams(f.contentWindow.location.search).get('out') || ''")
                    t0 = time.monotonic()
                    step.first.click()
                    while True:  # the teacher's applet wrote its new text
                        out = teacher.eval_on_selector(FRAME, "f => new URLSearchParams(f.contentWindow.location.search).get('out') || ''")
                        if out != before:
                            break
                        time.sleep(0.01)
                    sent = None
                    while sent is None:
                        query = httpx.get(f"{base}/api/sessions/{code}", headers=auth).json()["applet"]["query"]
                        if dict(httpx.QueryParams(query)).get("out") == out:
                            sent = time.monotonic() - t0
                        else:
                            time.sleep(0.01)
                    times = {"state_s": sent}
                    waiting = {"projector_s": wall, "phone_s": phone}
                    while waiting and time.monotonic() - t0 < 30:  # both followers polled in turn: each time is its own
                        for name, page in list(waiting.items()):
                            if page.evaluate(SHOWN, out):
                                times[name] = time.monotonic() - t0
                                del waiting[name]
                        time.sleep(0.01)
                    if waiting:
                        raise SystemExit(f"{', '.join(waiting)} did not follow within 30 s")
                    rows.append(times)
                    print(json.dumps({k: round(v, 3) for k, v in times.items()}))
                    time.sleep(0.5)
                b.close()
        finally:
            stop_server(proc)
    summary = {k: {"min": round(min(r[k] for r in rows), 3), "median": round(statistics.median(r[k] for r in rows), 3),
                   "max": round(max(r[k] for r in rows), 3)} for k in rows[0]}
    print(json.dumps({"steps": len(rows), "cpu": cpu(), "seconds_after_the_click": summary}, indent=1))


if __name__ == "__main__":
    main()
