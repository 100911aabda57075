"""Server settings: defaults < environment (PLAYGROUND_*) < command line (app/__main__.py)."""
from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO = Path(__file__).resolve().parents[1]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PLAYGROUND_")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    # One worker by default: uvicorn's multi-worker mode drops TCP_NODELAY (uvicorn issue 3149),
    # which adds ~40 ms to every keep-alive request; on 2 cores one worker serves as much.
    workers: int = Field(1, ge=1)
    models_dir: Path = REPO / "models"  # the default model set (the shipped one: id "shakespeare")
    # More model sets to serve beside it (folders of the same shape), listed at startup and
    # loaded on first use; from the environment as a JSON list.
    extra_models: list[Path] = []
    # Model sets (other than the default) kept loaded at once; the least recently used is dropped.
    max_loaded_sets: int = Field(6, ge=1, le=1000)
    templates_dir: Path = REPO / "templates"
    static_dir: Path = REPO / "static"
    # onnxruntime intra-op threads per session. 1 lets concurrent requests use the cores instead
    # of one request's threads fighting the next one's.
    threads: int = Field(1, ge=1, le=64)
    # Starlette runs plain `def` endpoints in anyio's thread pool (40 tokens by default);
    # 0 keeps that default. Raising it did not help: model runs are capped by parallel_runs, so
    # extra threads would only wait there.
    thread_pool: int = Field(0, ge=0, le=1024)
    # Model runs at once across both models, admitted first come first served; 0 = cores //
    # threads. Measured with the shipped-size BERT at 50 connections on 2 cores: 2 runs at once
    # served ~40 % more requests than 40 at once, with a tight latency tail and ~140 MB instead
    # of ~210 MB resident (each run in flight holds onnxruntime working memory).
    parallel_runs: int = Field(0, ge=0, le=1024)
    max_body_bytes: int = Field(64 * 1024, ge=1)
    # Inference requests (POST /api/*, GET /api/generate/stream; an open stream counts) in flight
    # at once per process; the next one is answered 503 + Retry-After at once instead of queueing
    # without bound (app/admission.py). 0 = no cap. Never per IP: a class shares one NAT address.
    max_concurrent_requests: int = Field(64, ge=0, le=100_000)
    # Generations (POST /api/generate and the streams: up to 1000 model runs each) may hold at most
    # this fraction of those slots, so that long generations never fill them all.
    generation_share: float = Field(0.5, gt=0, le=1)
    # Server-sent events: one event per ~flush_ms or per flush_chars characters, whichever
    # comes first, so HTTP framing does not cap generation speed.
    stream_flush_ms: float = Field(10.0, gt=0)
    stream_flush_chars: int = Field(64, ge=1)
    # Slow clients (app/middleware.py, app/protocol.py): a request body must arrive in full within
    # body_timeout_s (else 408); request headers within header_timeout_s of the connection's start
    # or its last response (else the connection is closed: Slowloris); a connection whose writes
    # stay blocked on a client that does not read for send_timeout_s is aborted (a client that
    # reads, however slowly, keeps unblocking them and is never cut). 0 = no limit.
    body_timeout_s: float = Field(10.0, ge=0)
    header_timeout_s: float = Field(10.0, ge=0)
    send_timeout_s: float = Field(30.0, ge=0)
    # Host names served besides localhost, this machine's name and its own addresses
    # (app/hosts.py); "*" = any. From the environment as a JSON list.
    allowed_hosts: list[str] = []
    # Proxies whose X-Forwarded-For/-Proto are believed (comma-separated addresses, "*" = any);
    # empty = none: without a proxy, those headers are whatever the client wrote.
    forwarded_allow_ips: str = ""
    # Compress answers of at least this many bytes when the client accepts gzip (never the
    # event streams); 0 = off.
    gzip_min_bytes: int = Field(1000, ge=0)
    log_level: str = "info"
    # Training runs (app/runs/, the /train page). Runs persist under data_dir (gitignored here).
    data_dir: Path = REPO / "data"
    # Who may start, cancel and delete runs; unset = `python -m app` makes a random one and prints it.
    instructor_token: str | None = Field(None, min_length=8)
    max_runs: int = Field(20, ge=1, le=10_000)  # stored runs; starting one more answers 507
    max_corpus_bytes: int = Field(2_000_000, ge=10_000)  # pasted or uploaded training text
    run_threads: int = Field(0, ge=0, le=256)  # trainer threads; 0 = cores - 1 (at least 1)
    run_nice: int = Field(10, ge=0, le=19)  # the trainer's CPU priority below the server's
    run_test_presets: bool = False  # accept the seconds-long "tiny" preset (tests only)
    # Class sessions (app/classes/): a SQLite file in data_dir unless a database URL is given
    # (postgresql://user:pass@host/db for several machines); the address students reach when the
    # server sits behind a proxy or a name (else its LAN address); hours a session lives.
    database_url: str | None = None
    public_url: str | None = Field(None, pattern=r"^https?://[^/\s]+/?$")
    class_expiry_hours: float = Field(12.0, gt=0, le=24 * 30)
    # New nicknames per client address (app/classes/guard.py): this many at once, then one per
    # class_join_every_s: 6 at once + 4 a minute, so that three addresses cannot fill a class of 60.
    # A class behind one NAT address shares it: raise it there.
    class_join_burst: int = Field(6, ge=1, le=100_000)
    class_join_every_s: float = Field(15.0, gt=0, le=3600)
    # Models on the phones (static/lib/compute.js): every page with a device model downloads it
    # a few seconds after it opens (~10 MB a phone), even while this server answers. Off: a phone
    # downloads it only when this server is busy, slow or unreachable (the class Wi-Fi stays free).
    models_on_phones: bool = False
