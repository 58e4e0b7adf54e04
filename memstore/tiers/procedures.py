"""The procedures tier: named skills as versioned step lists.

A procedure is a ``procedural`` node of type ``Procedure`` in tier
``procedures`` whose label is its name (compared exactly) and whose data holds
``{"name", "description", "steps": [{"tool", "purpose", "instruction"}, ...]}``.
Its content is a readable rendering of the same, so recall finds a procedure by
what it does. Refining writes a new version and links the old one to it
(supersession), so every earlier version stays readable. How often a version
was applied and succeeded is learned state in ``memstore.node_state``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from memstore.errors import InvalidInputError, ProcedureNotFoundError
from memstore.graph import outcomes as outcome_sql
from memstore.graph.content import checked_content
from memstore.graph.entries import (
    bump_state,
    count_current,
    current_entries,
    entries_statement,
    last_recorded,
    learned_counts,
)
from memstore.graph.proposals import write_operations
from memstore.graph.rows import to_node
from memstore.inputs import checked_id, checked_reason, checked_text, validated
from memstore.models import MemoryInput, Node, NodeStatus
from memstore.tiers.common import (
    PROCEDURES,
    lock_key,
    remember_fresh,
)

if TYPE_CHECKING:
    from memstore.services.scope import Scope
    from memstore.tx import NamespaceTransaction

PROCEDURE_TYPE = "Procedure"
# The memstore.operations row that records one use of a procedure version.
USE_OP = "procedure_use"
PROCEDURE_KIND = "procedural"
MAX_STEPS = 100
NAME_MAX = 200
MAX_ROLES = 50
MAX_OUTCOMES = 1000


Tool = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Purpose = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)]
Instruction = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)
]


def _no_nul(value: Any) -> Any:
    # jsonb cannot hold U+0000: refuse it here rather than as a database error.
    if isinstance(value, str) and "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


def _no_nul_items(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_no_nul(item) for item in value]
    return value


class ProcedureStep(BaseModel):
    """One step of a procedure: which tool, why, and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: Tool
    purpose: Purpose
    instruction: Instruction

    _checked = field_validator("tool", "purpose", "instruction", mode="before")(_no_nul)


class ProcedureInput(BaseModel):
    """What :meth:`Procedures.add` accepts; names are kept and compared exactly."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
    description: Instruction
    steps: Annotated[list[ProcedureStep], Field(min_length=1, max_length=MAX_STEPS)]

    _checked = field_validator("description", mode="before")(_no_nul)

    @field_validator("name")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a procedure name must not be blank")
        return value

    def data(self) -> dict[str, Any]:
        """The node's ``data``: name, description and steps."""
        return self.model_dump(mode="json")

    def render(self) -> str:
        """The node's content: what recall indexes and a reader sees.

        >>> ProcedureInput(name="release", description="Ship a version.", steps=[
        ...     {"tool": "git", "purpose": "tag it", "instruction": "git tag v1"}]).render()
        'Procedure: release\\nShip a version.\\nSteps:\\n1. tag it (tool: git): git tag v1'
        """
        lines = [f"Procedure: {self.name}", self.description, "Steps:"]
        lines += [
            f"{number}. {step.purpose} (tool: {step.tool}): {step.instruction}"
            for number, step in enumerate(self.steps, start=1)
        ]
        return "\n".join(lines)


class ProcedureStats(BaseModel):
    """How often one version of a procedure was applied, and how often it worked."""

    model_config = ConfigDict(frozen=True)

    node_id: int
    name: str
    times_applied: int
    success_count: int
    last_used_at: datetime | None = None
    """When this version was last used (:meth:`Procedures.use` or
    :meth:`Procedures.record_success`); None if never."""


Role = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class ProcedureRoles(BaseModel):
    """The roles a procedure serves: none (every role) or up to :data:`MAX_ROLES` names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roles: Annotated[list[Role], Field(max_length=MAX_ROLES)]

    _checked = field_validator("roles", mode="before")(_no_nul_items)

    def names(self) -> list[str]:
        """The roles, each once, sorted."""
        return sorted(set(self.roles))


class OutcomeInput(BaseModel):
    """What :meth:`Procedures.record_outcome` accepts besides the procedure."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    success: bool
    episode: Annotated[int, Field(ge=1, le=2**63 - 1)] | Role | None = None
    """The node id of the episode that produced the outcome, or a run id (text)."""
    note: Annotated[str, StringConstraints(min_length=1, max_length=4000)] | None = None

    _checked = field_validator("episode", "note", mode="before")(_no_nul)


class ProcedureOutcome(BaseModel):
    """One recorded success (a golden example) or failure (a rejected one) of a version."""

    model_config = ConfigDict(frozen=True)

    id: int
    node_id: int
    """The procedure version the outcome belongs to."""
    success: bool
    episode_node_id: int | None
    """The episode's node, when the episode was given as a node id."""
    episode_run: str | None
    """The episode's run id, when it was given as text."""
    note: str | None
    actor: str
    recorded_at: datetime


def steps_of(node: Node) -> list[ProcedureStep]:
    """A procedure node's steps, typed."""
    return [ProcedureStep.model_validate(step) for step in node.data.get("steps", [])]


class Procedures:
    """Named skills as versioned step lists: ``ns.procedures``.

    >>> ns.procedures.add("release", description="Ship a version.", steps=[  # doctest: +SKIP
    ...     {"tool": "git", "purpose": "tag it", "instruction": "git tag v1"}])
    >>> ns.procedures.refine("release", [...])                    # doctest: +SKIP
    >>> [v.status for v in ns.procedures.versions("release")]     # doctest: +SKIP
    [<NodeStatus.SUPERSEDED: 'superseded'>, <NodeStatus.CURRENT: 'current'>]
    """

    def __init__(self, ns: Scope):
        self.ns = ns

    # --- writing ----------------------------------------------------------------

    def add(
        self,
        name: str,
        *,
        description: str,
        steps: Sequence[ProcedureStep | Mapping[str, Any]],
        roles: Sequence[str] | None = None,
    ) -> Node:
        """Store a new procedure; returns its node.

        ``steps``: ``{"tool", "purpose", "instruction"}`` mappings or
        :class:`ProcedureStep` values, 1 to :data:`MAX_STEPS` of them.
        ``roles``: the roles it serves in a context packet (``recall_context(...,
        role=...)``); none, every role. Raises
        :class:`~memstore.errors.InvalidInputError` if a current procedure
        already has this name (refine it, or use :meth:`add_if_new`).
        """
        scoped = _roles(roles)
        item, vector = self._prepared(name, description, steps)
        with self.ns.transaction() as tx:
            lock_key(tx, "procedure", name)
            existing = self._by_name(tx, name)
            if existing is not None:
                raise InvalidInputError(
                    f"a procedure named {name!r} already exists (node {existing.id}):"
                    " refine it, or use add_if_new",
                    field="name",
                )
            node = remember_fresh(tx, item, vector=vector)
            outcome_sql.add_roles(tx.conn, tx.id, node.id, scoped)
            return node

    def add_if_new(
        self,
        name: str,
        *,
        description: str,
        steps: Sequence[ProcedureStep | Mapping[str, Any]],
        roles: Sequence[str] | None = None,
    ) -> Node:
        """The current procedure with this name if there is one (its roles unchanged),
        else a new one serving ``roles``."""
        scoped = _roles(roles)
        item, vector = self._prepared(name, description, steps)
        with self.ns.transaction() as tx:
            lock_key(tx, "procedure", name)
            existing = self._by_name(tx, name)
            if existing is not None:
                return existing
            node = remember_fresh(tx, item, vector=vector)
            outcome_sql.add_roles(tx.conn, tx.id, node.id, scoped)
            return node

    def refine(
        self,
        name_or_id: str | int,
        steps: Sequence[ProcedureStep | Mapping[str, Any]],
        *,
        description: str | None = None,
        reason: str = "refined",
        roles: Sequence[str] | None = None,
    ) -> Node:
        """Write a new version of a current procedure; returns it.

        The old version is superseded, never changed. ``description`` and
        ``roles`` default to the current version's. A refinement identical to the current version is
        refused; one equal to an earlier version is a new version all the same.
        An id must name the current version (else
        :class:`~memstore.errors.NodeSupersededError` names it).
        """
        reason = checked_reason(reason)
        scoped = None if roles is None else _roles(roles)
        with self.ns.transaction() as tx:
            old = self._locked_current(tx, name_or_id)
            if scoped is None:
                scoped = outcome_sql.roles(tx.conn, tx.id, old.id)
            procedure = validated(
                ProcedureInput,
                name=old.label,
                description=old.data.get("description") if description is None else description,
                steps=steps,
            )
            if procedure.data() == old.data:
                raise InvalidInputError(
                    f"the refinement of procedure {old.label!r} is identical to its current"
                    f" version (node {old.id})",
                    field="steps",
                )
            # The key names the version it replaces: steps may return to an
            # earlier version's, which must still be a new node.
            new = tx.revise(
                old.id,
                procedure.render(),
                reason=reason,
                data=procedure.data(),
                dedupe_key=f"procedure:{old.id}",
            )
            outcome_sql.add_roles(tx.conn, tx.id, new.id, scoped)
            return new

    def remove(self, name_or_id: str | int, *, reason: str = "removed") -> Node:
        """Tombstone the current version of a procedure; returns it, now tombstoned.

        Its earlier versions stay readable through :meth:`versions` by id.
        """
        reason = checked_reason(reason)
        with self.ns.transaction() as tx:
            node = self._locked_current(tx, name_or_id)
            tx.forget(node.id, reason=reason)
            return tx.node(node.id)

    def record_success(self, name_or_id: str | int, *, success: bool = True) -> ProcedureStats:
        """Count one application of the current version, and one success if ``success``.

        Counts belong to a version: a refined procedure starts its own record.
        """
        if not isinstance(success, bool):
            raise InvalidInputError("success must be True or False", field="success")
        with self.ns.transaction() as tx:
            node = self._current(tx, name_or_id)
            state = bump_state(tx.conn, tx.id, node.id, applied=1, successes=int(success))
            return ProcedureStats(
                node_id=node.id,
                name=node.label or "",
                times_applied=int(state["times_applied"]),
                success_count=int(state["success_count"]),
                last_used_at=self._record_use(tx, node, success=success),
            )

    # --- reading ----------------------------------------------------------------

    def find_by_name(self, name: str, *, privacy_ceiling: int | None = None) -> Node | None:
        """The current procedure with exactly this name, if any (up to ``privacy_ceiling``)."""
        if not isinstance(name, str):
            raise InvalidInputError("a procedure name must be text", field="name")
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return self._by_name(tx, name)

    def all(self, *, privacy_ceiling: int | None = None) -> list[Node]:
        """Every current procedure up to ``privacy_ceiling`` (default: the store's), by name."""
        (rows,) = self.ns.rows_in_one_round_trip(
            privacy_ceiling,
            lambda namespace_id, conn: [
                entries_statement(conn, namespace_id, PROCEDURES, node_type=PROCEDURE_TYPE)
            ],
        )
        found = [to_node(row, self.ns.name) for row in rows]
        return sorted(found, key=lambda node: (node.label or "", node.id))

    def versions(self, name_or_id: str | int, *, privacy_ceiling: int | None = None) -> list[Node]:
        """Every version of a procedure, oldest first, ending with the current one.

        A name finds its current procedure; an id may name any version.
        Versions above ``privacy_ceiling`` (default: the store's) are left out.
        """
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            if isinstance(name_or_id, str):
                return tx.lineage(self._named(tx, name_or_id).id)
            return tx.lineage(self._procedure(tx.node(self._id(name_or_id))).id)

    def stats(self, name_or_id: str | int, *, privacy_ceiling: int | None = None) -> ProcedureStats:
        """Applications and successes of the current version (up to ``privacy_ceiling``)."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            node = self._current(tx, name_or_id)
            applied, successes = learned_counts(tx.conn, tx.id, node.id)
            return ProcedureStats(
                node_id=node.id,
                name=node.label or "",
                times_applied=int(applied),
                success_count=int(successes),
                last_used_at=last_recorded(tx.conn, tx.id, USE_OP, [node.id]),
            )

    @staticmethod
    def steps(node: Node) -> list[ProcedureStep]:
        """A procedure node's steps, typed (see :func:`steps_of`)."""
        return steps_of(node)

    # --- use (appended: issue 21 item 4) ---------------------------------------------

    def use(self, name_or_id: str | int, *, actor: str | None = None) -> Node:
        """The current procedure a name or id stands for, with its use recorded.

        Each use is a ``procedure_use`` row of ``memstore.operations`` naming
        the version (append-only, like the audit log it is part of), which
        :meth:`last_used` reads; :meth:`record_success` records a use too.
        """
        with self.ns.transaction() as tx:
            node = self._current(tx, name_or_id)
            self._record_use(tx, node, actor=actor)
            return node

    def count(self, *, privacy_ceiling: int | None = None) -> int:
        """How many current procedures there are, up to ``privacy_ceiling`` (default: the
        store's)."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            return count_current(tx.conn, self.ns, PROCEDURES, node_type=PROCEDURE_TYPE)

    def last_used(
        self, name_or_id: str | int, *, privacy_ceiling: int | None = None
    ) -> datetime | None:
        """When any version of the procedure was last used (:meth:`use`,
        :meth:`record_success`); None if never. A name finds its current procedure;
        an id may name any version."""
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            if isinstance(name_or_id, str):
                node = self._named(tx, name_or_id)
            else:
                node = self._procedure(tx.node(self._id(name_or_id)))
            versions = [version.id for version in tx.lineage(node.id)]
            return last_recorded(tx.conn, tx.id, USE_OP, versions)

    # --- helpers ----------------------------------------------------------------

    def _record_use(
        self,
        tx: NamespaceTransaction,
        node: Node,
        *,
        success: bool | None = None,
        actor: str | None = None,
    ) -> datetime:
        """Record one use of the procedure version ``node``; returns its time."""
        if actor is not None:
            actor = checked_text(actor, "actor", max_length=200)
        payload: dict[str, Any] = {"node_id": node.id}
        if success is not None:
            payload["success"] = success
        row = {
            "op": USE_OP,
            "actor": actor or self.ns.settings.actor,
            "outcome": "accepted",
            "payload": payload,
        }
        write_operations(tx.conn, tx.id, [row])
        moment = last_recorded(tx.conn, tx.id, USE_OP, [node.id])
        assert moment is not None  # just written
        return moment

    def _prepared(
        self, name: str, description: str, steps: Sequence[ProcedureStep | Mapping[str, Any]]
    ) -> tuple[MemoryInput, np.ndarray[Any, Any]]:
        """A new procedure's node input and vector, computed before the name's lock is taken."""
        procedure = validated(ProcedureInput, name=name, description=description, steps=steps)
        text = checked_content(procedure.render(), limit=self.ns.settings.max_content_bytes)
        item = validated(
            MemoryInput,
            content=text,
            kind=PROCEDURE_KIND,
            node_type=PROCEDURE_TYPE,
            tier=PROCEDURES,
            label=procedure.name,
            data=procedure.data(),
        )
        return item, self.ns.vectors([item], [text])

    def _by_name(self, tx: NamespaceTransaction, name: str) -> Node | None:
        name = checked_text(name, "name", max_length=NAME_MAX)
        found = current_entries(
            tx.conn,
            self.ns,
            PROCEDURES,
            label=name,
            node_type=PROCEDURE_TYPE,
            limit=1,
        )
        return found[0] if found else None

    def _named(self, tx: NamespaceTransaction, name: str) -> Node:
        node = self._by_name(tx, name)
        if node is None:
            raise ProcedureNotFoundError(
                f"no current procedure is named {name!r} in namespace {self.ns.name!r}",
                namespace=self.ns.name,
                name=name,
            )
        return node

    def _current(self, tx: NamespaceTransaction, name_or_id: str | int) -> Node:
        """The current procedure a name or id stands for, or the error that says why not."""
        if isinstance(name_or_id, str):
            return self._named(tx, name_or_id)
        return self._procedure(tx.current(self._id(name_or_id)))

    def _locked_current(self, tx: NamespaceTransaction, name_or_id: str | int) -> Node:
        """:meth:`_current`, read again once the procedure's name is locked.

        A concurrent refinement may supersede the version while this one waits
        for the lock; reading it again finds the new version (by name) or
        refuses the stale id.
        """
        node = self._current(tx, name_or_id)
        lock_key(tx, "procedure", node.label or "")
        return self._current(tx, name_or_id)

    @staticmethod
    def _id(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInputError(
                "name_or_id must be a procedure's name (text) or node id", field="name_or_id"
            )
        return checked_id(value, "name_or_id")

    @staticmethod
    def _procedure(node: Node) -> Node:
        if node.tier != PROCEDURES or node.node_type != PROCEDURE_TYPE:
            raise InvalidInputError(f"node {node.id} is not a procedure", field="name_or_id")
        return node

    # --- outcomes and roles -------------------------------------------------------

    def record_outcome(
        self,
        name_or_id: str | int,
        success: bool,
        *,
        episode: int | str | None = None,
        note: str | None = None,
    ) -> ProcedureOutcome:
        """Record that a version of a procedure worked (``success``) or failed, and in which
        episode; returns the outcome.

        A name records against the current version; an id may name any version
        (an outcome that arrives after a refinement still belongs to the version
        that ran). ``episode`` is the node id of the episode (a turn, a memory
        of the run: it must be readable in this namespace) or a run id (text).
        Successes are the procedure's golden examples, failures its rejected
        ones (:meth:`outcomes`); both also count in the version's record
        (:meth:`stats`), which decides the version a context packet serves.
        """
        given = validated(OutcomeInput, success=success, episode=episode, note=note)
        episode_node = given.episode if isinstance(given.episode, int) else None
        episode_run = given.episode if isinstance(given.episode, str) else None
        with self.ns.transaction() as tx:
            if isinstance(name_or_id, str):
                node = self._locked_current(tx, name_or_id)
            else:
                node = self._procedure(tx.node(self._id(name_or_id)))
                if node.status is NodeStatus.REDACTED:
                    raise InvalidInputError(
                        f"procedure version {node.id} was redacted", field="name_or_id"
                    )
            if episode_node is not None:
                tx.node(episode_node)  # raises when missing or above the ceiling
            row = outcome_sql.record(
                tx.conn,
                tx.id,
                node.id,
                success=given.success,
                episode_node=episode_node,
                episode_run=episode_run,
                note=given.note,
                actor=self.ns.settings.actor,
            )
            bump_state(tx.conn, tx.id, node.id, applied=1, successes=int(given.success))
            return ProcedureOutcome.model_validate(row)

    def outcomes(
        self,
        name_or_id: str | int,
        *,
        success: bool | None = None,
        limit: int = 100,
        privacy_ceiling: int | None = None,
    ) -> list[ProcedureOutcome]:
        """Recorded outcomes of every version of a procedure, newest first.

        ``success=True``: only the golden examples; ``False``: only the
        rejected ones. At most ``limit`` (1 to :data:`MAX_OUTCOMES`). Versions
        above ``privacy_ceiling`` (default: the store's) are left out.
        """
        if success is not None and not isinstance(success, bool):
            raise InvalidInputError("success must be True, False or None", field="success")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_OUTCOMES:
            raise InvalidInputError(
                f"limit must be an integer from 1 to {MAX_OUTCOMES}", field="limit"
            )
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            if isinstance(name_or_id, str):
                versions = tx.lineage(self._named(tx, name_or_id).id)
            else:
                versions = tx.lineage(self._procedure(tx.node(self._id(name_or_id))).id)
            rows = outcome_sql.outcomes(
                tx.conn, tx.id, [v.id for v in versions], success=success, limit=limit
            )
        return [ProcedureOutcome.model_validate(row) for row in rows]

    def roles(self, name_or_id: str | int, *, privacy_ceiling: int | None = None) -> list[str]:
        """The roles a procedure version serves, sorted; empty: every role.

        A name means the current version; an id, that version.
        """
        with self.ns.reading(privacy_ceiling=privacy_ceiling) as tx:
            if isinstance(name_or_id, str):
                node = self._named(tx, name_or_id)
            else:
                node = self._procedure(tx.node(self._id(name_or_id)))
            return outcome_sql.roles(tx.conn, tx.id, node.id)


def _roles(roles: object) -> list[str]:
    """Validated role names, each once, sorted (empty for None)."""
    if roles is None:
        return []
    if isinstance(roles, str) or not isinstance(roles, Sequence):
        raise InvalidInputError("roles must be a list of role names", field="roles")
    return validated(ProcedureRoles, roles=list(roles)).names()


__all__ = [
    "MAX_STEPS",
    "ProcedureInput",
    "ProcedureNotFoundError",
    "ProcedureOutcome",
    "ProcedureStats",
    "ProcedureStep",
    "Procedures",
    "steps_of",
]
