"""The models on the student's device (static/lib/engine.js) measured in Chromium against the server.

    python -m benchmarks.browser_engine [--models-dir models] [--port 0] [--class-size 30] [--json]
    python -m benchmarks.browser_engine --phone [--docs]   # a throttled phone (benchmarks/phone_profile.py)

Prints: bytes downloaded by a first visit to /generate that loads the engine and both models, and by
a second visit (the Cache API and the immutable URLs: the models are not downloaded again); the time
from the engine's start to ready; per generated character and per mask-fill on the device versus
through the server (the same page asking the same server over loopback HTTP); the renderer's memory
with GPT and BERT loaded; and the server's CPU seconds for a class of N students who each load the
page and compute 200 characters locally, versus the same N generations computed by the server.
Needs Debian's chromium (/usr/bin/chromium) and playwright. Runs `python -m app` on loopback.

--phone measures a student's phone instead (benchmarks/phone_profile.py): the static copy under
/playground/ on a plain server behind slow 4G, CPU 4x slower: bytes and seconds to the first generated
character on a first and a second visit; and the bytes a class moves over the Wi-Fi on the live server
with and without --models-on-phones. --docs writes those figures into docs/static-build.md.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import httpx

from app.config import REPO
from benchmarks.common import cpu, free_port, start_server, stop_server

CHROMIUM = "/usr/bin/chromium"
BODY = {"prompt": "To be, or not to be, ", "max_new_tokens": 200, "seed": 1}
MASK = {"text": "To be, or not to [MASK]e, that is the qu[MASK]stion"}

LOAD = """async () => {
  const t0 = performance.now();
  const engine = await import('/static/lib/engine.js');
  await engine.ready();
  return {ready_ms: performance.now() - t0, usage: engine.usage()};
}"""
TRANSFERRED = """() => performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))
  .reduce((sum, e) => sum + (e.transferSize || 0), 0)"""
TIMINGS = """async ([body, mask, n]) => {
  const engine = await import('/static/lib/engine.js');
  const post = (path, b) => fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'},
                                          body: JSON.stringify(b)}).then((r) => r.json());
  await engine.generate(body); await post('/api/generate', body);  // warm both
  const time = async (f) => { const t = performance.now(); for (let i = 0; i < n; i++) await f(); return (performance.now() - t) / n; };
  const steps = body.max_new_tokens;
  return {
    device_generate_ms: await time(() => engine.generate(body)), server_generate_ms: await time(() => post('/api/generate', body)),
    device_mask_fill_ms: await time(() => engine.maskFill(mask)), server_mask_fill_ms: await time(() => post('/api/mask-fill', mask)),
    steps,
  };
}"""


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def renderer_rss_mb() -> float:
    """RSS of Chromium's renderer processes (one page open: that page's renderer)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"chromium" in cmd and b"--type=renderer" in cmd:
                rss = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS"))
                total += int(rss.split()[1])
        except (OSError, StopIteration):
            continue
    return round(total / 1024, 1)


def measure(base: str, server_pid: int, class_size: int) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {"machine": cpu()}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(base_url=base)
        page = context.new_page()
        for visit in ("first", "second"):
            page.goto("/generate", wait_until="load")
            loaded = page.evaluate(LOAD)
            page.wait_for_timeout(500)
            out[f"{visit}_visit"] = {"transferred_bytes": page.evaluate(TRANSFERRED), "ready_ms": round(loaded["ready_ms"]),
                                     "engine_downloaded_bytes": loaded["usage"]["downloaded"],
                                     "engine_from_cache_bytes": loaded["usage"]["cached"]}
        t = page.evaluate(TIMINGS, [BODY, MASK, 5])
        out["per_character_ms"] = {"device": round(t["device_generate_ms"] / t["steps"], 3),
                                   "server": round(t["server_generate_ms"] / t["steps"], 3)}
        out["per_mask_fill_ms"] = {"device": round(t["device_mask_fill_ms"], 2), "server": round(t["server_mask_fill_ms"], 2)}
        out["renderer_rss_mb"] = renderer_rss_mb()
        context.close()
        # A class: each student opens the page and generates on the device (the server only sends files) ...
        before = proc_cpu_s(server_pid)
        started = time.perf_counter()
        for _ in range(class_size):
            student = browser.new_context(base_url=base)
            p = student.new_page()
            p.goto("/generate", wait_until="load")
            p.evaluate("async (b) => (await import('/static/lib/engine.js')).generate(b)", BODY)
            student.close()
        local = proc_cpu_s(server_pid) - before
        out["class"] = {"students": class_size, "server_cpu_s_devices_compute": round(local, 2),
                        "wall_s": round(time.perf_counter() - started, 1)}
        browser.close()
    # ... versus the server computing the same generations
    before = proc_cpu_s(server_pid)
    with httpx.Client(base_url=base, timeout=120) as client:
        for _ in range(class_size):
            client.post("/api/generate", json=BODY).raise_for_status()
    out["class"]["server_cpu_s_server_computes"] = round(proc_cpu_s(server_pid) - before, 2)
    return out


DOCS = REPO / "docs" / "static-build.md"
BEGIN, END = "<!-- phone-profile: written by python -m benchmarks.browser_engine --phone --docs -->", "<!-- /phone-profile -->"


def phone(models_dir: Path, class_size: int) -> dict:
    import tempfile

    from playwright.sync_api import sync_playwright

    from app.static_build import export
    from benchmarks.phone_profile import class_bytes, static_visits

    out: dict = {"machine": cpu()}
    with tempfile.TemporaryDirectory(prefix="phone-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        export(Path(tmp) / "playground", models_dir)
        out.update(static_visits(browser, Path(tmp)))
        for on in (False, True):
            proc, base = start_server(models_dir, ["--models-on-phones"] if on else [])
            try:
                one = class_bytes(browser, base, on)
            finally:
                stop_server(proc)
            out["models_on_phones" if on else "server_computes"] = {"phone_bytes": one, "class_bytes": one * class_size}
        browser.close()
    out["class_size"] = class_size
    return out


def phone_lines(r: dict) -> list[str]:
    f, s, off, on = r["first_visit"], r["second_visit"], r["server_computes"], r["models_on_phones"]
    return [
        f"machine: {r['machine']}; Chromium 390x844, CPU 4x slower; the static copy under /playground/ on Python's "
        "http.server (no compression) behind slow 4G (180 KB/s, 562 ms)",
        f"first visit to Generation:  {f['bytes'] / 1e6:.2f} MB, first generated character after {f['first_char_s']} s "
        f"(the page said: \"{f['status_line']}\"{'; the student tapped Download at once' if f.get('asked') else ''})",
        f"second visit:               {s['bytes'] / 1e6:.2f} MB, first generated character after {s['first_char_s']} s",
        f"a class of {r['class_size']} on the live server, each opening Generation and generating 200 characters "
        f"(one phone measured, x{r['class_size']}):",
        f"  server computes (default):  {off['phone_bytes'] / 1e6:.2f} MB a phone, {off['class_bytes'] / 1e6:.1f} MB for the class",
        f"  --models-on-phones:         {on['phone_bytes'] / 1e6:.2f} MB a phone, {on['class_bytes'] / 1e6:.1f} MB for the class",
    ]


def write_docs(lines: list[str]) -> None:
    text = DOCS.read_text(encoding="utf-8")
    block = BEGIN + "\n```\n" + "\n".join(lines) + "\n```\n" + END
    if BEGIN in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOCS.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models-dir", default=str(REPO / "models"))
    parser.add_argument("--port", type=int, default=0, help="0: a free one")
    parser.add_argument("--class-size", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phone", action="store_true", help="a throttled phone on the static copy and a class's bytes")
    parser.add_argument("--docs", action="store_true", help="with --phone: write the figures into docs/static-build.md")
    args = parser.parse_args()
    if not Path(args.models_dir, "web", "manifest.json").is_file():
        raise SystemExit(f"{args.models_dir} has no web copies: python -m training web-copies {args.models_dir}")
    if args.phone:
        result = phone(Path(args.models_dir), args.class_size)
        lines = phone_lines(result)
        print(json.dumps(result, indent=1) if args.json else "\n".join(lines))
        if args.docs:
            write_docs(lines)
        return
    port = args.port or free_port()
    import benchmarks.common as common

    common.free_port = lambda: port  # start_server picks its port through free_port
    proc, base = start_server(Path(args.models_dir))
    try:
        result = measure(base, proc.pid, args.class_size)
    finally:
        stop_server(proc)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    f, s = result["first_visit"], result["second_visit"]
    print(f"machine: {result['machine']}")
    print(f"first visit:  {f['transferred_bytes'] / 1e6:.2f} MB transferred, engine ready in {f['ready_ms']} ms")
    print(f"second visit: {s['transferred_bytes'] / 1e6:.2f} MB transferred "
          f"({s['engine_from_cache_bytes'] / 1e6:.1f} MB from the Cache API), engine ready in {s['ready_ms']} ms")
    print(f"per generated character: device {result['per_character_ms']['device']} ms, "
          f"through the server {result['per_character_ms']['server']} ms")
    print(f"per mask-fill: device {result['per_mask_fill_ms']['device']} ms, through the server {result['per_mask_fill_ms']['server']} ms")
    print(f"renderer memory with GPT and BERT: {result['renderer_rss_mb']} MB")
    c = result["class"]
    print(f"server CPU for a class of {c['students']} (200 characters each): {c['server_cpu_s_devices_compute']} s when "
          f"the phones compute, {c['server_cpu_s_server_computes']} s when the server does")


if __name__ == "__main__":
    main()
