"""The yardstick of benchmarks/http_overhead.py: bare FastAPI + pydantic, one POST route.

Served by plain uvicorn (`python -m uvicorn benchmarks.bare_fastapi:app`): no middleware, no
dependencies, no exception handlers. The route is a plain `def`, like the playground's model
endpoints (a blocking model run belongs in the thread pool), so FastAPI's own costs are the same
kind: read and parse the JSON body, validate it with pydantic, one thread-pool hop, serialise a
small response model. It takes the mask-fill request's fields and answers without any work."""
from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel

PATH = "/api/echo"


class EchoRequest(BaseModel):
    text: str
    top_k: int = 8
    model: str | None = None
    positions: list[int] | None = None


class EchoResponse(BaseModel):
    chars: int
    top_k: int


app = FastAPI()


@app.post(PATH, response_model=EchoResponse)
def echo(req: EchoRequest) -> EchoResponse:
    return EchoResponse(chars=len(req.text), top_k=req.top_k)
