"""Export and restore (memstore/services/snapshot.py, docs/operations.md "Export and restore").

A namespace with every kind of row — revisions, forgets, a redaction, edges,
learned state, lifecycle operations through ns.apply, proposals decided and
pending, keyed entries, a policy — goes out to a file and back into a new
namespace; statuses, lineage, edges, transaction times, ``as_of`` answers,
recall results and the review queue must be the same (compared by content:
ids are new). A broken file, a non-empty target and the service role restore
nothing.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.errors import (
    DatabaseError,
    InvalidInputError,
    NamespaceNotEmptyError,
    RestoreNotPermittedError,
    SnapshotFileError,
)
from memstore.models import NodeStatus
from memstore.namespace import Namespace
from tests.conftest import declare_namespace, row_counts

SECRET = "Carol's phone number is 555-0100"


def anatomy(target: str, claim: str) -> dict[str, Any]:
    return {
        "target": target,
        "claim_or_question": claim,
        "tension": "the release is on Friday",
        "action_implication": "deploy on Thursday",
        "anchors": ["turn:4"],
    }


def populate(ns: Namespace) -> dict[str, Any]:
    """Every kind of row; returns the times between the steps and a few ids."""
    marks: dict[str, Any] = {}
    home = ns.remember("Alice lives in Lisbon", kind="semantic", subject="alice")
    tea = ns.remember("Bob drinks green tea every morning", kind="semantic", tags=["bob", "tea"])
    night = ns.remember("Bob drinks coffee at night", kind="episodic")
    link = ns.link(home.id, tea.id, relation="knows", weight=0.8)
    ns.link(tea.id, night.id, relation="contradicts", weight=0.3)
    time.sleep(0.02)
    marks["before_move"] = _now(ns)
    time.sleep(0.02)
    moved = ns.revise(home.id, "Alice lives in Porto", reason="she moved")
    ns.link(moved.id, tea.id, relation="knows", weight=0.9)
    ns.forget(night.id, reason="it was decaf")
    ns.forget(link.id, reason="not friends any more", target="edge")
    secret = ns.remember(SECRET, kind="semantic", privacy=2)
    ns.link(secret.id, moved.id, relation="about")
    ns.redact(secret.id, reason="GDPR art. 17 request #12", actor="dpo@example.org")
    notes = ns.keyed("notes")
    notes.put("color", "Alice likes red", data={"color": "red"})
    notes.put("color", "Alice likes blue", data={"color": "blue"})
    ns.set_policy({"max_batch": 500}, reason="smaller batches")
    ns.activate(seeds=[moved.id, tea.id], learn=True, session_id="s-1")
    [short] = ns.apply(
        [{"op": "record_short_term", "anatomy": anatomy("deploys", "Deploys fail on Fridays")}],
        phase="rumination",
        actor="agent",
    ).written
    durable = ns.apply(
        [{"op": "distill", "sources": [short], "anatomy": anatomy("deploys", "Friday deploys")}],
        phase="sleep",
        actor="sleeper",
    ).written[0]
    crystallize = {
        "op": "crystallize_identity",
        "anatomy": anatomy("self", "I tell the truth"),
        "content": "I tell the truth, even when it costs",
    }

    def propose(operation: dict[str, Any]) -> int:
        receipt = ns.apply(
            [{"op": "propose", "operation": operation, "rationale": "r", "evidence": ["turn:3"]}],
            phase="wake",
            actor="agent",
        )
        proposal = receipt.results[0].proposal_id
        assert proposal is not None, receipt.summary()
        return proposal

    ns.review.accept(propose(crystallize), reviewer="alice")
    ns.review.reject(
        propose({**crystallize, "content": "I never lie"}), reviewer="bob", reason="no"
    )
    marks["pending"] = propose(
        {"op": "retire_durable", "node_id": durable, "reason": "Fridays are fine now"}
    )
    marks["durable"] = durable
    steps = [{"tool": "search", "purpose": "find places", "instruction": "near work"}]
    ns.procedures.add("book-dinner", description="Book a dinner", steps=steps, roles=["planner"])
    ns.procedures.record_outcome("book-dinner", True, episode=tea.id, note="booked in time")
    ns.procedures.record_outcome("book-dinner", False, episode="run-7")
    ns.confirm(tea.id)
    return marks


def _now(ns: Namespace) -> datetime:
    with ns.connection() as conn:
        value: datetime = conn.exec_driver_sql("SELECT clock_timestamp()").scalar_one()
    return value


def picture(url: str, namespace_id: int) -> dict[str, Any]:
    """The namespace's rows with every id replaced by the content it stands for."""
    with psycopg.connect(url) as conn:
        declare_namespace(conn, namespace_id)
        nodes = {
            node_id: f"{kind}/{node_type}/{content}"
            for node_id, kind, node_type, content in conn.execute(
                "SELECT id, kind, node_type, content FROM memstore.nodes WHERE namespace_id = %s",
                (namespace_id,),
            )
        }
        edges = {
            edge_id: (nodes[src], nodes[dst], relation)
            for edge_id, src, dst, relation in conn.execute(
                "SELECT id, src, dst, relation FROM memstore.edges WHERE namespace_id = %s",
                (namespace_id,),
            )
        }

        def rows(query: str) -> list[tuple[Any, ...]]:
            return sorted(
                conn.execute(query, (namespace_id,)).fetchall(),
                key=lambda r: json.dumps(r, default=str),
            )

        statuses = rows(
            "SELECT n.content, s.status, n.recorded_at, n.label, n.tier, n.privacy, n.actor,"
            " n.source"
            " FROM memstore.v_node_status s JOIN memstore.nodes n USING (namespace_id, id)"
            " WHERE s.namespace_id = %s"
        )
        picture = {
            "statuses": statuses,
            "edges": sorted(
                (edges[i], w, inh, at)
                for i, w, inh, at in conn.execute(
                    "SELECT id, weight, inhibitory, recorded_at FROM memstore.edges"
                    " WHERE namespace_id = %s",
                    (namespace_id,),
                )
            ),
            "tombstones": sorted(
                (repr(nodes.get(n)), repr(edges.get(e)), reason, at)
                for n, e, reason, at in conn.execute(
                    "SELECT node_id, edge_id, reason, at FROM memstore.tombstones"
                    " WHERE namespace_id = %s",
                    (namespace_id,),
                )
            ),
            "supersessions": sorted(
                (nodes[o], nodes[n], reason, at)
                for o, n, reason, at in conn.execute(
                    "SELECT old_id, new_id, reason, at FROM memstore.supersessions"
                    " WHERE namespace_id = %s",
                    (namespace_id,),
                )
            ),
            "redactions": sorted(
                (nodes[n], reason, actor, at)
                for n, reason, actor, at in conn.execute(
                    "SELECT node_id, reason, actor, redacted_at FROM memstore.redactions"
                    " WHERE namespace_id = %s",
                    (namespace_id,),
                )
            ),
            "node_state": sorted(
                (nodes[n], count, ring, updated)
                for n, count, ring, updated in conn.execute(
                    "SELECT node_id, activation_count, access_ring, updated_at"
                    " FROM memstore.node_state WHERE namespace_id = %s",
                    (namespace_id,),
                )
            ),
            "edge_state": sorted(
                (edges[e], round(w, 6), fired)
                for e, w, fired in conn.execute(
                    "SELECT edge_id, hebbian_weight, fire_count FROM memstore.edge_state"
                    " WHERE namespace_id = %s",
                    (namespace_id,),
                )
            ),
            "proposals": rows(
                "SELECT status, proposed_by, proposed_at, decided_by, decided_at,"
                " decision_reason, operation->>'op', evidence FROM memstore.proposals"
                " WHERE namespace_id = %s"
            ),
            "operations": rows(
                "SELECT op, phase, actor, outcome, reason, recorded_at FROM memstore.operations"
                " WHERE namespace_id = %s AND op <> 'restore'"
            ),
        }
    return picture


@pytest.fixture(scope="module")
def source(store: MemoryStore) -> tuple[Namespace, dict[str, Any]]:
    ns = store.namespace(f"export-{uuid.uuid4().hex[:8]}")
    return ns, populate(ns)


@pytest.fixture(scope="module")
def exported(
    source: tuple[Namespace, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    ns, _ = source
    path: Path = tmp_path_factory.mktemp("export") / "ns.jsonl"
    summary = ns.export(path)
    assert summary.rows["node"] > 10 and summary.rows["embedding"] == 0
    return path


def fresh(store: MemoryStore) -> str:
    return f"restored-{uuid.uuid4().hex[:8]}"


def test_the_file_holds_every_section_and_no_erased_content(exported: Path):
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    header, end = lines[0], lines[-1]
    assert header["t"] == "header" and header["format"] == "memstore-export"
    assert header["version"] == 1 and header["embedder"]["name"] == HashingEmbedder().name
    assert end["t"] == "end"
    kinds = {line["t"] for line in lines[1:-1]}
    assert kinds == {
        "node", "edge", "tombstone", "supersession", "redaction", "node_state",
        "edge_state", "proposal", "operation", "confirmation", "procedure_outcome",
        "procedure_role",
    }  # fmt: skip
    assert end["rows"] == {kind: sum(1 for x in lines if x["t"] == kind) for kind in end["rows"]}
    text = exported.read_text()
    assert "555-0100" not in text and "Carol" not in text
    assert all(line["t"] != "activation" for line in lines)


def test_round_trip_keeps_statuses_lineage_edges_times_and_the_queue(
    store: MemoryStore, source, exported: Path, database_url: str
):
    ns, marks = source
    name = fresh(store)
    summary = store.restore(exported, namespace=name)
    copy = store.namespace(name)
    assert summary.source_namespace == ns.name and summary.vectors_restored == 0
    assert summary.vectors_embedded > 0

    assert picture(database_url, copy.id) == picture(database_url, ns.id)

    def by_content(space: Namespace, query: str, **kw: Any) -> list[str]:
        return [hit.node.content for hit in space.recall(query, k=10, **kw)]

    for query in ("where does Alice live", "Bob drinks", "Friday deploys", "Alice likes"):
        assert by_content(copy, query) == by_content(ns, query)
        assert by_content(copy, query, as_of=marks["before_move"]) == by_content(
            ns, query, as_of=marks["before_move"]
        )
        assert by_content(copy, query, include_superseded=True, include_tombstoned=True) == (
            by_content(ns, query, include_superseded=True, include_tombstoned=True)
        )
    assert "Alice lives in Lisbon" in by_content(copy, "Alice", as_of=marks["before_move"])
    assert by_content(copy, "Bob drinks", tags=["tea"]) == by_content(
        ns, "Bob drinks", tags=["tea"]
    )
    assert [h.node.tags for h in copy.recall("green tea", k=1, tags=["tea"])] == [["bob", "tea"]]

    def learned(space: Namespace) -> tuple[Any, ...]:
        outcomes = space.procedures.outcomes("book-dinner")
        [tea] = [h.node for h in space.recall("green tea", k=1, tags=["tea"])]
        return (
            space.procedures.roles("book-dinner"),
            [(o.success, o.episode_node_id == tea.id, o.episode_run, o.note) for o in outcomes],
            [o.recorded_at for o in outcomes],
            tea.last_confirmed_at,
        )

    assert learned(copy) == learned(ns)
    assert learned(copy)[3] is not None

    [porto] = [h.node for h in copy.recall("Alice lives in Porto", k=1)]
    assert [n.content for n in copy.lineage(porto.id)] == ["Alice lives in Lisbon", porto.content]
    assert copy.lineage(porto.id)[0].status is NodeStatus.SUPERSEDED

    # The pending proposal names the restored memory, and deciding it works.
    [pending] = copy.review.pending()
    durable = copy.get(pending.operation["node_id"])
    assert durable.content == ns.get(marks["durable"]).content
    copy.review.accept(pending.id, reviewer="carol")
    assert copy.get(durable.id).status is NodeStatus.TOMBSTONED

    # The restore is in the audit log, stamped now.
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT payload->>'source_namespace', recorded_at > %s FROM memstore.operations"
            " WHERE namespace_id = %s AND op = 'restore'",
            (summary.exported_at, copy.id),
        ).fetchone()
    assert row == (ns.name, True)


def test_vectors_travel_when_asked_and_recall_is_the_same(
    store: MemoryStore, source, tmp_path: Path
):
    ns, _ = source
    path = tmp_path / "with-vectors.jsonl"
    summary = ns.export(path, with_vectors=True)
    assert summary.rows["embedding"] > 0
    restored = store.restore(path, namespace=fresh(store))
    assert restored.vectors_restored == summary.rows["embedding"]
    copy = store.namespace(restored.namespace)
    for mode in ("semantic", "hybrid"):
        assert [h.node.content for h in copy.recall("Alice", mode=mode)] == [
            h.node.content for h in ns.recall("Alice", mode=mode)
        ]


def test_vectors_of_another_embedder_are_recomputed(store: MemoryStore, source, tmp_path: Path):
    ns, _ = source
    stream = io.BytesIO()
    ns.export(stream, with_vectors=True)
    lines = stream.getvalue().decode().splitlines()
    header = json.loads(lines[0])
    header["embedder"]["name"] = "another-model"
    lines[0] = json.dumps(header)
    restored = store.restore(io.BytesIO("\n".join(lines).encode() + b"\n"), namespace=fresh(store))
    assert restored.vectors_restored == 0 and restored.vectors_embedded > 0
    assert store.namespace(restored.namespace).embedding_status().missing == 0


def _refused(store: MemoryStore, database_url: str, data: bytes, name: str, error: type) -> Any:
    before = row_counts(database_url)
    with pytest.raises(error) as raised:
        store.restore(io.BytesIO(data), namespace=name)
    assert row_counts(database_url) == before
    assert not store.namespace(name).exists()
    return raised.value


def test_a_file_cut_halfway_restores_nothing(store: MemoryStore, exported: Path, database_url):
    data = exported.read_bytes()
    lines = data.splitlines(keepends=True)
    half = b"".join(lines[: len(lines) * 2 // 3])
    error = _refused(store, database_url, half, fresh(store), SnapshotFileError)
    assert "cut short" in str(error)


def test_a_bad_line_halfway_restores_nothing(store: MemoryStore, exported: Path, database_url):
    lines = exported.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = b'{"t": "edge", "id": \n'
    error = _refused(store, database_url, b"".join(lines), fresh(store), SnapshotFileError)
    assert error.line == middle + 1 and f"line {middle + 1}" in str(error)


def test_ids_that_do_not_hold_together_restore_nothing(
    store: MemoryStore, exported: Path, database_url
):
    lines = exported.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if json.loads(line)["t"] == "edge")
    edge = json.loads(lines[at])
    edge["src"] = 2**62
    lines[at] = json.dumps(edge) + "\n"
    _refused(store, database_url, "".join(lines).encode(), fresh(store), DatabaseError)


def test_headers_are_checked(store: MemoryStore, exported: Path, database_url):
    lines = exported.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    newer = json.dumps({**header, "version": 2}) + "\n"
    error = _refused(
        store, database_url, "".join([newer, *lines[1:]]).encode(), fresh(store), SnapshotFileError
    )
    assert "version 2" in str(error)
    _refused(store, database_url, b"", fresh(store), SnapshotFileError)
    _refused(store, database_url, b'{"t": "node"}\n', fresh(store), SnapshotFileError)
    with pytest.raises(SnapshotFileError, match="cannot read"):
        store.restore("/nonexistent/file.jsonl", namespace=fresh(store))


def test_a_namespace_that_holds_memories_is_refused(
    store: MemoryStore, source, exported: Path, database_url
):
    ns, _ = source
    error = _refused_existing(store, database_url, exported, ns.name)
    assert ns.name in str(error)


def _refused_existing(store: MemoryStore, database_url: str, path: Path, name: str) -> Exception:
    before = row_counts(database_url)
    with pytest.raises(NamespaceNotEmptyError) as raised:
        store.restore(path, namespace=name)
    assert row_counts(database_url) == before
    return raised.value


def test_export_needs_every_privacy_level(store: MemoryStore, source, tmp_path: Path):
    ns, _ = source
    with pytest.raises(InvalidInputError, match="privacy_ceiling") as raised:
        ns.export(tmp_path / "partial.jsonl", privacy_ceiling=2)
    assert raised.value.field == "privacy_ceiling"
    assert not (tmp_path / "partial.jsonl").exists()
    with pytest.raises(InvalidInputError, match="does not exist"):
        store.namespace(f"absent-{uuid.uuid4().hex[:6]}").export(tmp_path / "absent.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_the_file_is_the_same_after_a_round_trip(store: MemoryStore, source, tmp_path: Path):
    """Exporting the restored namespace gives the same rows, ids aside."""
    ns, _ = source
    first = tmp_path / "first.jsonl"
    ns.export(first)
    copy = store.restore(first, namespace=fresh(store))
    second = tmp_path / "second.jsonl"
    store.namespace(copy.namespace).export(second)

    def shape(path: Path) -> list[str]:
        keep = []
        for line in path.read_text().splitlines()[1:-1]:
            row = json.loads(line)
            if row["t"] == "operation" and row["op"] == "restore":
                continue
            row = {k: v for k, v in row.items() if not k.endswith("id") and k not in (
                "src", "dst", "operation", "payload", "receipt")}  # fmt: skip
            keep.append(json.dumps(row, sort_keys=True))
        return sorted(keep)

    assert shape(second) == shape(first)


# --- the service role cannot use the path ----------------------------------------------------


@pytest.fixture
def app_store(app_url: str) -> Iterator[MemoryStore]:
    with MemoryStore.open(app_url, embedder=HashingEmbedder()) as opened:
        yield opened


def test_the_service_role_cannot_restore(app_store: MemoryStore, exported: Path, database_url):
    name = f"app-{uuid.uuid4().hex[:8]}"
    before = row_counts(database_url)
    with pytest.raises(RestoreNotPermittedError, match="owner"):
        app_store.restore(exported, namespace=name)
    assert row_counts(database_url) == before


def test_the_service_role_can_export(app_store: MemoryStore, source, tmp_path: Path):
    ns, _ = source
    summary = app_store.namespace(ns.name).export(tmp_path / "app.jsonl")
    assert summary.rows == ns.export(tmp_path / "owner.jsonl").rows


LONG_AGO = "2001-01-01T00:00:00Z"


def test_the_restoring_flag_keeps_no_time_for_the_service_role(app_url: str, source):
    ns, _ = source
    with psycopg.connect(app_url) as app:
        declare_namespace(app, ns.id)
        app.execute("SET LOCAL memstore.restoring = 'on'")
        row = app.execute(
            "INSERT INTO memstore.nodes (namespace_id, kind, content, recorded_at)"
            " VALUES (%s, 'semantic', 'back-dated by the app', %s) RETURNING recorded_at, now()",
            (ns.id, LONG_AGO),
        ).fetchone()
        assert row is not None and row[0] == row[1]
        assert app.execute(
            "SELECT memstore.restore_keeps_time('memstore.nodes'::regclass)"
        ).fetchone() == (False,)
        with pytest.raises(psycopg.Error, match="pending and undecided"):
            app.execute(
                "INSERT INTO memstore.proposals (namespace_id, operation, status, decided_by,"
                " decided_at) VALUES (%s, '{}', 'accepted', 'me', now())",
                (ns.id,),
            )
        app.rollback()


def test_the_owner_keeps_times_only_when_it_says_so(database_url: str, source):
    ns, _ = source
    with psycopg.connect(database_url) as owner:
        declare_namespace(owner, ns.id)
        row = owner.execute(
            "INSERT INTO memstore.nodes (namespace_id, kind, content, recorded_at)"
            " VALUES (%s, 'semantic', 'no flag', %s) RETURNING recorded_at, now()",
            (ns.id, LONG_AGO),
        ).fetchone()
        assert row is not None and row[0] == row[1]
        owner.execute("SET LOCAL memstore.restoring = 'on'")
        kept = owner.execute(
            "INSERT INTO memstore.nodes (namespace_id, kind, content, recorded_at)"
            " VALUES (%s, 'semantic', 'flagged', %s) RETURNING recorded_at",
            (ns.id, LONG_AGO),
        ).fetchone()
        assert kept is not None and kept[0].year == 2001
        owner.rollback()


# --- the example in docs/operations.md runs as written -------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_the_operations_example_runs(database_url: str, capsys: pytest.CaptureFixture[str]):
    section = DOCS.read_text().split("## Export and restore", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    # The example opens the embedded default store; here it opens the test database.
    opened = "MemoryStore.open(embedder=HashingEmbedder())"
    assert opened in code
    code = code.replace(opened, f"MemoryStore.open({database_url!r}, embedder=HashingEmbedder())")
    exec(compile(code, str(DOCS), "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    expected = [line.split("# ", 1)[1].strip() for line in code.splitlines() if "print(" in line]
    assert printed == expected
