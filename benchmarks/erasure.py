"""What one erasure costs as the audit log grows: ``ns.redact`` with N operations rows.

The log (``memstore.operations``) and the review queue have no index by the
ids their JSON names, so an erasure reads the namespace's rows once: a regular
expression over each row's text picks candidates, and only those are parsed
(sql/03_redaction.sql, ``erase_versions``). This loads ``--operations`` link
operations between 1,000 other nodes (by COPY, as the owner), then times
``--repeats`` redactions of fresh two-version memories.

Usage: ``python benchmarks/erasure.py [--operations 20000] [--repeats 5]``
(embedded server in a temporary directory, or ``--database-url`` of a
superuser on a scratch database).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid

import psycopg
import sqlalchemy as sa

from memstore import MemoryStore
from memstore.config import Settings
from memstore.embedding import HashingEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--operations", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()

    settings = Settings(data_dir=tempfile.mkdtemp(prefix="memstore-bench-erasure-"))
    with MemoryStore.open(
        args.database_url, settings=settings, embedder=HashingEmbedder()
    ) as store:
        ns = store.namespace(f"erasure-bench-{uuid.uuid4().hex[:6]}")
        others = ns.remember_many([f"note {i}" for i in range(1000)])
        admin = sa.engine.make_url(store._url).set(drivername="postgresql")
        with psycopg.connect(admin.render_as_string(hide_password=False)) as conn:
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY memstore.operations (namespace_id, op, actor, outcome, payload, receipt)"
                    " FROM STDIN"
                ) as copy,
            ):
                for i in range(args.operations):
                    src, dst = others[i % 1000], others[(i + 1) % 1000]
                    payload = {"op": "link", "src": src, "dst": dst, "relation": "related"}
                    receipt = {"op": "link", "outcome": "accepted", "edges": [i + 1]}
                    copy.write_row(
                        (
                            ns.id,
                            "link",
                            "agent",
                            "accepted",
                            json.dumps(payload),
                            json.dumps(receipt),
                        )
                    )
        timings = []
        for i in range(args.repeats):
            node = ns.remember(f"to be erased {i} {uuid.uuid4()}", kind="semantic")
            ns.revise(node.id, f"to be erased, again {i}", reason="r")
            start = time.perf_counter()
            ns.redact(node.id, reason="benchmark", actor="dpo")
            timings.append((time.perf_counter() - start) * 1000)
        print(
            f"{args.operations} operations rows: redact p50 {statistics.median(timings):.1f} ms,"
            f" max {max(timings):.1f} ms ({args.repeats} runs)"
        )


if __name__ == "__main__":
    main()
