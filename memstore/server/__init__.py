"""Serving memstore over the network: the HTTP API and the MCP server (docs/server.md)."""
