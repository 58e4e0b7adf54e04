"""The statements of a maintenance pass (``maintenance.sql``)."""

from __future__ import annotations

import json
from datetime import datetime
from importlib.resources import files
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memstore.db.queries import named_queries

QUERIES = {
    name: sa.text(sql)
    for name, sql in named_queries(
        files("memstore.graph").joinpath("maintenance.sql").read_text()
    ).items()
}


def lock(conn: Connection, namespace_id: int) -> None:
    """Wait for, then hold until the transaction ends, the namespace's maintenance lock."""
    conn.execute(QUERIES["lock"], {"ns": namespace_id})


def decayed_through(conn: Connection, namespace_id: int) -> datetime | None:
    """How far an earlier pass applied decay (None: never)."""
    found: datetime | None = conn.execute(
        QUERIES["decayed_through"], {"ns": namespace_id}
    ).scalar_one()
    return found


def summarise_activations(conn: Connection, namespace_id: int, before: datetime) -> tuple[int, int]:
    """Summarise and remove the access log's rows older than ``before``; returns (rows
    summarised, summary rows written or merged into)."""
    row = conn.execute(QUERIES["summarise"], {"ns": namespace_id, "before": before}).one()
    return int(row.summarised), int(row.summaries)


def record_run(
    conn: Connection,
    namespace_id: int,
    *,
    steps: int,
    through: datetime | None,
    report: dict[str, Any],
) -> None:
    """Append what a pass did to ``maintenance_runs``."""
    conn.execute(
        QUERIES["record_run"],
        {
            "ns": namespace_id,
            "steps": steps,
            "decayed_through": through,
            "report": json.dumps(report, default=str),
        },
    )
