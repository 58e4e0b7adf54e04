"""``memstore serve``: the REST API, MCP over HTTP and the API keys they check (docs/server.md).

Needs the ``server`` extra (FastAPI, uvicorn, the MCP SDK); nothing here is
imported by the library itself.
"""
