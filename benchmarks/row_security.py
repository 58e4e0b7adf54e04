"""What row-level security costs: the service as the owner vs as ``memstore_app``.

One namespace of ``--size`` nodes (plus a second namespace of half that size,
so the policies have something to exclude) is loaded by the owner. Every text
carries a unique token and one of 997 shared tokens, and every query asks for
one of each, so full text is selective. The same queries are then timed as
the owner (not confined by RLS) and as ``memstore_app`` (confined; the roles
come from ``memstore db roles``), interleaved, ``--repeats`` each:

- ``ns.recall(query, k=10)`` in lexical, semantic and hybrid mode;
- ``ns.get(id)``;
- an empty transaction with and without the ``SET LOCAL`` statement that
  declares the namespace (the round trip every namespace-scoped transaction
  pays), and
- the plan of the lexical match as ``memstore_app``.

Usage: ``python benchmarks/row_security.py [--size 20000] [--repeats 40]``
(embedded server in a temporary directory, or ``--database-url`` of a
superuser on a scratch database).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable

import psycopg
import sqlalchemy as sa

from memstore import MemoryStore
from memstore.config import Settings
from memstore.db.roles import roles_sql
from memstore.db.transaction import namespace_transaction, transaction
from memstore.embedding import HashingEmbedder

WORDS = (
    "alice bob carol lisbon porto tea chess stamps meeting friday project deadline coffee"
    " train museum garden river book music doctor"
).split()
PASSWORD = "benchmark-only"


def timed(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    texts = [
        " ".join(rng.choice(WORDS) for _ in range(12)) + f" zq{i}x zr{i % 997}y"
        for i in range(args.size)
    ]
    queries = [f"zq{rng.randrange(args.size)}x zr{rng.randrange(997)}y" for _ in range(64)]
    settings = Settings(data_dir=tempfile.mkdtemp(prefix="memstore-bench-rls-"))
    embedder = HashingEmbedder()

    with MemoryStore.open(args.database_url, settings=settings, embedder=embedder) as owner:
        url = sa.engine.make_url(owner._url)
        ns = owner.namespace("rls-bench")
        start = time.perf_counter()
        ns.remember_many(texts)
        owner.namespace("rls-other").remember_many(texts[: args.size // 2])
        print(f"loaded {args.size} + {args.size // 2} nodes in {time.perf_counter() - start:.1f} s")
        admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(roles_sql().encode())
            conn.execute(f"ALTER ROLE memstore_app PASSWORD '{PASSWORD}'")
        app_url = url.set(username="memstore_app", password=PASSWORD)
        with MemoryStore.open(
            app_url.render_as_string(hide_password=False), embedder=embedder
        ) as app:
            ans = app.namespace("rls-bench")
            print(f"{'call':28s} {'owner p50':>10s} {'p90':>8s} {'app p50':>10s} {'p90':>8s}")
            for mode in ("lexical", "semantic", "hybrid"):
                row = []
                for handle in (ns, ans):
                    handle.recall(queries[0], mode=mode)
                    picks = iter(queries * (args.repeats // len(queries) + 1))
                    row += timed(
                        lambda h=handle, m=mode, p=picks: h.recall(next(p), mode=m), args.repeats
                    )
                print(f"recall {mode:21s} " + " ".join(f"{v:8.2f}ms" for v in row))
            row = []
            for handle in (ns, ans):
                row += timed(lambda h=handle: h.get(1), args.repeats * 5)
            print("get(id)                      " + " ".join(f"{v:8.2f}ms" for v in row))

            def plain() -> None:
                with transaction(owner.engine) as conn:
                    conn.exec_driver_sql("SELECT 1")

            def scoped() -> None:
                with namespace_transaction(owner.engine, ns.id) as conn:
                    conn.exec_driver_sql("SELECT 1")

            p, s = timed(plain, args.repeats * 10), timed(scoped, args.repeats * 10)
            print(f"transaction SELECT 1: plain p50 {p[0]:.3f} ms, with SET LOCAL {s[0]:.3f} ms")
            with ans.connection() as conn:
                plan = conn.execute(
                    sa.text(
                        "EXPLAIN SELECT count(*) FROM memstore.nodes n WHERE n.namespace_id = :ns"
                        " AND n.search @@ plainto_tsquery('english', :q)"
                    ),
                    {"ns": ans.id, "q": queries[0]},
                ).all()
            print("lexical match as memstore_app:\n  " + "\n  ".join(r[0] for r in plan))


if __name__ == "__main__":
    main()
