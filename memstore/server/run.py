"""Running the app under uvicorn: ``memstore serve``.

uvicorn handles SIGTERM and SIGINT gracefully: it stops accepting
connections, lets the requests in flight finish (up to
:data:`GRACEFUL_SECONDS`), then runs the app's shutdown, which closes the
store's connection pool (and stops the embedded server, when it started one).
"""

from __future__ import annotations

from memstore.config import Settings

GRACEFUL_SECONDS = 30


def serve(settings: Settings, *, host: str, port: int, log_level: str = "info") -> None:
    """Serve the REST API (and MCP, when built in) until SIGTERM or SIGINT."""
    import uvicorn

    from memstore.server.app import create_app

    config = uvicorn.Config(
        create_app(None, settings),
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        # Behind a reverse proxy, trust X-Forwarded-* from localhost only
        # (uvicorn's default); see docs/server.md.
        proxy_headers=True,
        server_header=False,
        access_log=settings.serve_access_log,
    )
    uvicorn.Server(config).run()


__all__ = ["GRACEFUL_SECONDS", "serve"]
