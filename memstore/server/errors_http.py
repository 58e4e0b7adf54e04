"""Every error leaves the app as problem+json: memstore's, FastAPI's validation, routing's.

Also the cap on request bodies (``MEMSTORE_SERVE_MAX_BODY_BYTES``): a larger
``Content-Length`` is refused with 413 before the body is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstore.config import Settings
from memstore.errors import AuthenticationError, InvalidInputError, MemstoreError, RateLimitedError
from memstore.server.problems import (
    BODY_TOO_LARGE,
    INTERNAL,
    METHOD_NOT_ALLOWED,
    NOT_FOUND_ROUTE,
    PROBLEM_JSON,
    PROBLEMS,
    ProblemType,
    log,
    problem,
    problem_of,
)

INVALID = PROBLEMS[InvalidInputError]


def problem_response(
    body: dict[str, Any], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(body, status_code=body["status"], media_type=PROBLEM_JSON, headers=headers)


def _headers(exc: MemstoreError, body: dict[str, Any]) -> dict[str, str] | None:
    if isinstance(exc, AuthenticationError):
        return {"WWW-Authenticate": 'Bearer realm="memstore"'}
    if isinstance(exc, RateLimitedError):
        return {"Retry-After": str(body["retry_after"])}
    return None


async def _memstore_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemstoreError)
    body = problem_of(exc, instance=request.url.path)
    return problem_response(body, _headers(exc, body))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # Where and why, never the input itself (it may be large, or private).
    errors = [
        {"loc": [str(part) for part in error.get("loc", ())], "msg": str(error.get("msg", ""))}
        for error in exc.errors()[:20]
    ]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    detail = f"{'.'.join(first['loc']) or 'request'}: {first['msg']}"
    return problem_response(problem(INVALID, detail, errors=errors, instance=request.url.path))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    kind = {404: NOT_FOUND_ROUTE, 405: METHOD_NOT_ALLOWED, 413: BODY_TOO_LARGE}.get(
        exc.status_code, ProblemType(exc.status_code, "http", "HTTP error")
    )
    detail = exc.detail if isinstance(exc.detail, str) else kind.title
    return problem_response(problem(kind, detail, instance=request.url.path), exc.headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return problem_response(
        problem(INTERNAL, "the server could not complete the request", instance=request.url.path)
    )


class BodyTooLarge(StarletteHTTPException):
    """The body being read passed the cap (raised by :class:`BodyLimit`'s receive): an
    HTTP error, so a route reading its body answers 413 through the handlers."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than {limit} bytes")


class BodyLimit:
    """Refuse a request whose body is larger than ``limit`` bytes (413).

    A larger ``Content-Length`` is refused before the body is read. A body sent
    without one (``Transfer-Encoding: chunked``) is counted as it arrives and
    refused as soon as it passes the cap, so no route or transport (REST or MCP)
    ever holds more than ``limit`` bytes of it.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _refusal(self, scope: Scope) -> JSONResponse:
        return problem_response(
            problem(
                BODY_TOO_LARGE,
                f"the request body is larger than {self.limit} bytes",
                limit=self.limit,
                instance=scope.get("path"),
            )
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refusal(scope)(scope, receive, send)
                return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, sending)
        except BodyTooLarge:
            if started:
                raise
            await self._refusal(scope)(scope, receive, send)


def install(app: FastAPI, settings: Settings) -> None:
    """Register the handlers and the body cap on ``app``."""
    app.add_exception_handler(MemstoreError, _memstore_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    app.add_middleware(BodyLimit, limit=settings.serve_max_body_bytes)


__all__ = ["BodyLimit", "BodyTooLarge", "install", "problem_response"]
