"""benchmarks/http_overhead.py's wrk path: its script, its parser of wrk's summary (a captured one and,
where wrk is installed, a real short run against bare FastAPI), and the docs/serving.md table it renders.
No timing is asserted."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from app.config import REPO
from benchmarks import http_overhead as bench  # the benchmark's own parser and table, tested directly
from tests.app.run_servers import free_port

CAPTURED = """Running 1s test @ http://127.0.0.1:8765/api/echo
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.93ms    6.87ms  59.02ms   96.18%
    Req/Sec     1.52k   365.15     1.77k    90.00%
  1517 requests in 1.00s, 217.77KB read
Requests/sec:   1510.60
Transfer/sec:    216.85KB
"""

CAPTURED_ERRORS = """Running 10s test @ http://127.0.0.1:8000/api/next-token
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   812.40us    1.18ms   1.02s    85.03%
    Req/Sec     6.31k   273.87     6.77k    60.00%
  62830 requests in 1.00m, 0.92MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 6283
Requests/sec:   1047.10
Transfer/sec:      0.92MB
"""


def test_parses_a_captured_summary():
    assert bench.parse_wrk(CAPTURED) == {"requests": 1517, "seconds": 1.0, "rate": 1510.60, "latency_ms": 3.93,
                                         "non_2xx": 0, "socket_errors": 0}


def test_parses_other_units_refusals_and_socket_errors():
    got = bench.parse_wrk(CAPTURED_ERRORS)
    assert got["requests"] == 62830 and got["seconds"] == 60.0 and got["rate"] == 1047.10
    assert got["latency_ms"] == pytest.approx(0.8124)
    assert got["non_2xx"] == 6283 and got["socket_errors"] == 5


def test_anything_else_is_refused():
    with pytest.raises(ValueError):
        bench.parse_wrk("unable to connect to 127.0.0.1:1 Connection refused\n")


def test_script_posts_the_body_verbatim():
    body = json.dumps({"text": "a]]b]=]c [MASK]", "top_k": 8}).encode()
    script = bench.lua_script(body)
    assert 'wrk.method = "POST"' in script and 'wrk.headers["Content-Type"] = "application/json"' in script
    assert "wrk.body = [==[" + body.decode() + "]==]" in script  # a long bracket the body does not contain
    assert 'wrk.headers["Accept-Encoding"]' not in script
    assert 'wrk.headers["Accept-Encoding"] = "gzip, deflate"' in bench.lua_script(body, accept_gzip=True)


def test_renders_the_readme_table():
    row = {"rate": 300.0, "server_ms": 3.0, "wall_ms": 3.3, "requests": 3000, "latency_ms": 26.0,
           "non_2xx": 0, "socket_errors": 0}
    data = {"date": "2026-01-01", "cpu": "Some CPU, 2 cores, flags avx2 fma, load average 0.1",
            "load_average_after": 0.2,
            "settings": {"seconds": 10, "connections": 8, "accept_gzip": False, "log_level": "info",
                         "server_core": 0, "client_core": 1, "model_calls": 200},
            "rows": [{**row, "endpoint": "mask-fill", "model_ms": 2.5, "overhead_ms": 0.5},
                     {**row, "endpoint": bench.BARE, "model_ms": None, "overhead_ms": 0.4, "rate": 2500.0}]}
    text = bench.render(data)
    assert "| endpoint | served, 1 core (req/s) | model time (ms) | server time per request (ms) | overhead (ms) |" in text
    assert "| mask-fill | 300 | 2.50 | 3.00 | 0.50 | 1.2 x |" in text
    assert f"| {bench.BARE} | 2,500 | – | 3.00 | 0.40 | 1.0 x |" in text
    assert "Some CPU, 2 cores, flags avx2 fma, load average 0.1 at the start, 0.2 at the end" in text


def test_without_wrk_it_says_so_and_fails(monkeypatch, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert bench.main([]) == 2
    assert "wrk is not installed" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (apt-get install wrk)")
def test_parses_a_real_short_run(tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "benchmarks.bare_fastapi:app", "--port", str(port),
                               "--log-level", "warning"], cwd=str(REPO), env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=1):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the bare app did not start"
                time.sleep(0.2)
        script = tmp_path / "post.lua"
        script.write_text(bench.lua_script(json.dumps({"text": "the [MASK]ing", "top_k": 8}).encode()))
        core = min(os.sched_getaffinity(0))
        got = bench.run_wrk(f"http://127.0.0.1:{port}/api/echo", script, 1, 2, core)
    finally:
        server.terminate()
        server.wait(timeout=15)
    assert got["requests"] > 0 and got["rate"] > 0 and got["seconds"] > 0
    assert got["non_2xx"] == 0 and got["latency_ms"] > 0
