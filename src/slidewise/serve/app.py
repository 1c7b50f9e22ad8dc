"""The HTTP JSON API of ``slidewise serve`` (a Starlette application over a :class:`~slidewise.serve.service.Service`).

Errors are JSON ``{"error": message}``: 400 for malformed JSON, missing fields and bad queries (the
parser's message), 404 for an unknown query or no archive, 409 for a taken name; never a 500 for bad input.
``GET /`` is the status page.
"""

from __future__ import annotations

import asyncio
import json
from importlib import resources
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from slidewise.errors import SlidewiseError
from slidewise.manager.core import NameTaken

if TYPE_CHECKING:
    from slidewise.serve.service import Service

__all__ = ["make_app"]

#: the status page (``GET /``): the queries, a throughput chart and a chosen query's latest answers, polling /stats
PAGE = resources.files("slidewise.serve").joinpath("page.html").read_text()


class BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _body(request: Request, required: tuple[str, ...]) -> dict:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequest(400, f"the body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise BadRequest(400, f"the body must be a JSON object with {', '.join(required)}")
    missing = [k for k in required if not isinstance(body.get(k), str)]
    if missing:
        fields = ", ".join(f'"{k}": ...' for k in required)
        raise BadRequest(400, f"missing or not a string: {', '.join(missing)} (send {{{fields}}})")
    return body


def _line(row: tuple) -> bytes:
    seq, ts, sign, values = row
    return (json.dumps({"seq": seq, "ts": ts, "sign": sign, "row": values}, default=str) + "\n").encode()


def make_app(service: Service) -> Starlette:
    """The routes of the API over ``service``."""

    def guard(handler):
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except BadRequest as e:
                return _error(e.status, str(e))
            except NameTaken as e:
                return _error(409, str(e))
            except SlidewiseError as e:
                return _error(400, str(e))

        return endpoint

    async def register(request: Request) -> Response:
        body = await _body(request, ("name", "query"))
        priority = body.get("priority", 0)
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise BadRequest(400, f"priority must be an integer, got {priority!r}")
        await asyncio.to_thread(service.register, body["name"], body["query"], priority)
        return JSONResponse({"name": body["name"]}, status_code=201)

    async def queries(request: Request) -> Response:
        stats = service.qm.stats()["queries"]
        return JSONResponse([{"name": n, "query": r.query.text, **stats[n]} for n, r in list(service.qm.queries.items()) if n in stats])

    async def remove(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in service.qm.queries:
            raise BadRequest(404, f"no query named {name}")
        await asyncio.to_thread(service.remove, name)
        return Response(status_code=204)

    async def results(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in service.qm.queries:
            raise BadRequest(404, f"no query named {name}")
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError:
            raise BadRequest(400, f"after must be an integer sequence number, got {request.query_params['after']!r}") from None
        follow = request.query_params.get("follow", "") in ("1", "true", "yes")
        rows = await asyncio.to_thread(service.results, name, after)
        if not follow:
            return Response(b"".join(_line(r) for r in rows), media_type="application/x-ndjson")

        async def stream():
            last = after
            batch = rows
            while True:
                for r in batch:
                    yield _line(r)
                    last = r[0]
                if await request.is_disconnected() or service.stopping or name not in service.qm.queries:
                    return
                await asyncio.sleep(0.2)
                batch = await asyncio.to_thread(service.results, name, last)

        return StreamingResponse(stream(), media_type="application/x-ndjson")

    async def one_time(request: Request) -> Response:
        body = await _body(request, ("query",))
        return JSONResponse(await asyncio.to_thread(service.one_time, body["query"]))

    async def stats(request: Request) -> Response:
        return JSONResponse(service.stats())

    async def probe(request: Request) -> Response:
        if service.archive is None:
            raise BadRequest(404, "no archive is served (start slidewise serve with --archive DIR)")
        if "key" not in request.query_params:
            raise BadRequest(400, "missing the key to probe (GET /archive/probe?key=VALUE)")
        return JSONResponse(await asyncio.to_thread(service.probe, request.query_params["key"]))

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE)

    routes = [
        Route("/queries", guard(register), methods=["POST"]),
        Route("/queries", guard(queries), methods=["GET"]),
        Route("/queries/{name}", guard(remove), methods=["DELETE"]),
        Route("/queries/{name}/results", guard(results), methods=["GET"]),
        Route("/query", guard(one_time), methods=["POST"]),
        Route("/stats", guard(stats), methods=["GET"]),
        Route("/archive/probe", guard(probe), methods=["GET"]),
        Route("/", page, methods=["GET"]),
    ]
    return Starlette(routes=routes)
