"""`python -m app` / `playground`: serve the playground with uvicorn.

Options override the PLAYGROUND_* environment, which overrides the defaults (app/config.py).
They are handed to the app through the environment so that every worker process, which builds
its own app, sees the same settings.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from pydantic import ValidationError

from .classes.addresses import base_urls, students_line
from .config import Settings
from .protocol import SHUTDOWN_GRACE_S

# CLI flag -> Settings field (also the PLAYGROUND_<FIELD> environment variable)
OPTIONS = {
    "--host": ("host", str, "interface to listen on (default 127.0.0.1: this machine only)"),
    "--port": ("port", int, "TCP port (default 8000)"),
    "--workers": ("workers", int, "server processes (default 1; see docs/serving.md before raising it)"),
    "--models-dir": ("models_dir", str, "the default model set: gpt.onnx, bert.onnx, vocab.json, cards, nsp_quiz.json"),
    "--extra-models": ("extra_models", str, "more model-set folders to serve beside it, comma-separated"),
    "--threads": ("threads", int, "onnxruntime intra-op threads per model (default 1)"),
    "--thread-pool": ("thread_pool", int, "threads for blocking endpoints (default 0 = Starlette's 40)"),
    "--parallel-runs": ("parallel_runs", int, "model runs at once (default 0 = one per core)"),
    "--max-body-bytes": ("max_body_bytes", int, "largest accepted request body (default 65536)"),
    "--max-concurrent-requests": ("max_concurrent_requests", int,
                                  "model requests in flight before answering 503 (default 64; 0 = no cap)"),
    "--allowed-hosts": ("allowed_hosts", str, "host names to answer to besides localhost, this machine's "
                        "name and addresses, comma-separated (e.g. a LAN name; '*' = any)"),
    "--forwarded-allow-ips": ("forwarded_allow_ips", str, "addresses of a reverse proxy whose X-Forwarded-For/"
                              "-Proto headers are trusted (default: none)"),
    "--body-timeout": ("body_timeout_s", float, "seconds a request body may take to arrive (default 10)"),
    "--header-timeout": ("header_timeout_s", float, "seconds request headers may take to arrive (default 10)"),
    "--send-timeout": ("send_timeout_s", float, "seconds a response may stay blocked on a client that does "
                       "not read before the connection is cut (default 30)"),
    "--generation-share": ("generation_share", float, "fraction of those slots generations may hold (default 0.5)"),
    "--log-level": ("log_level", str, "uvicorn log level (default info)"),
    "--data-dir": ("data_dir", str, "where training runs are kept (default ./data)"),
    "--instructor-token": ("instructor_token", str, "the instructor's token for starting runs (default: a random one, printed)"),
    "--max-runs": ("max_runs", int, "training runs kept before starting one more is refused (default 20)"),
    "--max-corpus-bytes": ("max_corpus_bytes", int, "largest training text accepted (default 2000000)"),
    "--database-url": ("database_url", str, "class sessions' database (default: SQLite in the data folder; "
                       "postgresql://user:pass@host/db to share one between machines)"),
    "--public-url": ("public_url", str, "the address students reach when behind a proxy or a name "
                     "(e.g. https://playground.school.lan); it goes in the class QR code"),
    "--class-expiry-hours": ("class_expiry_hours", float, "hours a class session and its answers live (default 12)"),
    "--class-join-burst": ("class_join_burst", int, "new nicknames one client address may add at once (default 6; raise it for a class behind one NAT address)"),
    "--class-join-every-s": ("class_join_every_s", float, "then one new nickname per this many seconds (default 15)"),
}


def parse_args(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="playground", description="Serve the Pretraining Playground.")
    for flag, (field, kind, text) in OPTIONS.items():
        parser.add_argument(flag, dest=field, type=kind, default=None, help=text)
    parser.add_argument("--models-on-phones", dest="models_on_phones", action="store_true",
                        help="every phone downloads the models (~10 MB each) as a page opens, so it can compute "
                             "alone; by default it downloads them only when this server is busy or unreachable")
    parser.add_argument("--new-instructor-token", dest="new_instructor_token", action="store_true",
                        help="make a new instructor token (logs every browser out); by default the one kept "
                             "in the data folder survives restarts")
    args = vars(parser.parse_args(argv))
    return {k: v for k, v in args.items() if v is not None and v is not False}


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    if (sys.argv[1:] if argv is None else argv)[:1] == ["export-static"]:  # the static build (app/static_build.py)
        from .static_build import main as export_static

        return export_static((sys.argv[1:] if argv is None else argv)[1:])
    overrides = parse_args(argv)
    renew = bool(overrides.pop("new_instructor_token", False))
    for field, value in overrides.items():
        if field in ("extra_models", "allowed_hosts"):  # a list: the environment carries it as JSON
            value = json.dumps([part for part in value.split(",") if part])
        os.environ[f"PLAYGROUND_{field.upper()}"] = str(value)
    try:
        settings = Settings()  # validates the combined settings before any worker starts
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        sys.exit(f"playground: invalid setting ({problems})")
    os.environ["PLAYGROUND_MODELS_DIR"] = str(settings.models_dir.resolve())
    os.environ["PLAYGROUND_DATA_DIR"] = str(settings.data_dir.resolve())
    if not settings.instructor_token:  # as Jupyter does: one random token, printed, shared by the workers,
        from .auth import TOKEN_FILE, kept_token  # kept in the data folder so that a restart keeps every login

        token, made, unsaved = kept_token(settings.data_dir, renew)
        os.environ["PLAYGROUND_INSTRUCTOR_TOKEN"] = token
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
        logins = dict.fromkeys([f"http://{host}:{settings.port}", *base_urls(settings)])
        where = settings.data_dir / TOKEN_FILE
        kept = (f"a new one for this start only, not kept: {where} cannot hold it ({unsaved}), so a restart "
                f"makes another and logs every browser out" if unsaved else
                f"a new one, kept in {where}" if made else
                f"the one kept in {where}; --new-instructor-token makes a new one")
        print(f"Instructor login ({kept}; it starts training runs and class sessions: keep it to yourself):\n" +
              "".join(f"    {url}/login#token={token}\n" for url in logins), end="", flush=True)
    print(students_line(settings), flush=True)
    proxies = settings.forwarded_allow_ips.strip()
    uvicorn.run("app.main:create_app", factory=True, host=settings.host, port=settings.port,
                workers=settings.workers, log_level=settings.log_level.lower(),
                # header timeout, write-stall cut, JSON 400 (app/protocol.py)
                http="app.protocol:GuardedProtocol", timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
                # X-Forwarded-* only from a configured proxy (uvicorn would trust 127.0.0.1's)
                proxy_headers=bool(proxies), forwarded_allow_ips=proxies or None)


if __name__ == "__main__":
    main()
