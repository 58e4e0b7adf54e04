"""Lexical recall with candidates from rare terms vs from every query term, side by side.

Runs on the 100k namespace that benchmarks/context.py loads (``--reuse`` keeps
it in ``--data-dir``): the same lexical statement memstore issues, and the same
statement with the old match condition (any query term), interleaved query by
query, on one connection. Reports p50/p95 of each, and how many of each
query's top 10 agree. A third variant, ``functions``, is the statement a role
confined by row-level security runs (memstore.lexical_matches /
term_documents, sql/08_lexical.sql), timed as the owner: what those SECURITY
DEFINER functions cost.

    .venv/bin/python benchmarks/context.py --sizes 100000 --reuse --repeats 0 --profile 0
    .venv/bin/python benchmarks/lexical.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from context import Language, LanguageSpec, Spec, parse_args, server
from recall_scale import with_database

from memstore.db import migrate
from memstore.db.engine import create_engine
from memstore.db.transaction import scope_statement
from memstore.recall import recall_params, recall_statement
from memstore.recall.query import RecallQuery

# What the owner runs matches inline; recall before the rare-term pruning
# matched every query term (the same statement with that condition).
PRUNED_MATCH = "JOIN (SELECT query FROM match_terms) AS mt ON n.search @@ mt.query"
EVERY_TERM_MATCH = (
    "JOIN (SELECT replace(plainto_tsquery('english', %(text)s)::text, '&', '|')::tsquery"
    " AS query) AS mt ON n.search @@ mt.query"
)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> int:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--queries", type=int, default=200)
    extra.add_argument("--limit", type=int, default=60, help="lexical candidates (context: 60)")
    ours, rest = extra.parse_known_args()
    args = parse_args(["--sizes", "100000", "--reuse", *rest])
    size = int(args.sizes)
    spec = Spec.of(size, args)
    language = Language(LanguageSpec(args.seed, args.vocabulary, args.topics, args.zipf))
    with server(args) as (admin_url, _):
        url = with_database(admin_url, spec.database)
        engine = create_engine(url)
        migrate.upgrade(engine)  # a load of an earlier revision gets sql/08 too
        engine.dispose()
        with psycopg.connect(url, autocommit=True) as conn:
            ns_id, docs, avg = conn.execute(
                "SELECT n.id, count(*), avg(length(m.search)) FROM memstore.namespaces n"
                " JOIN memstore.nodes m ON m.namespace_id = n.id WHERE n.name = %s GROUP BY n.id",
                (spec.namespace,),
            ).fetchone()  # type: ignore[misc]
            pruned = recall_statement("unused", 384, True, "lexical").as_string(conn)
            every = pruned.replace(PRUNED_MATCH, EVERY_TERM_MATCH)
            # What a role confined by row-level security runs (sql/08's functions).
            functions = recall_statement("unused", 384, True, "lexical", True).as_string(conn)
            assert every != pruned and "memstore.lexical_matches" in functions
            rng = np.random.default_rng([args.seed, 9])
            texts = language.topic_texts(rng, ours.queries + 20, 4, 12)
            times: dict[str, list[float]] = {"pruned": [], "every": [], "functions": []}
            overlap: list[float] = []
            for i, text in enumerate(texts):
                q = RecallQuery(text=text, k=ours.limit, mode="lexical")
                params: dict[str, Any] = recall_params(ns_id, q, None, (docs, float(avg)))
                tops = {}
                variants = (("pruned", pruned), ("every", every), ("functions", functions))
                for name, statement in variants[:: 1 - 2 * (i % 2)]:
                    started = time.perf_counter()
                    with conn.transaction():
                        # The namespace the lexical functions answer for (sql/08).
                        conn.execute(scope_statement(ns_id, 3))
                        rows = conn.execute(statement, params).fetchall()
                    if i >= 20:
                        times[name].append((time.perf_counter() - started) * 1000)
                    tops[name] = [r[0] for r in rows[:10]]
                if i >= 20 and tops["every"]:
                    overlap.append(
                        len(set(tops["pruned"]) & set(tops["every"])) / len(tops["every"])
                    )
    print(f"{docs:,} documents, {ours.queries} queries, lexical limit {ours.limit}")
    for name, values in times.items():
        p50, p95 = statistics.median(values), percentile(values, 95)
        print(f"{name:>9}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")
    print(f"top-10 agreement: mean {statistics.mean(overlap):.3f}, min {min(overlap):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
