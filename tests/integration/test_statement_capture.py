"""The session's statement capture (tests/statements.py) tells the package's statements from
a test's, and catches one without its namespace filter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memstore.db.transaction import in_one_round_trip
from tests.citus import violations
from tests.statements import CAPTURE, install


@pytest.fixture
def new_statements() -> Iterator[None]:
    """The capture, forgetting afterwards the statements these tests send on purpose."""
    if not install():
        pytest.skip("MEMSTORE_TEST_STATEMENTS=off")
    yield
    for text in [t for t in CAPTURE.sent if "capture-negative" in t]:
        del CAPTURE.sent[text]


def test_an_unfiltered_statement_the_package_sends_is_caught(ns, new_statements):
    ns.remember("something to count")
    statement = "SELECT count(*) AS n FROM memstore.nodes /* capture-negative */"
    in_one_round_trip(ns._scope.engine, ns.id, statement, {})
    caught = {t: w for t, w in CAPTURE.sent.items() if "capture-negative" in t}
    assert list(caught.values()) == [caught[statement]]
    assert caught[statement].startswith("memstore/db/transaction.py:")
    assert [str(v) for v in violations(statement, caught[statement])] == [
        f"{caught[statement]}: memstore.nodes without a namespace_id condition:"
        " FROM memstore.nodes /* capture-negative */"
    ]


def test_a_tests_own_statement_is_not_the_packages(store, ns, new_statements):
    with store.transaction() as conn:
        conn.exec_driver_sql("SELECT count(*) FROM memstore.nodes /* capture-by-a-test */")
    ns.recall("anything")
    assert not [t for t in CAPTURE.sent if "capture-by-a-test" in t]
    assert any("memstore.nodes" in t for t in CAPTURE.sent)
