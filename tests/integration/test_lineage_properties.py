"""Lineage rules under arbitrary sequences of links, and under concurrent writers."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.errors import SQLSTATE_SUPERSESSION

NODES = 6


def _namespace_with_nodes(conn) -> tuple[int, list[int]]:
    ns = conn.execute(
        "INSERT INTO memstore.namespaces (name) VALUES (%s) RETURNING id", (str(uuid.uuid4()),)
    ).fetchone()[0]
    ids = [
        conn.execute(
            "INSERT INTO memstore.nodes (namespace_id, kind, content) VALUES (%s, 'semantic', %s)"
            " RETURNING id",
            (ns, f"version {i}"),
        ).fetchone()[0]
        for i in range(NODES)
    ]
    return ns, ids


def _model_accepts(links: dict[int, int], old: int, new: int) -> bool:
    """The rule, stated independently: old not yet superseded, and new never leads to old."""
    if old in links or old == new:
        return False
    seen, cursor = set(), new
    while cursor in links and cursor not in seen:
        seen.add(cursor)
        cursor = links[cursor]
    return cursor != old


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.integers(0, NODES - 1), st.integers(0, NODES - 1)), max_size=12))
def test_the_database_accepts_exactly_the_links_the_rule_allows(database_url, steps):
    with psycopg.connect(database_url, autocommit=True) as conn:
        ns, ids = _namespace_with_nodes(conn)
        links: dict[int, int] = {}
        for old, new in steps:
            expected = _model_accepts(links, old, new)
            try:
                conn.execute(
                    "INSERT INTO memstore.supersessions (namespace_id, old_id, new_id, reason)"
                    " VALUES (%s, %s, %s, 'p')",
                    (ns, ids[old], ids[new]),
                )
                accepted = True
            except psycopg.Error as exc:
                assert exc.sqlstate == SQLSTATE_SUPERSESSION
                accepted = False
            assert accepted == expected, (steps, old, new)
            if accepted:
                links[old] = new


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [((0, 1), (1, 0), "would close a cycle"), ((0, 1), (0, 2), "already superseded")],
)
def test_concurrent_links_cannot_break_the_rules(database_url, first, second, message):
    with (
        psycopg.connect(database_url, autocommit=True) as setup,
        psycopg.connect(database_url) as a,
        psycopg.connect(database_url) as b,
    ):
        ns, ids = _namespace_with_nodes(setup)
        insert = (
            "INSERT INTO memstore.supersessions (namespace_id, old_id, new_id, reason)"
            " VALUES (%s, %s, %s, 'race')"
        )
        a.execute(insert, (ns, ids[first[0]], ids[first[1]]))  # a holds the namespace lock
        outcome: list[BaseException | None] = []

        def second_writer() -> None:
            try:
                b.execute(insert, (ns, ids[second[0]], ids[second[1]]))
                b.commit()
                outcome.append(None)
            except psycopg.Error as exc:
                b.rollback()
                outcome.append(exc)

        thread = threading.Thread(target=second_writer)
        thread.start()
        thread.join(timeout=0.5)
        assert thread.is_alive(), "the second writer should wait for the first"
        a.commit()
        thread.join(timeout=30)
        (error,) = outcome
        assert isinstance(error, psycopg.Error)
        assert error.sqlstate == SQLSTATE_SUPERSESSION
        assert message in str(error)
