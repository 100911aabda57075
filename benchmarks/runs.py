"""The timings a class feels around a live training run, measured through HTTP (prints figures):

    python -m benchmarks.runs                       # own server on a free port, a 1-minute run
    python -m benchmarks.runs --minutes 3 --preset 3min
    python -m benchmarks.runs --url http://host:8000 --token T   # a running server

- first progress event on screen after Start (target <= 5 s)
- the longest gap between two samples (target: a new sample at least every 15 s)
- the final model playable in the applets after training ends (target <= 30 s, ONNX export included):
  from the `exporting` event to the first successful /api/generate with the run's model id.

`start_run`, `wait_run` and `cancel_run` are plain helpers for other benchmarks (benchmarks/serving.py
measures serving latency with a run active).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.error
import urllib.request


def _call(method: str, url: str, token: str | None = None, body: dict | None = None, timeout: float = 30):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def start_run(base: str, token: str, minutes: float | None = 1.0, preset: str | None = None,
              families=("gpt", "bert"), corpus: str | None = None, name: str = "benchmark") -> str:
    """Start a run as the instructor; returns its id (raises urllib.error.HTTPError on 4xx/5xx)."""
    body = {"families": list(families), "name": name}
    if minutes is not None:
        body["minutes"] = minutes
    if preset:
        body["preset"] = preset
    if corpus is not None:
        body["corpus"] = corpus
    return _call("POST", f"{base}/api/runs", token, body)["id"]


def cancel_run(base: str, token: str, run_id: str) -> dict:
    return _call("DELETE", f"{base}/api/runs/{run_id}", token)


def wait_run(base: str, run_id: str, timeout: float = 3600) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = _call("GET", f"{base}/api/runs/{run_id}")
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.5)
    raise TimeoutError(run_id)


def events(base: str, run_id: str, area: str = "runs"):
    """(seconds since the call, event, data) for each event of the run's (or fine-tune's) stream, as it arrives."""
    t0 = time.monotonic()
    with urllib.request.urlopen(f"{base}/api/{area}/{run_id}/events", timeout=600) as r:
        kind, data = None, None
        for raw in r:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif not line and kind:
                yield time.monotonic() - t0, kind, data
                kind, data = None, None


def measure(base: str, token: str, minutes: float, preset: str | None) -> dict:
    t_post = time.monotonic()
    run_id = start_run(base, token, minutes, preset)
    offset = time.monotonic() - t_post
    first_progress = exporting = None
    samples = []
    for t, kind, data in events(base, run_id):
        t += offset
        if kind == "progress" and first_progress is None:
            first_progress = t
        elif kind == "sample":
            samples.append(t)
        elif kind == "exporting":
            exporting = t
            break
        elif kind == "status" and data.get("status") not in ("queued", "running"):
            raise RuntimeError(f"the run ended early: {data.get('status')} {data.get('reason')}")
    playable = None
    while playable is None and time.monotonic() - t_post < exporting + 300:
        try:
            _call("POST", f"{base}/api/generate", None, {"prompt": "The ", "max_new_tokens": 5, "model": run_id})
            playable = time.monotonic() - t_post
        except urllib.error.HTTPError:
            time.sleep(0.2)
    run = wait_run(base, run_id)
    gaps = [b - a for a, b in zip(samples, samples[1:])]
    return {"run": run_id, "status": run["status"], "first_progress_s": first_progress, "samples": len(samples),
            "max_sample_gap_s": max(gaps) if gaps else None, "training_ended_s": exporting,
            "playable_after_training_s": playable - exporting if playable and exporting else None,
            "trainer_reported_final_after_s": run.get("playable_after_s")}


def own_server(token: str):
    import socket
    import threading

    import uvicorn

    from app.config import Settings
    from app.main import create_app

    settings = Settings(data_dir=tempfile.mkdtemp(prefix="playground-runs-"), instructor_token=token)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.runs", description=__doc__.split("\n")[0])
    p.add_argument("--url", default=None, help="a running server (default: start one here)")
    p.add_argument("--token", default="benchmark-token", help="its instructor token")
    p.add_argument("--minutes", type=float, default=1.0)
    p.add_argument("--preset", default=None)
    args = p.parse_args(argv)
    base, server = (args.url.rstrip("/"), None) if args.url else own_server(args.token)
    try:
        r = measure(base, args.token, args.minutes, args.preset)
    finally:
        if server is not None:
            server.should_exit = True
    print(f"run {r['run']} ({args.minutes:g} min, preset {args.preset or 'nearest'}): {r['status']}")
    print(f"  first progress event after Start   {r['first_progress_s']:.1f} s   (target <= 5 s)")
    gap = r["max_sample_gap_s"]
    print(f"  samples: {r['samples']}, longest gap       {gap:.1f} s   (target <= 15 s)" if gap else "  samples: fewer than 2")
    print(f"  final model playable after training {r['playable_after_training_s']:.1f} s   (target <= 30 s; "
          f"the trainer reports its final set {r['trainer_reported_final_after_s']} s after its last step)")


if __name__ == "__main__":
    main()
