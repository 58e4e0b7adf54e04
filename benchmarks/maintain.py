"""What one maintenance pass costs: ``ns.maintain()`` over N activation-log rows.

Loads ``--nodes`` memories, ``--activations`` access-log rows spread over them
and ``--edges`` learned edges (by INSERT ... SELECT, as the owner), plus
``--lessons`` never-applied lessons, then times: a dry run, the pass itself
(one decay step, every log row summarised: the retention is 0), and a second
pass at once (nothing due). Prints JSON.

Usage: ``python benchmarks/maintain.py [--activations 100000]`` (embedded
server in a temporary directory, or ``--database-url`` of a superuser on a
scratch database).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from datetime import timedelta

import psycopg
import sqlalchemy as sa

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--activations", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=10_000)
    parser.add_argument("--lessons", type=int, default=200)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()

    settings = Settings(data_dir=tempfile.mkdtemp(prefix="memstore-bench-maintain-"))
    with MemoryStore.open(
        args.database_url, settings=settings, embedder=HashingEmbedder()
    ) as store:
        ns = store.namespace(f"maintain-bench-{uuid.uuid4().hex[:6]}")
        ids = ns.remember_many([f"note {i}" for i in range(args.nodes)])
        for i in range(args.lessons):
            ns.lessons.add(
                f"rule number {i} about topic {i * 7919 % 1000}", source="bench", confidence=0.9
            )
        admin = sa.engine.make_url(store._url).set(drivername="postgresql")
        with psycopg.connect(admin.render_as_string(hide_password=False)) as conn:
            conn.execute(
                "INSERT INTO memstore.activations (namespace_id, node_id, session_id, strength)"
                " SELECT %(ns)s, (%(ids)s::bigint[])[1 + g %% cardinality(%(ids)s::bigint[])],"
                " 's' || (g / 50), random() FROM generate_series(0, %(n)s - 1) AS g",
                {"ns": ns.id, "ids": ids, "n": args.activations},
            )
            conn.execute(
                "WITH e AS (INSERT INTO memstore.edges (namespace_id, src, dst)"
                " SELECT %(ns)s, (%(ids)s::bigint[])[1 + g %% cardinality(%(ids)s::bigint[])],"
                " (%(ids)s::bigint[])[1 + (g * 31 + 7) %% cardinality(%(ids)s::bigint[])]"
                " FROM generate_series(0, %(n)s - 1) AS g RETURNING namespace_id, id, src, dst)"
                " INSERT INTO memstore.edge_state (namespace_id, edge_id, src, dst,"
                " hebbian_weight, fire_count, last_fired_at)"
                " SELECT namespace_id, id, src, dst, 0.5, 1, now() - interval '2 days' FROM e",
                {"ns": ns.id, "ids": ids, "n": args.edges},
            )
            conn.execute("ANALYZE memstore.activations, memstore.edge_state")

        result: dict[str, object] = {"args": vars(args)}
        for label, dry in (("dry_run", True), ("pass", False), ("second_pass", False)):
            started = time.perf_counter()
            report = ns.maintain(dry_run=dry, retention=timedelta(0))
            result[label] = {
                "wall_ms": round((time.perf_counter() - started) * 1000, 1),
                "report": report.model_dump(mode="json", exclude={"namespace"}),
            }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
