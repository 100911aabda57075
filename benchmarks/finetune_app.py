"""The timings a class feels around a fine-tune started from the browser, through HTTP (prints figures):

    python -m benchmarks.finetune_app                                 # own server, the default grid
    python -m benchmarks.finetune_app --task backwards --sizes 8,32 --seeds 2
    python -m benchmarks.finetune_app --url http://host:8000 --token T   # a running server

- the first point on the plot after Start: the first `result` event (target <= 10 s)
- the whole grid (3 arms x 4 sizes x 3 seeds on a shipped task by default) (target <= 120 s)
- a finished classifier playable: from its `classifier` event to the first successful
  POST /api/classify with its id (target <= 10 s)
"""
from __future__ import annotations

import argparse
import time
import urllib.error

from benchmarks.runs import _call, events, own_server


def measure(base: str, token: str, body: dict) -> dict:
    t_post = time.monotonic()
    job = _call("POST", f"{base}/api/finetunes", token, body)
    offset = time.monotonic() - t_post
    first = None
    playable = []
    for t, kind, data in events(base, job["id"], area="finetunes"):
        t += offset
        if kind == "result" and first is None:
            first = t
        elif kind == "classifier":
            model = f"{job['id']}.{data['arm']}"
            while True:
                try:
                    _call("POST", f"{base}/api/classify", None, {"model": model, "text": "a fine day"})
                    break
                except urllib.error.HTTPError:
                    time.sleep(0.1)
            playable.append(time.monotonic() - t_post - t)
        elif kind == "status" and data.get("status") not in ("queued", "running"):
            break
    detail = _call("GET", f"{base}/api/finetunes/{job['id']}")
    return {"id": job["id"], "status": detail["status"], "reason": detail.get("reason"), "first_result_s": first,
            "grid_s": (detail["ended"] or time.time()) - detail["created"], "fine_tunes": detail["done"],
            "playable_s": playable, "summary": detail["summary"]}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.finetune_app", description=__doc__.split("\n")[0])
    p.add_argument("--url", default=None, help="a running server (default: start one here)")
    p.add_argument("--token", default="benchmark-token", help="its instructor token")
    p.add_argument("--model", default="shakespeare")
    p.add_argument("--task", default="spelling")
    p.add_argument("--sizes", default="8,32,128,all")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=None)
    args = p.parse_args(argv)
    sizes = [s if s == "all" else int(s) for s in args.sizes.split(",")]
    body = {"model": args.model, "task": args.task, "sizes": sizes, "seeds": args.seeds}
    if args.steps:
        body["steps"] = args.steps
    base, server = (args.url.rstrip("/"), None) if args.url else own_server(args.token)
    try:
        r = measure(base, args.token, body)
    finally:
        if server is not None:
            server.should_exit = True
    print(f"fine-tune {r['id']} ({args.task}, sizes {args.sizes}, {args.seeds} seeds): {r['status']} {r['reason'] or ''}")
    print(f"  first point on the plot after Start  {r['first_result_s']:.1f} s   (target <= 10 s)")
    print(f"  whole grid ({r['fine_tunes']} fine-tunes)           {r['grid_s']:.1f} s   (target <= 120 s)")
    worst = max(r["playable_s"]) if r["playable_s"] else None
    print(f"  classifier playable after export     {worst:.1f} s worst of {len(r['playable_s'])}   (target <= 10 s)"
          if worst is not None else "  no classifier exported")
    for arm, cells in (r["summary"] or {}).items():
        print(f"  {arm:8s}" + "  ".join(f"{k}: {100 * v['mean']:.1f} %" for k, v in cells.items()))


if __name__ == "__main__":
    main()
