"""ns.redact erases a memory and leaves nothing of it behind (docs/security.md, "Erasure").

One unusual token goes into every caller-supplied text field of a memory, its
versions older and newer than the one redacted, its edges both ways, a
tombstone and supersession reasons, lifecycle operations and proposals naming
it, and an activation session; after ``ns.redact`` a scan of every column of
every table of schema memstore (enumerated from the catalog, so a new column is
covered without editing this test) finds it nowhere, nor the plain sha256 of
any erased content. Run as the owner and as memstore_app.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from memstore.errors import InvalidInputError, RedactionError
from memstore.models import NodeStatus
from memstore.namespace import Namespace
from tests.conftest import as_role, declare_namespace

TOKEN = "zqxjv-erase-me"
# What full text keeps of the token ('zqxjv-erase-m', 'zqxjv', 'eras', ...):
# the scan looks for this part, case-insensitively, in every column as text.
STEM = "zqxjv"


@pytest.fixture(scope="module", params=["owner", "memstore_app"])
def erasing_store(request, database_url: str) -> Iterator[MemoryStore]:
    """The store as its owner, and in the production configuration (memstore_app)."""
    url = database_url
    if request.param == "memstore_app":
        url = as_role(request.getfixturevalue("roles_applied"), "memstore_app")
    with MemoryStore.open(url, embedder=HashingEmbedder()) as store:
        yield store


@pytest.fixture
def space(erasing_store: MemoryStore) -> Namespace:
    return erasing_store.namespace(f"erasure-{uuid.uuid4().hex[:10]}")


def _hits(url: str, needles: list[str], raw: list[bytes]) -> list[tuple[str, str, int]]:
    """(table, column, rows) for every column of every memstore table holding a needle.

    Text needles are matched case-insensitively in ``column::text`` (text,
    json, tsvector, arrays, anything); byte needles in bytea columns.
    """
    found: list[tuple[str, str, int]] = []
    with psycopg.connect(url) as admin:
        columns = admin.execute(
            "SELECT c.table_name, c.column_name, c.data_type"
            " FROM information_schema.columns c"
            " JOIN information_schema.tables t"
            "   ON t.table_schema = c.table_schema AND t.table_name = c.table_name"
            " WHERE c.table_schema = 'memstore' AND t.table_type = 'BASE TABLE'"
            " ORDER BY 1, 2"
        ).fetchall()
        assert len(columns) > 100  # the whole schema, not an empty catalog query
        for table, column, data_type in columns:
            target = sql.SQL("memstore.{}").format(sql.Identifier(table))
            col = sql.Identifier(column)
            if data_type == "bytea":
                for needle in raw:
                    query = sql.SQL("SELECT count(*) FROM {} WHERE position(%s IN {}) > 0")
                    count = admin.execute(query.format(target, col), (needle,)).fetchone()
                    if count and count[0]:
                        found.append((table, column, int(count[0])))
            for text in needles:
                query = sql.SQL("SELECT count(*) FROM {} WHERE strpos(lower({}::text), %s) > 0")
                count = admin.execute(query.format(target, col), (text.lower(),)).fetchone()
                if count and count[0]:
                    found.append((table, column, int(count[0])))
    return found


@dataclass
class Memory:
    versions: list[int]  # oldest first
    bystander: int
    contents: list[str]


def _plant(ns: Namespace) -> Memory:
    """A memory with the token in every field a caller can write, and its surroundings."""
    t = TOKEN
    bystander = ns.remember("The office plant needs water on Mondays", kind="semantic").id
    fields: dict[str, Any] = dict(
        kind="working",
        node_type=f"Type-{t}",
        tier=f"tier-{t}",
        label=f"label {t}",
        data={t: f"value {t}", "list": [t, {"deep": t}]},
        subject=f"subject {t}",
        scope=f"scope {t}",
        source=f"https://example.com/{t}",
        actor=f"actor-{t}",
        run_id=f"run-{t}",
    )
    # Edges both ways, on each version while it was current (they stay on it
    # once it is superseded), one of them forgotten.
    provenance: dict[str, Any] = dict(source=f"src-{t}", actor=f"linker-{t}", run_id=f"run-{t}")
    first = ns.remember(f"Maya told me {t} about her diagnosis", **fields)
    ns.link(first.id, bystander, relation=f"rel-{t}", **provenance)
    second = ns.revise(
        first.id, f"Maya said {t} again", reason=f"corrected {t}", actor=f"reviser-{t}"
    )
    doomed = ns.link(second.id, bystander, relation=f"gone-{t}", **provenance)
    ns.forget(doomed.id, target="edge", reason=f"edge forgotten {t}", actor=f"forgetter-{t}")
    third = ns.revise(second.id, f"Maya's {t} third version", reason=f"because {t}")
    ns.link(bystander, third.id, relation=f"back-{t}", **provenance)
    # Lifecycle operations that name it: a link, and a revision written by the law
    # (a fourth, newer version).
    receipt = ns.apply(
        [
            {
                "op": "link",
                "src": bystander,
                "dst": third.id,
                "relation": f"op-rel-{t}",
                "source": f"op-src-{t}",
                "run_id": f"op-run-{t}",
            },
            {
                "op": "revise",
                "node_id": third.id,
                "content": f"Maya fourth {t}",
                "reason": f"op reason {t}",
                "changes": {"label": f"op label {t}", "data": {t: t}},
            },
        ],
        phase="wake",
        actor=f"agent-{t}",
    )
    assert receipt.applied, receipt.summary()
    fourth = receipt.results[1].nodes[0]
    # An operation the law rejects, naming it: its text is kept in the log.
    rejected = ns.apply(
        [{"op": "forget", "target_id": first.id, "reason": f"rejected {t}"}],
        phase="wake",
        actor=f"agent-{t}",
        atomic=False,
    )
    assert not rejected.results[0].outcome == "accepted"
    # An activation session that reaches it (and the bystander).
    activation = ns.activate(seeds=[fourth], learn=True, session_id=f"session-{t}")
    assert fourth in {item.node.id for item in activation.working_memory}
    # Proposals about it: one decided (rejected with a reason), one pending.
    for reason in (f"reject {t}", None):
        proposed = ns.apply(
            [
                {
                    "op": "propose",
                    "operation": {"op": "forget", "target_id": fourth, "reason": f"p {t}"},
                    "rationale": f"rationale {t}",
                    "evidence": [f"evidence {t}"],
                }
            ],
            phase="wake",
            actor=f"proposer-{t}",
        )
        assert proposed.applied, proposed.summary()
        proposal_id = proposed.results[0].proposal_id
        assert proposal_id is not None
        if reason is not None:
            ns.review.reject(proposal_id, reviewer=f"reviewer-{t}", reason=reason)
    # And the current version forgotten, with a reason that quotes it.
    ns.forget(fourth, reason=f"forgotten {t}", actor=f"forgetter-{t}")
    versions = [first.id, second.id, third.id, fourth]
    contents = [ns.get(v).content for v in versions]
    return Memory(versions=versions, bystander=bystander, contents=contents)


def test_redact_leaves_no_trace_of_the_memory_anywhere(space, database_url):
    memory = _plant(space)
    shas = [hashlib.sha256(c.encode()).digest() for c in memory.contents]
    before = {table for table, _, _ in _hits(database_url, [STEM], [TOKEN.encode()])}
    # The scan finds the token wherever it was written (so it could fail).
    assert {
        "nodes",
        "edges",
        "tombstones",
        "supersessions",
        "operations",
        "proposals",
        "activations",
    } <= before
    assert _hits(database_url, [], shas)  # the content hashes, before
    assert _hits(database_url, [s.hex() for s in shas], [])  # and the log's digests

    # The second version: older and newer ones go too.
    redacted = space.redact(memory.versions[1], reason="GDPR art. 17 request #1", actor="dpo")

    assert redacted.id == memory.versions[1] and redacted.status is NodeStatus.REDACTED
    assert _hits(database_url, [STEM], [TOKEN.encode()]) == []
    # No plain sha256 of any erased content, as bytes or as hex text.
    assert _hits(database_url, [s.hex() for s in shas], shas) == []
    for version in space.lineage(memory.versions[1]):
        assert version.status is NodeStatus.REDACTED
        assert (version.content, version.label, version.data) == ("", None, {})
    bystander = space.get(memory.bystander)
    assert bystander.content == "The office plant needs water on Mondays"
    assert bystander.status is NodeStatus.CURRENT


def test_identifiers_kept_for_audit_are_keyed_hashes(space, database_url):
    memory = _plant(space)
    space.redact(memory.versions[0], reason="request #2", actor="dpo")
    with psycopg.connect(database_url) as admin:
        rows = admin.execute(
            "SELECT node_id, reason, actor, content_hash FROM memstore.redactions"
            " WHERE namespace_id = %s ORDER BY node_id",
            (space.id,),
        ).fetchall()
        sessions = admin.execute(
            "SELECT node_id, session_id FROM memstore.activations WHERE namespace_id = %s",
            (space.id,),
        ).fetchall()
        sources = admin.execute(
            "SELECT DISTINCT source FROM memstore.nodes WHERE namespace_id = %s AND id = ANY(%s)",
            (space.id, memory.versions),
        ).fetchall()
    # One record per version, with who and why, and a keyed hash of what was erased.
    assert [r[0] for r in rows] == memory.versions
    assert {(r[1], r[2]) for r in rows} == {("request #2", "dpo")}
    assert all(len(r[3]) == 32 for r in rows)
    # The whole session keeps one (keyed) id, so its activations still group.
    assert len({s for _, s in sessions}) == 1
    assert {s for _, s in sessions} == {sessions[0][1]}
    assert sessions[0][1].startswith("erased:") and len(sessions[0][1]) == 7 + 64
    # All versions had the same source: the same keyed hash.
    assert len(sources) == 1 and sources[0][0].startswith("erased:")


def test_one_version_only_leaves_the_others(space, database_url):
    first = space.remember(f"first {TOKEN}", kind="semantic", subject="s1")
    second = space.revise(first.id, f"second {TOKEN}", reason="r1")
    third = space.revise(second.id, f"third {TOKEN}", reason="r2")

    space.redact(second.id, reason="request #3", actor="dpo", versions="one")

    assert space.get(second.id).status is NodeStatus.REDACTED
    assert space.get(second.id).content == ""
    assert space.get(first.id).content == f"first {TOKEN}"
    assert space.get(first.id).subject == "s1"
    assert space.get(third.id).content == f"third {TOKEN}"
    assert space.get(third.id).status is NodeStatus.CURRENT
    with psycopg.connect(database_url) as admin:
        reasons = admin.execute(
            "SELECT old_id, reason FROM memstore.supersessions WHERE namespace_id = %s"
            " ORDER BY old_id",
            (space.id,),
        ).fetchall()
    # Both links touch the erased version: their reasons could quote it.
    assert reasons == [(first.id, "redacted"), (second.id, "redacted")]
    # The rest of the lineage can still be erased later; the erased one not again.
    with pytest.raises(RedactionError, match="already redacted"):
        space.redact(second.id, reason="again", actor="dpo", versions="one")
    space.redact(second.id, reason="request #4", actor="dpo")
    assert {v.status for v in space.lineage(third.id)} == {NodeStatus.REDACTED}
    with pytest.raises(RedactionError, match="already redacted"):
        space.redact(third.id, reason="again", actor="dpo")


@pytest.mark.parametrize("versions", ["some", "ALL", "", None, 1])
def test_versions_must_be_all_or_one(space, versions):
    node = space.remember("A memory to keep", kind="semantic")
    with pytest.raises(InvalidInputError) as exc:
        space.redact(node.id, reason="r", actor="dpo", versions=versions)
    assert exc.value.field == "versions"
    assert space.get(node.id).content == "A memory to keep"


@pytest.mark.parametrize(
    "statement",
    [
        # Not what an erasure writes: another column changes too, or a value is kept.
        "UPDATE memstore.edges SET relation = 'redacted', weight = 1 WHERE namespace_id = %(ns)s",
        "UPDATE memstore.edges SET source = 'erased:' || repeat('0', 64)"
        " WHERE namespace_id = %(ns)s",
        "UPDATE memstore.tombstones SET reason = 'rewritten' WHERE namespace_id = %(ns)s",
        "UPDATE memstore.supersessions SET reason = 'redacted', old_id = new_id"
        " WHERE namespace_id = %(ns)s",
        "UPDATE memstore.operations SET payload = '{}' WHERE namespace_id = %(ns)s",
        "UPDATE memstore.activations SET session_id = 'other' WHERE namespace_id = %(ns)s",
        "UPDATE memstore.proposals SET rationale = NULL, status = 'accepted'"
        " WHERE namespace_id = %(ns)s",
        "UPDATE memstore.nodes SET content = '', label = NULL, data = '{}', content_hash = NULL"
        " WHERE namespace_id = %(ns)s",
    ],
)
def test_even_the_redactor_may_only_write_what_an_erasure_writes(conn, seed, statement):
    """The guards recompute every erased value: the redactor role (which members of
    it could SET ROLE to) cannot use its UPDATE privilege for anything else."""
    conn.execute(
        sql.SQL("SET memstore.namespace_id = {}").format(sql.Literal(str(seed.namespace_id)))
    )
    conn.execute("SET memstore.privacy_ceiling = '3'")
    conn.execute("SET ROLE memstore_redactor")  # the test connection is a superuser
    try:
        with pytest.raises(psycopg.Error) as exc:
            conn.execute(statement, {"ns": seed.namespace_id})
        assert exc.value.sqlstate in ("MS001", "MS004"), exc.value
    finally:
        conn.execute("RESET ROLE")


def test_a_pending_proposal_about_an_erased_memory_is_rejected(space):
    node = space.remember(f"to be erased {TOKEN}", kind="semantic")
    proposed = space.apply(
        [
            {
                "op": "propose",
                "operation": {"op": "forget", "target_id": node.id, "reason": "r"},
                "rationale": "why",
                "evidence": ["e"],
            }
        ],
        phase="wake",
    )
    proposal_id = proposed.results[0].proposal_id
    assert proposal_id is not None
    assert [p.id for p in space.review.pending()] == [proposal_id]
    space.redact(node.id, reason="request #5", actor="dpo")
    assert space.review.pending() == []
    decided = space.review.get(proposal_id)
    assert (decided.status, decided.decided_by) == ("rejected", "dpo")


def test_the_named_version_must_be_visible_and_the_rest_is_erased_whatever_its_privacy(
    erasing_store, database_url
):
    space = erasing_store.namespace(f"erasure-{uuid.uuid4().hex[:10]}")
    public = space.remember(f"public {TOKEN}", kind="semantic", privacy=0)
    secret = space.revise(public.id, f"secret {TOKEN}", reason="r", privacy=3)
    with psycopg.connect(database_url) as admin:
        declare_namespace(admin, space.id, ceiling=0)
        call = "SELECT node_id FROM memstore.redact_lineage(%s, %s, 'request', 'dpo', true)"
        # Under ceiling 0 the privacy-3 version is not there to be named...
        with pytest.raises(psycopg.Error, match="does not exist") as exc:
            admin.execute(call, (space.id, secret.id))
        assert exc.value.sqlstate == "MS005"
        admin.rollback()
        # ...but naming the visible one erases the whole memory, and the
        # declared ceiling is back afterwards.
        declare_namespace(admin, space.id, ceiling=0)
        erased = admin.execute(call, (space.id, public.id)).fetchall()
        ceiling = admin.execute("SELECT current_setting('memstore.privacy_ceiling')").fetchone()
        admin.commit()
    assert sorted(row[0] for row in erased) == [public.id, secret.id]
    assert ceiling == ("0",)
    assert {v.content for v in space.lineage(public.id)} == {""}
