"""The REST routes: thin shells over the namespace's verbs (docs/server.md).

Every route under ``/v1/namespaces/{namespace}`` authenticates the request's
key, checks that the key reaches the namespace (404 otherwise, the same answer
as a missing memory) and holds the scope (403), then calls one library verb.
Bodies are the library's own models where it has them (MemoryInput,
LinkInput, RecallQuery, ActivateRequest, ContextRequest); the few below wrap a
verb's keyword arguments. Endpoints are plain ``def``: the library is
synchronous and FastAPI runs them in its threadpool.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from memstore.activation.model import ActivateRequest, Activation
from memstore.db import migrate
from memstore.errors import InvalidInputError
from memstore.graph.listing import LIST_LIMIT_MAX, MemoryPage
from memstore.inputs import LinkInput
from memstore.law.ops import Phase
from memstore.law.receipt import Proposal, Receipt
from memstore.models import Edge, Hit, Kind, MemoryInput, Neighbour, Node, Reason
from memstore.namespace import Namespace
from memstore.recall.query import RecallQuery
from memstore.server.app import state_of
from memstore.server.auth import Principal
from memstore.services.graph import MAX_DEPTH, MAX_EDGES, MAX_NEIGHBOURS, Direction
from memstore.tiers.context import ContextPacket, ContextRequest
from memstore.tiers.summary import NamespaceSummary

# Shown in the OpenAPI document; the key is checked in each endpoint's thread.
bearer = HTTPBearer(auto_error=False, description="An API key: `memstore keys create`.")

health = APIRouter(tags=["health"])
api = APIRouter(tags=["memories"], dependencies=[Depends(bearer)])

NS = "/namespaces/{namespace:path}"
BATCH_MAX = 10_000
OPS_MAX = 1000

Actor = Annotated[str, Field(min_length=1, max_length=200)]


# --- bodies the library has no model for ----------------------------------------------


class BatchRequest(BaseModel):
    """``POST /memories/batch``: what :meth:`Namespace.remember_many` stores, all or none."""

    model_config = ConfigDict(extra="forbid")

    items: list[MemoryInput] = Field(max_length=BATCH_MAX)


class BatchResult(BaseModel):
    """``POST /memories/batch``: the ids of the memories remembered (or already held)."""

    ids: list[int]
    """The node ids, in input order."""


class ReviseRequest(BaseModel):
    """``POST /memories/{id}/revise``: the new content, why, and fields to change."""

    model_config = ConfigDict(extra="forbid")

    content: str
    reason: Reason
    actor: Actor | None = None
    changes: dict[str, Any] = Field(
        default_factory=dict,
        description="Fields of MemoryInput to change (kind, label, data, importance, ...).",
    )


# The fields a revision may change: MemoryInput's, but for the content and the
# actor, which the request gives at its top level.
REVISABLE = frozenset(MemoryInput.model_fields) - {"content", "actor"}


class ForgetRequest(BaseModel):
    """``POST /memories/{id}/forget``: why (kept with the tombstone), and who."""

    model_config = ConfigDict(extra="forbid")

    reason: Reason
    actor: Actor | None = None


class Forgotten(BaseModel):
    """A forgotten memory: its id and the tombstone that now stands for it."""

    id: int
    """The memory forgotten."""
    tombstone_id: int
    status: Literal["tombstoned"] = "tombstoned"


class RedactRequest(BaseModel):
    """``POST /memories/{id}/redact``: why, who, and every version (``all``) or this one."""

    model_config = ConfigDict(extra="forbid")

    reason: Reason
    actor: Actor | None = None
    versions: Literal["all", "one"] = "all"


class ContextAnswer(ContextPacket):
    """The context packet: its sections, and ``text``, the packet rendered for a prompt."""

    text: str


ANSWER = TypeAdapter(ContextAnswer)


class ApplyRequest(BaseModel):
    """``POST /apply``: typed lifecycle operations, judged by the law (docs/lifecycle.md)."""

    model_config = ConfigDict(extra="forbid")

    ops: list[dict[str, Any] | str] = Field(max_length=OPS_MAX)
    phase: Phase
    atomic: bool = True
    actor: Actor | None = None


class SleepRequest(BaseModel):
    """``POST /sleep``: consolidate short-term memory (given ops, or the built-in distiller)."""

    model_config = ConfigDict(extra="forbid")

    ops: list[dict[str, Any] | str] | None = Field(default=None, max_length=OPS_MAX)
    forced: bool = False
    actor: Actor | None = None
    older_than_seconds: float | None = Field(default=None, ge=0, le=10 * 365 * 86400)


class AcceptRequest(BaseModel):
    """``POST /proposals/{id}/accept``: an optional note kept with the decision."""

    model_config = ConfigDict(extra="forbid")

    note: Annotated[str, Field(min_length=1, max_length=2000)] | None = None


class RejectRequest(BaseModel):
    """``POST /proposals/{id}/reject``: why (kept with the decision)."""

    model_config = ConfigDict(extra="forbid")

    reason: Reason


class Ready(BaseModel):
    """``GET /readyz``: the database answered and its schema is the package's."""

    status: Literal["ready"] = "ready"
    schema_revision: str | None


# --- the key, the namespace -------------------------------------------------------------


def _open(request: Request, namespace: str, scope: str) -> tuple[Namespace, Principal]:
    state = state_of(request.app)
    principal = state.authenticate(request.headers.get("authorization"))
    return state.namespace_for(principal, namespace, scope), principal


def _label(principal: Principal) -> str:
    """Who acted, when the body names nobody: the key (its name, else its id)."""
    return f"key:{principal.name}" if principal.name else f"key:{principal.key_id}"


HITS = TypeAdapter(list[Hit])
NODE = TypeAdapter(Node)
PAGE = TypeAdapter(MemoryPage)


def _json(adapter: TypeAdapter[Any], value: Any, status_code: int = 200) -> Response:
    """``value`` serialised by its own model, straight to the response.

    The hot reads return a Response so that FastAPI does not validate again
    what the library just built (one more thread hop and a copy per request);
    their ``response_model`` still documents them.
    """
    return Response(
        adapter.dump_json(value), status_code=status_code, media_type="application/json"
    )


def _given(model: BaseModel, *leave_out: str) -> dict[str, Any]:
    """The fields the client set (excluded-from-dump ones, like a vector, included)."""
    return {name: getattr(model, name) for name in model.model_fields_set if name not in leave_out}


# --- health -----------------------------------------------------------------------------


@health.get("/healthz", summary="The process is up")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@health.get("/readyz", summary="The database is reachable and its schema current")
def readyz(request: Request) -> Ready:
    store = state_of(request.app).store
    with store.transaction() as conn:
        migrate.require_current(conn)
        revision = migrate.current_revision(conn)
    return Ready(schema_revision=revision)


# --- memories ---------------------------------------------------------------------------


@api.post(NS + "/memories", status_code=201, summary="Remember one memory (idempotent)")
def remember(namespace: str, body: MemoryInput, request: Request, response: Response) -> Node:
    """201 with the new node; 200 with the stored one when the memory already existed."""
    ns, _ = _open(request, namespace, "write")
    with state_of(request.app).store.transaction() as conn:
        before = conn.execute(sa.select(sa.func.now())).scalar_one()
    node = ns.remember(body.content, **_given(body, "content"))
    if node.recorded_at < before:
        response.status_code = 200
    return node


@api.post(NS + "/memories/batch", status_code=201, summary="Remember many, all or none")
def remember_batch(namespace: str, body: BatchRequest, request: Request) -> BatchResult:
    ns, _ = _open(request, namespace, "write")
    return BatchResult(ids=ns.remember_many(body.items))


@api.get(NS + "/memories", summary="Current memories, a page at a time", response_model=MemoryPage)
def list_memories(
    namespace: str,
    request: Request,
    cursor: Annotated[int, Query(ge=0, description="next_cursor of the previous page")] = 0,
    limit: Annotated[int, Query(ge=1, le=LIST_LIMIT_MAX)] = 50,
    kind: Annotated[list[Kind] | None, Query()] = None,
    tier: Annotated[list[str] | None, Query()] = None,
    tag: Annotated[
        list[str] | None, Query(description="Only memories carrying this tag (repeat: all of them)")
    ] = None,
) -> Response:
    """Keyset pagination by id: pass ``next_cursor`` as ``cursor``; it is null on the last page.

    ``tag`` (repeatable) keeps the memories that carry every tag given.
    """
    ns, _ = _open(request, namespace, "read")
    page = ns.list_memories(after=cursor, limit=limit, kinds=kind, tiers=tier, tags=tag)
    return _json(PAGE, page)


@api.get(NS + "/memories/{node_id}", summary="One memory, with its status", response_model=Node)
def get_memory(namespace: str, node_id: int, request: Request) -> Response:
    ns, _ = _open(request, namespace, "read")
    return _json(NODE, ns.get(node_id))


@api.get(NS + "/memories/{node_id}/lineage", summary="Every version, oldest first")
def lineage(namespace: str, node_id: int, request: Request) -> list[Node]:
    ns, _ = _open(request, namespace, "read")
    return ns.lineage(node_id)


@api.post(NS + "/memories/{node_id}/revise", summary="Write a new version")
def revise(namespace: str, node_id: int, body: ReviseRequest, request: Request) -> Node:
    ns, principal = _open(request, namespace, "write")
    for given in body.changes:
        if given in ("content", "reason", "actor"):
            raise InvalidInputError(f"give {given} at the top level", field="changes")
        if given not in REVISABLE:
            # Checked here, not left to the verb: a name that is one of its own
            # parameters (node_id) would otherwise collide with the route's.
            raise InvalidInputError(
                f"changes.{given} is not a field of a memory", field=f"changes.{given}"
            )
    return ns.revise(
        node_id,
        body.content,
        reason=body.reason,
        actor=body.actor or _label(principal),
        **body.changes,
    )


@api.post(NS + "/memories/{node_id}/forget", summary="Tombstone a memory")
def forget(namespace: str, node_id: int, body: ForgetRequest, request: Request) -> Forgotten:
    ns, principal = _open(request, namespace, "write")
    tombstone = ns.forget(node_id, reason=body.reason, actor=body.actor or _label(principal))
    return Forgotten(id=node_id, tombstone_id=tombstone)


@api.post(NS + "/memories/{node_id}/redact", summary="Erase a memory for good (scope erase)")
def redact(namespace: str, node_id: int, body: RedactRequest, request: Request) -> Node:
    ns, principal = _open(request, namespace, "erase")
    return ns.redact(
        node_id, reason=body.reason, actor=body.actor or _label(principal), versions=body.versions
    )


@api.post(NS + "/edges", status_code=201, summary="Link two memories")
def link(namespace: str, body: LinkInput, request: Request) -> Edge:
    ns, _ = _open(request, namespace, "write")
    return ns.link(body.src, body.dst, **_given(body, "src", "dst"))


# --- reading ----------------------------------------------------------------------------


@api.post(NS + "/recall", summary="The memories most relevant to a query", response_model=list[Hit])
def recall(namespace: str, body: RecallQuery, request: Request) -> Response:
    ns, _ = _open(request, namespace, "read")
    return _json(HITS, ns.recall(body.text, **_given(body, "text")))


@api.post(
    NS + "/activate",
    summary="Spreading activation from a query or seeds",
    response_model=None,
    responses={200: {"model": Activation, "description": "Working memory and statistics"}},
)
def activate(
    namespace: str,
    body: ActivateRequest,
    request: Request,
    background: Annotated[bool, Query(description="Also return every reached node")] = False,
) -> dict[str, Any]:
    ns, _ = _open(request, namespace, "read")
    result = ns.activate(**_given(body))
    return result.model_dump(mode="json", exclude=None if background else {"background"})


@api.post(NS + "/context", summary="A token-budgeted context packet", response_model=ContextAnswer)
def context(namespace: str, body: ContextRequest, request: Request) -> Response:
    ns, _ = _open(request, namespace, "read")
    packet = ns.recall_context(body.query, **_given(body, "query"))
    return _json(ANSWER, ContextAnswer(**dict(packet), text=packet.render()))


@api.get(NS + "/status", summary="Nodes per tier and status, vector freshness")
def status(namespace: str, request: Request) -> NamespaceSummary:
    ns, _ = _open(request, namespace, "read")
    return ns.summary()


# --- lifecycle ----------------------------------------------------------------------------


@api.post(NS + "/apply", summary="Typed lifecycle operations, judged by the law")
def apply(namespace: str, body: ApplyRequest, request: Request) -> Receipt:
    """Each operation is accepted or rejected with its reason; ``applied`` says whether
    anything was written; a queued operation names its proposal. The ``review`` phase
    (accept_proposal, reject_proposal) needs the review scope, as the proposals'
    own routes do: a key that may only write must not accept its own proposals."""
    ns, principal = _open(request, namespace, "review" if body.phase == "review" else "write")
    return ns.apply(
        body.ops, phase=body.phase, actor=body.actor or _label(principal), atomic=body.atomic
    )


@api.post(NS + "/sleep", summary="Consolidate short-term memory")
def sleep(namespace: str, body: SleepRequest, request: Request) -> Receipt:
    from datetime import timedelta

    ns, principal = _open(request, namespace, "write")
    older = None if body.older_than_seconds is None else timedelta(seconds=body.older_than_seconds)
    return ns.sleep(
        body.ops, forced=body.forced, actor=body.actor or _label(principal), older_than=older
    )


@api.get(NS + "/proposals", summary="The review queue (scope read or review)")
def proposals(
    namespace: str,
    request: Request,
    status: Annotated[Literal["pending"], Query(description="Only pending, for now")] = "pending",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[Proposal]:
    state = state_of(request.app)
    principal = state.authenticate(request.headers.get("authorization"))
    scope = "review" if principal.has("review") else "read"
    ns = state.namespace_for(principal, namespace, scope)
    return ns.review.pending(limit=limit)


@api.post(NS + "/proposals/{proposal_id}/accept", summary="Accept a proposal (scope review)")
def accept(namespace: str, proposal_id: int, body: AcceptRequest, request: Request) -> Receipt:
    ns, principal = _open(request, namespace, "review")
    return ns.review.accept(proposal_id, reviewer=_label(principal), note=body.note)


@api.post(NS + "/proposals/{proposal_id}/reject", summary="Reject a proposal (scope review)")
def reject(namespace: str, proposal_id: int, body: RejectRequest, request: Request) -> Proposal:
    ns, principal = _open(request, namespace, "review")
    return ns.review.reject(proposal_id, reviewer=_label(principal), reason=body.reason)


# --- graph reads (appended: issue 21 item 4, docs/recall.md "Graph reads") ---------------


@api.get(NS + "/memories/{node_id}/edges", summary="A memory's live edges, heaviest first")
def edges(
    namespace: str,
    node_id: int,
    request: Request,
    direction: Annotated[Direction, Query()] = "both",
    relation: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_EDGES)] = 100,
) -> list[Edge]:
    """Edges written on any version of the memory, not forgotten, whose other end (followed
    to its current version) is visible and neither forgotten nor erased."""
    ns, _ = _open(request, namespace, "read")
    return ns.edges(node_id, direction=direction, relation=relation, limit=limit)


@api.get(NS + "/memories/{node_id}/neighbours", summary="Memories within a few live edges")
def neighbours(
    namespace: str,
    node_id: int,
    request: Request,
    depth: Annotated[int, Query(ge=1, le=MAX_DEPTH)] = 1,
    direction: Annotated[Direction, Query()] = "both",
    relation: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_NEIGHBOURS)] = 50,
) -> list[Neighbour]:
    """The current memories within ``depth`` live edges, nearest first, with their distance."""
    ns, _ = _open(request, namespace, "read")
    return ns.neighbours(node_id, depth=depth, direction=direction, relation=relation, limit=limit)


__all__ = ["api", "health"]
