"""The privacy ceiling holds on every read path (issue 17 §1).

The read verbs are enumerated from the API itself: every public callable of
the store, the namespace, its tiers and its transaction that is not in the
small, explicit lists of write verbs and helpers below is a read, must accept
``privacy_ceiling``, and must be exercised by :data:`READS` — so a new verb
cannot be forgotten. Each read then runs under ceiling 0 over a namespace
whose privacy-3 memories carry a distinctive word, are linked by edges to
privacy-0 memories, are the newest timeline turn, a pin, a lesson, a
procedure, a consolidation event and a newer version of a public memory:
nothing of them may come back, directly, through an edge, as a recent turn or
in a packet section. The same runs with the ceiling given by the store's
default (``Settings(privacy_ceiling=0)``) instead of the call, and as
``memstore_app`` (row-level security) as well as the owner (who bypasses it).
"""

from __future__ import annotations

import inspect
import io
import typing
import uuid
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Any

import pytest
import sqlalchemy as sa
from pydantic import BaseModel

from memstore import MemoryStore
from memstore.config import Settings
from memstore.db.transaction import confined
from memstore.embedding import HashingEmbedder
from memstore.errors import (
    InvalidInputError,
    NodeNotFoundError,
    NodeSupersededError,
    ProposalNotFoundError,
)
from memstore.graph.rows import fetch_nodes
from memstore.lifecycle.review import Review
from memstore.namespace import Namespace
from memstore.tiers.keyed import KeyedEntries
from memstore.tx import NamespaceTransaction

TOKEN = "zebraquill"  # in every field of every secret memory; in nothing public

# --- the API's verbs -----------------------------------------------------------------

# Write verbs: they change memory, and run under the store's default ceiling
# (a memory above it cannot be read, linked, revised or written through them).
WRITES: dict[str, set[str]] = {
    "MemoryStore": {"open", "close", "restore"},
    "Namespace": {
        "remember", "remember_many", "link", "revise", "forget", "redact", "apply", "sleep",
        "cultivate", "set_policy", "clear", "decay_hebbian", "rebuild_embeddings", "maintain",
        "confirm", "strengthen",
    },
    "NamespaceTransaction": {
        "remember", "remember_item", "store_item", "link", "revise", "forget", "redact",
    },
    "Timeline": {"ingest_turn", "ingest_turns"},
    "Scratchpad": {"pin", "unpin"},
    "Lessons": {"add", "add_if_new", "remove", "record_applied", "enforce_cap", "decay_unused"},
    "Procedures": {
        "add", "add_if_new", "refine", "remove", "record_success", "record_outcome", "use",
    },
    "KeyedEntries": {"put", "put_many", "forget"},
    "Consolidation": {"record"},
    "Review": {"accept", "reject"},
}  # fmt: skip

# Public callables that read no memory by themselves, each with the reason.
HELPERS: dict[str, dict[str, str]] = {
    "MemoryStore": {
        "namespace": "hands out a handle; reads nothing (its verbs take the ceiling)",
        "transaction": "a raw connection for operators, outside any namespace",
    },
    "Namespace": {"keyed": "hands out a tier's keyed entries; reads nothing (their reads do)"},
    "NamespaceTransaction": {
        "raise_missing": "raises the not-found error; reads nothing",
        "sanctioned": "hands the lifecycle package this transaction with rights; reads nothing",
        "policy": "the law's policy, read under the transaction's declared ceiling",
    },
    "Procedures": {"steps": "types a node's steps; reads no database"},
}

# Namespace properties that are not tiers of memory: the review queue (its reads are
# enumerated all the same, below: a proposal about a secret is as secret as it).
NOT_TIERS = {"review"}


def _tier_classes() -> dict[str, type]:
    hints = {}
    for name, member in inspect.getmembers(Namespace):
        if isinstance(member, cached_property) and name not in NOT_TIERS:
            hints[name] = typing.get_type_hints(member.func)["return"]
    return hints


def _classes() -> dict[str, type]:
    classes: dict[str, type] = {
        "MemoryStore": MemoryStore,
        "Namespace": Namespace,
        "NamespaceTransaction": NamespaceTransaction,
    }
    for tier in _tier_classes().values():
        classes[tier.__name__] = tier
    classes["Review"] = Review
    classes["KeyedEntries"] = KeyedEntries
    return classes


def _public_callables(cls: type) -> set[str]:
    names = set()
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or isinstance(member, property | cached_property):
            continue
        if callable(member):
            names.add(name)
    return names


def read_verbs() -> dict[str, set[str]]:
    """Every public callable that is neither a write verb nor a helper, by class."""
    return {
        cls_name: _public_callables(cls)
        - WRITES.get(cls_name, set())
        - set(HELPERS.get(cls_name, {}))
        for cls_name, cls in _classes().items()
    }


def test_the_tiers_are_found_from_the_namespace():
    assert set(_tier_classes()) == {
        "timeline",
        "scratchpad",
        "lessons",
        "procedures",
        "consolidation",
    }


def test_the_write_and_helper_lists_name_real_callables():
    classes = _classes()
    for cls_name, names in [*WRITES.items(), *((c, set(h)) for c, h in HELPERS.items())]:
        assert names <= _public_callables(classes[cls_name]), cls_name


def test_every_read_verb_accepts_privacy_ceiling_by_keyword():
    classes = _classes()
    reads = read_verbs()
    assert reads["Namespace"] >= {"recall", "activate", "recall_context", "get", "lineage"}
    for cls_name, names in reads.items():
        for name in names:
            parameters = inspect.signature(getattr(classes[cls_name], name)).parameters
            assert "privacy_ceiling" in parameters, f"{cls_name}.{name}"
            assert parameters["privacy_ceiling"].kind in (
                inspect.Parameter.KEYWORD_ONLY,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
            ), f"{cls_name}.{name}"
            assert parameters["privacy_ceiling"].default is None, f"{cls_name}.{name}"


# --- a namespace with secrets ------------------------------------------------------------


class World(typing.NamedTuple):
    name: str
    public: dict[str, int]
    secret: dict[str, int]
    public_nodes: int
    """Nodes of privacy 0 in the namespace (all of them, whatever their status)."""
    proposals: dict[str, int]
    """Proposals about the secrets, by operation."""


def _secret(**fields: Any) -> dict[str, Any]:
    return {
        "privacy": 3,
        "label": f"{TOKEN}-label",
        "subject": f"{TOKEN}-subject",
        "source": f"{TOKEN}-source",
        **fields,
    }


def _build(store: MemoryStore) -> World:
    ns = store.namespace(f"ceiling-{uuid.uuid4().hex[:8]}")
    public: dict[str, int] = {}
    secret: dict[str, int] = {}
    public["harbour"] = ns.remember("The harbour opens at dawn for the ferry").id
    public["ferry"] = ns.remember("The ferry to the island leaves from the harbour").id
    secret["code"] = ns.remember(
        f"{TOKEN} launch code for the harbour ferry is 7731",
        **_secret(data={"note": f"{TOKEN} data"}),
    ).id
    # Edges both ways between the secret and public memories.
    ns.link(public["harbour"], secret["code"], relation="related", weight=1.0)
    ns.link(secret["code"], public["ferry"], relation="related", weight=1.0)
    ns.link(public["harbour"], public["ferry"], relation="related", weight=0.5)
    # A public memory whose newer version is secret.
    public["plan"] = ns.remember("The harbour plan names the ferry captain").id
    secret["plan_v2"] = ns.revise(
        public["plan"],
        f"The harbour plan names {TOKEN} as the ferry captain",
        reason="updated",
        privacy=3,
        label=f"{TOKEN}-label",
    ).id
    # Tiers: a public and a secret entry each; the secret turn is the newest.
    ns.timeline.ingest_turn("user", "When does the harbour ferry leave?", "s1")
    public["pin"] = ns.scratchpad.pin("harbour", "opens at dawn").id
    public["lesson"] = ns.lessons.add(
        "Check the harbour ferry times before planning", source="test", confidence=0.95
    ).id
    public["procedure"] = ns.procedures.add(
        "ferry",
        description="Take the harbour ferry.",
        steps=[{"tool": "ticket", "purpose": "board", "instruction": "buy a ferry ticket"}],
    ).id
    ns.consolidation.record(3, "Folded the harbour ferry chat", 100)
    # Keyed entries (the LangGraph adapter's): a public key and a secret one.
    public["keyed"] = ns.keyed("notes").put("harbour", "The harbour note", data={"v": 1}).id
    secret["keyed"] = ns.remember(
        f"{TOKEN} note on the harbour", tier="notes", **_secret(label="vault")
    ).id
    # Proposals about a secret: one naming it, one carrying secret words to write.
    proposals: dict[str, int] = {}
    for operation in (
        {"op": "forget", "target_id": secret["code"], "reason": f"{TOKEN} is stale"},
        {
            "op": "record_short_term",
            "anatomy": {
                "target": "harbour",
                "claim_or_question": f"{TOKEN} opens the vault",
                "tension": "t",
                "action_implication": "a",
                "anchors": ["turn:1"],
            },
            "privacy": 3,
        },
    ):
        proposed = ns.apply(
            [{"op": "propose", "operation": operation, "rationale": "r", "evidence": ["t:1"]}],
            phase="wake",
            actor="agent",
        )
        assert proposed.applied, proposed.summary()
        proposals[str(operation["op"])] = proposed.results[0].proposal_id or 0
    secret["turn"] = ns.remember(
        f"user: the {TOKEN} ferry harbour password",
        **_secret(
            kind="episodic",
            node_type="Turn",
            tier="timeline",
            scope="s1",
            actor="user",
            data={"role": "user", "session_id": "s1"},
        ),
    ).id
    secret["pin"] = ns.remember(
        f"{TOKEN}: harbour ferry vault",
        **_secret(
            kind="working",
            node_type="Pin",
            tier="scratchpad",
            label=TOKEN,
            data={"key": TOKEN, "value": "harbour ferry vault"},
        ),
    ).id
    secret["lesson"] = ns.remember(
        f"Never tell anyone the {TOKEN} harbour ferry code",
        **_secret(
            kind="semantic",
            node_type="Lesson",
            tier="lessons",
            confidence=0.99,
            source="test",
        ),
    ).id
    secret["procedure"] = ns.remember(
        f"Procedure {TOKEN}: open the harbour ferry vault",
        **_secret(
            kind="procedural",
            node_type="Procedure",
            tier="procedures",
            label=TOKEN,
            data={
                "name": TOKEN,
                "description": "harbour ferry vault",
                "steps": [{"tool": "key", "purpose": "open", "instruction": f"use {TOKEN}"}],
            },
        ),
    ).id
    secret["event"] = ns.remember(
        f"Folded the {TOKEN} harbour ferry secrets",
        **_secret(
            kind="episodic",
            node_type="ConsolidationEvent",
            tier="consolidation",
            data={"messages_consolidated": 1000, "context_length": 9},
        ),
    ).id
    with store.transaction() as conn:
        public_nodes = conn.execute(
            sa.text(
                "SELECT count(*) FROM memstore.nodes n JOIN memstore.namespaces s"
                " ON s.id = n.namespace_id WHERE s.name = :name AND n.privacy = 0"
            ),
            {"name": ns.name},
        ).scalar_one()
    return World(ns.name, public, secret, int(public_nodes), proposals)


# --- the reads, each under a given way of setting the ceiling ------------------------------

Call = Callable[[MemoryStore, Namespace, World, dict[str, Any]], Any]


def _in_transaction(ns: Namespace, kw: dict[str, Any], read: Callable[[Any], Any]) -> Any:
    # Under the ceiling given to the verb (the transaction at the store's
    # default), or under the transaction's (the store default's) ceiling.
    with ns.transaction() as tx:
        return read(tx)


def _or_not_found(read: Callable[[], Any]) -> Any:
    # A seed whose current version is above the ceiling stands for nothing the
    # caller may see: an empty activation or not found, never the version.
    try:
        return read()
    except NodeNotFoundError as exc:
        return str(exc)


def _proposal(ns: Namespace, proposal: int, kw: dict[str, Any]) -> Any:
    try:
        return ns.review.get(proposal, **kw)
    except ProposalNotFoundError as exc:
        return str(exc)


def _packet(ns: Namespace, kw: dict[str, Any], **options: Any) -> Any:
    packet = ns.recall_context("harbour ferry code password vault", 4000, **options, **kw)
    return [packet, packet.render()]


READS: dict[str, Call] = {
    "MemoryStore.status": lambda st, ns, w, kw: st.status(**kw),
    "MemoryStore.namespaces": lambda st, ns, w, kw: [
        i for i in st.namespaces(**kw) if i.name == w.name
    ],
    "Namespace.recall": lambda st, ns, w, kw: (
        [
            ns.recall(f"{TOKEN} harbour ferry", k=50, mode=mode, **kw)
            for mode in ("hybrid", "semantic", "lexical")
        ]
        + [ns.recall("harbour plan", k=50, include_superseded=True, include_tombstoned=True, **kw)]
    ),
    "Namespace.activate": lambda st, ns, w, kw: [
        ns.activate("launch code harbour ferry", depth=3, both_directions=True, **kw),
        ns.activate(seeds=[w.public["harbour"]], depth=3, both_directions=True, **kw),
        _or_not_found(lambda: ns.activate(seeds=[w.public["plan"]], depth=2, **kw)),
    ],
    "Namespace.recall_context": lambda st, ns, w, kw: [
        _packet(ns, kw),
        _packet(ns, kw, session_id="s1"),
    ],
    "Namespace.get": lambda st, ns, w, kw: [ns.get(i, **kw) for i in w.public.values()],
    "Namespace.lineage": lambda st, ns, w, kw: ns.lineage(w.public["plan"], **kw),
    "Namespace.list_memories": lambda st, ns, w, kw: ns.list_memories(limit=500, **kw),
    "Namespace.summary": lambda st, ns, w, kw: ns.summary(**kw),
    "Namespace.status_summary": lambda st, ns, w, kw: ns.status_summary(**kw),
    "Namespace.embedding_status": lambda st, ns, w, kw: ns.embedding_status(**kw),
    "Namespace.policy": lambda st, ns, w, kw: ns.policy(**kw),
    "Namespace.exists": lambda st, ns, w, kw: ns.exists(**kw),
    # A whole namespace or nothing: below the top level an export is refused.
    "Namespace.export": lambda st, ns, w, kw: _export_refused(ns, kw),
    "Namespace.transaction": lambda st, ns, w, kw: _read_in(ns.transaction(**kw), w),
    "Namespace.reading": lambda st, ns, w, kw: _read_in(ns.reading(**kw), w),
    "Namespace.connection": lambda st, ns, w, kw: _fetch_in(ns, ns.connection(**kw), w),
    "NamespaceTransaction.node": lambda st, ns, w, kw: _in_transaction(
        ns, kw, lambda tx: [tx.node(i, **kw) for i in w.public.values()]
    ),
    "NamespaceTransaction.current": lambda st, ns, w, kw: _in_transaction(
        ns, kw, lambda tx: tx.current(w.public["harbour"], **kw)
    ),
    "NamespaceTransaction.lineage": lambda st, ns, w, kw: _in_transaction(
        ns, kw, lambda tx: tx.lineage(w.public["plan"], **kw)
    ),
    "Timeline.recent": lambda st, ns, w, kw: [
        ns.timeline.recent(**kw),
        ns.timeline.recent(1, session_id="s1", **kw),
    ],
    "Timeline.search": lambda st, ns, w, kw: ns.timeline.search(f"{TOKEN} ferry", **kw),
    "Timeline.entry_count": lambda st, ns, w, kw: ns.timeline.entry_count(**kw),
    "Scratchpad.get": lambda st, ns, w, kw: [
        ns.scratchpad.get(TOKEN, **kw),
        ns.scratchpad.get("harbour", **kw),
    ],
    "Scratchpad.history": lambda st, ns, w, kw: [
        ns.scratchpad.history(TOKEN, **kw),
        ns.scratchpad.history("harbour", **kw),
    ],
    "Scratchpad.all": lambda st, ns, w, kw: ns.scratchpad.all(**kw),
    "Scratchpad.count": lambda st, ns, w, kw: ns.scratchpad.count(**kw),
    "Lessons.get": lambda st, ns, w, kw: ns.lessons.get(w.public["lesson"], **kw),
    "Lessons.all": lambda st, ns, w, kw: ns.lessons.all(**kw),
    "Lessons.count": lambda st, ns, w, kw: ns.lessons.count(**kw),
    "Lessons.high_confidence": lambda st, ns, w, kw: ns.lessons.high_confidence(0.5, **kw),
    "Lessons.search": lambda st, ns, w, kw: ns.lessons.search(f"{TOKEN} harbour code", **kw),
    "Lessons.find_duplicate": lambda st, ns, w, kw: ns.lessons.find_duplicate(
        f"Never tell anyone the {TOKEN} harbour ferry code", **kw
    ),
    "Procedures.find_by_name": lambda st, ns, w, kw: [
        ns.procedures.find_by_name(TOKEN, **kw),
        ns.procedures.find_by_name("ferry", **kw),
    ],
    "Procedures.all": lambda st, ns, w, kw: ns.procedures.all(**kw),
    "Procedures.versions": lambda st, ns, w, kw: ns.procedures.versions("ferry", **kw),
    "Procedures.stats": lambda st, ns, w, kw: ns.procedures.stats("ferry", **kw),
    "Procedures.outcomes": lambda st, ns, w, kw: ns.procedures.outcomes("ferry", **kw),
    "Procedures.roles": lambda st, ns, w, kw: ns.procedures.roles("ferry", **kw),
    "Procedures.count": lambda st, ns, w, kw: ns.procedures.count(**kw),
    "Procedures.last_used": lambda st, ns, w, kw: [
        ns.procedures.last_used("ferry", **kw),
        ns.procedures.last_used(w.public["procedure"], **kw),
    ],
    "Namespace.edges": lambda st, ns, w, kw: [
        ns.edges(w.public["harbour"], **kw),
        ns.edges(w.public["ferry"], direction="in", **kw),
        _or_not_found(lambda: ns.edges(w.public["plan"], **kw)),
    ],
    "Namespace.neighbours": lambda st, ns, w, kw: [
        ns.neighbours(w.public["harbour"], depth=3, **kw),
        ns.neighbours(w.public["ferry"], depth=2, direction="in", **kw),
        _or_not_found(lambda: ns.neighbours(w.public["plan"], **kw)),
    ],
    "Namespace.similarity": lambda st, ns, w, kw: [
        ns.similarity(w.public["harbour"], w.public["ferry"], **kw),
        _or_not_found(lambda: ns.similarity(w.public["harbour"], w.secret["code"], **kw)),
    ],
    "KeyedEntries.get": lambda st, ns, w, kw: ns.keyed("notes").get(["harbour", "vault"], **kw),
    "KeyedEntries.all": lambda st, ns, w, kw: ns.keyed("notes").all(limit=50, **kw),
    "KeyedEntries.history": lambda st, ns, w, kw: [
        ns.keyed("notes").history("harbour", **kw),
        ns.keyed("notes").history("vault", **kw),
    ],
    "Consolidation.history": lambda st, ns, w, kw: ns.consolidation.history(**kw),
    "Consolidation.total": lambda st, ns, w, kw: ns.consolidation.total(**kw),
    "Review.pending": lambda st, ns, w, kw: ns.review.pending(**kw),
    "Review.get": lambda st, ns, w, kw: [_proposal(ns, p, kw) for p in w.proposals.values()],
}

# What a ceiling-0 reader must get for the counts (a secret must not be counted).
EXPECTED_COUNTS: dict[str, Callable[[Any], bool]] = {
    "Timeline.entry_count": lambda got: got == 1,
    "Scratchpad.count": lambda got: got == 1,
    "Lessons.count": lambda got: got == 1,
    "Consolidation.total": lambda got: got == 3,
    "Procedures.count": lambda got: got == 1,
}


def _read_in(opened: Any, world: World) -> Any:
    with opened as tx:
        return [tx.node(i) for i in world.public.values()] + [tx.lineage(world.public["plan"])]


def _export_refused(ns: Namespace, kw: dict[str, Any]) -> Any:
    written = io.BytesIO()
    with pytest.raises(InvalidInputError, match="privacy_ceiling"):
        ns.export(written, **kw)
    return written.getvalue().decode()


def _fetch_in(ns: Namespace, opened: Any, world: World) -> Any:
    # The service's node reads on the connection filter by the ceiling it declared.
    with opened as conn:
        every = [*world.public.values(), *world.secret.values()]
        return list(fetch_nodes(conn, ns.id, ns.name, every).values())


def test_every_read_verb_is_exercised_below():
    exercised = {name for name in READS}
    enumerated = {f"{cls}.{name}" for cls, names in read_verbs().items() for name in names}
    assert exercised == enumerated


def _dumped(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_dumped(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _dumped(v) for k, v in value.items()}
    return value


def _node_ids(value: Any) -> set[int]:
    """Ids of nodes anywhere in a dumped result (nodes, path steps, packet items)."""
    found: set[int] = set()
    if isinstance(value, dict):
        if "node_type" in value and isinstance(value.get("id"), int):
            found.add(value["id"])
        for key in ("node_id", "superseded_by"):
            if isinstance(value.get(key), int):
                found.add(value[key])
        for v in value.values():
            found |= _node_ids(v)
    elif isinstance(value, list):
        for v in value:
            found |= _node_ids(v)
    return found


# --- the runs ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(store: MemoryStore) -> World:
    return _build(store)


@pytest.fixture(params=["owner", "app"])
def role_url(request: pytest.FixtureRequest, database_url: str) -> str:
    if request.param == "owner":
        return database_url
    return str(request.getfixturevalue("app_url"))


@pytest.fixture(params=["argument", "store default"])
def reader(
    request: pytest.FixtureRequest, role_url: str
) -> Iterator[tuple[MemoryStore, dict[str, Any]]]:
    """A store and the keywords that put a read under ceiling 0: given to each call, or
    nothing given and the store's default setting at 0."""
    by_default = request.param == "store default"
    settings = Settings(privacy_ceiling=0 if by_default else 3)
    with MemoryStore.open(role_url, settings=settings, embedder=HashingEmbedder()) as opened:
        yield opened, ({} if by_default else {"privacy_ceiling": 0})


@pytest.mark.parametrize("verb", sorted(READS))
def test_a_secret_never_comes_back_under_ceiling_0(reader, world, verb):
    store, kw = reader
    ns = store.namespace(world.name)
    got = READS[verb](store, ns, world, kw)
    dumped = _dumped(got)
    text = repr(dumped)
    assert TOKEN not in text, verb
    assert not _node_ids(dumped) & set(world.secret.values()), verb
    if verb in EXPECTED_COUNTS:
        assert EXPECTED_COUNTS[verb](got), (verb, got)


def test_summaries_count_nothing_above_the_ceiling(reader, world):
    store, kw = reader
    ns = store.namespace(world.name)
    assert sum(ns.summary(**kw).by_status.values()) == world.public_nodes
    assert ns.embedding_status(**kw).nodes == world.public_nodes
    listed = [i.nodes for i in store.namespaces(**kw) if i.name == world.name]
    with store.transaction() as conn:
        # A confined role may not list namespaces: it sees none.
        assert listed == ([] if confined(conn) else [world.public_nodes])


def test_a_secret_is_answered_exactly_like_a_missing_id(reader, world):
    store, kw = reader
    ns = store.namespace(world.name)
    missing = 10**15
    for secret in world.secret.values():
        for read in (
            lambda i: ns.get(i, **kw),
            lambda i: ns.lineage(i, **kw),
            lambda i: ns.lessons.get(i, **kw),
        ):
            with pytest.raises(NodeNotFoundError) as hidden:
                read(secret)
            with pytest.raises(NodeNotFoundError) as absent:
                read(missing)
            assert type(hidden.value) is type(absent.value)
            assert str(hidden.value) == str(absent.value).replace(
                f"node {missing} ", f"node {secret} "
            )


def test_linking_to_a_secret_fails_like_linking_to_nothing(reader, world):
    store, kw = reader
    ns = store.namespace(world.name)
    other = store.namespace(f"{world.name}-other")
    missing = 10**15
    errors = {}
    with ns.transaction(**kw) as tx:
        for what, target in (("secret", world.secret["code"]), ("missing", missing)):
            with pytest.raises(NodeNotFoundError) as caught:
                tx.link(world.public["harbour"], target)
            errors[what] = str(caught.value).replace(f"node {target} ", "node N ")
    # Another namespace's node: the same answer (it existed; the caller must not learn it).
    elsewhere = other.remember("a memory of another namespace")
    with pytest.raises(NodeNotFoundError) as caught:
        ns.link(world.public["harbour"], elsewhere.id)
    errors["elsewhere"] = str(caught.value).replace(f"node {elsewhere.id} ", "node N ")
    assert len(set(errors.values())) == 1, errors


def test_a_transaction_read_narrows_and_restores_its_ceiling(store, world):
    ns = store.namespace(world.name)
    with ns.transaction() as tx:  # the store's default: 3
        with pytest.raises(NodeNotFoundError):
            tx.node(world.secret["code"], privacy_ceiling=0)
        assert TOKEN in tx.node(world.secret["code"]).content  # the transaction's again
        assert [n.id for n in tx.lineage(world.public["plan"], privacy_ceiling=0)] == [
            world.public["plan"]
        ]
        assert len(tx.lineage(world.public["plan"])) == 2
    with ns.transaction(privacy_ceiling=0) as tx:
        with pytest.raises(NodeNotFoundError):
            tx.node(world.secret["code"], privacy_ceiling=3)  # cannot widen it


@pytest.mark.parametrize("bad", [-1, 4, 1.5, "0", True])
def test_a_bad_ceiling_is_refused_by_name(store, world, bad):
    ns = store.namespace(world.name)
    for read in (
        lambda: ns.recall("harbour", privacy_ceiling=bad),
        lambda: ns.recall_context("harbour", privacy_ceiling=bad),
        lambda: ns.get(world.public["harbour"], privacy_ceiling=bad),
        lambda: ns.timeline.recent(privacy_ceiling=bad),
        lambda: store.status(privacy_ceiling=bad),
    ):
        with pytest.raises(InvalidInputError) as caught:
            read()
        assert caught.value.field == "privacy_ceiling"


def test_a_write_above_its_ceiling_is_refused_and_writes_nothing(database_url, world):
    settings = Settings(privacy_ceiling=1)
    with MemoryStore.open(database_url, settings=settings, embedder=HashingEmbedder()) as low:
        ns = low.namespace(world.name)
        before = ns.summary(privacy_ceiling=1)
        with pytest.raises(InvalidInputError, match="above the privacy ceiling"):
            ns.remember("too secret for this writer", privacy=2)
        with pytest.raises(InvalidInputError, match="above the privacy ceiling"):
            ns.remember_many([{"content": "also too secret", "privacy": 3}])
        with pytest.raises(NodeNotFoundError):
            ns.revise(world.secret["code"], "rewritten", reason="cannot see it")
        with pytest.raises(NodeNotFoundError):
            ns.forget(world.secret["code"], reason="cannot see it")
        assert ns.summary(privacy_ceiling=1) == before


def test_the_setting_reads_its_environment_variable(monkeypatch):
    monkeypatch.setenv("MEMSTORE_PRIVACY_CEILING", "1")
    assert Settings().privacy_ceiling == 1
    monkeypatch.setenv("MEMSTORE_PRIVACY_CEILING", "4")
    with pytest.raises(ValueError, match="privacy_ceiling"):
        Settings()
    monkeypatch.delenv("MEMSTORE_PRIVACY_CEILING")
    assert Settings().privacy_ceiling == 3


def test_remembering_a_secrets_words_neither_returns_nor_reveals_it(store, role_url):
    # Ingest is idempotent: the same content is one node. A writer under a
    # lower ceiling must neither get the hidden node back nor learn from an
    # error that it exists: its memory becomes a node of its own.
    ns = store.namespace(f"dedupe-{uuid.uuid4().hex[:8]}")
    content = f"{TOKEN} launch code for the harbour ferry is 7731"
    secret = ns.remember(content, privacy=3)
    low = Settings(privacy_ceiling=0)
    with MemoryStore.open(role_url, settings=low, embedder=HashingEmbedder()) as writer:
        mine = writer.namespace(ns.name)
        node = mine.remember(content)
        assert node.id != secret.id and node.privacy == 0 and node.content == content
        assert mine.remember(content).id == node.id  # still idempotent for this writer
        with mine.transaction() as tx:
            assert tx.remember(content).id == node.id
        again, other = mine.remember_many([content, f"{content} and more"])
        assert again == node.id and other not in (secret.id, node.id)
        assert [n.id for n in mine.lineage(node.id)] == [node.id]
    # The secret is untouched, and the store's default reader sees both.
    assert ns.get(secret.id).privacy == 3 and ns.get(node.id).privacy == 0
    assert ns.remember(content, privacy=3).id == secret.id


def test_clear_retires_only_what_the_caller_could_read(store, database_url):
    ns = store.namespace(f"clear-{uuid.uuid4().hex[:8]}")
    public = ns.remember("a public note")
    secret = ns.remember("a secret note", privacy=3)
    low = Settings(privacy_ceiling=0)
    with MemoryStore.open(database_url, settings=low, embedder=HashingEmbedder()) as writer:
        assert writer.namespace(ns.name).clear(reason="wipe") == 1
    assert ns.get(public.id).status.value == "tombstoned"
    assert ns.get(secret.id).status.value == "current"


def test_a_stale_id_does_not_name_a_hidden_newer_version(database_url, world):
    low = Settings(privacy_ceiling=0)
    with MemoryStore.open(database_url, settings=low, embedder=HashingEmbedder()) as reader:
        ns = reader.namespace(world.name)
        with pytest.raises(NodeSupersededError) as caught:
            ns.revise(world.public["plan"], "a new plan", reason="stale id")
        assert caught.value.current_id is None
        assert str(world.secret["plan_v2"]) not in str(caught.value)
        assert ns.get(world.public["plan"]).superseded_by is None
