"""The tables of schema ``memstore`` as SQLAlchemy Core metadata.

This is the current shape of the data model (docs/architecture.md explains
it). Alembic revisions in migrations/ freeze each step towards it, and a test
proves that a database built from the migrations equals one built from this
metadata plus the SQL in sql/.

Rules that keep the schema distributable by namespace (Citus), see DESIGN §8:
every table carries ``namespace_id``; every primary key, unique constraint and
foreign key includes it in the first position; no cascading updates or SET NULL.
"""

from __future__ import annotations

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    REAL,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    Date,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, DOUBLE_PRECISION, JSONB, TIMESTAMP, TSVECTOR

from memstore.models import LAYER_MAX, MAX_TAGS, NODE_KINDS, PRIVACY_MAX

SCHEMA = "memstore"

# Deterministic constraint names: errors.py maps some of them, and migrations
# must produce the same names as this metadata.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(schema=SCHEMA, naming_convention=NAMING)

# Node kinds, privacy levels and layers are defined with the API models;
# extending any of them is a migration.
# Bounded ACT-R access-time ring kept per node.
ACCESS_RING_MAX = 64
# The embedded and CI servers both speak English full text; one config keeps
# the generated column immutable and the lexical index usable.
FTS_CONFIG = "english"

TSTZ = TIMESTAMP(timezone=True)


def _namespace_fk(table: str) -> ForeignKeyConstraint:
    return ForeignKeyConstraint(
        ["namespace_id"], ["memstore.namespaces.id"], name=f"fk_{table}_namespace"
    )


def _node_fk(table: str, column: str) -> ForeignKeyConstraint:
    return ForeignKeyConstraint(
        ["namespace_id", column],
        ["memstore.nodes.namespace_id", "memstore.nodes.id"],
        name=f"fk_{table}_{column}",
    )


def _edge_fk(table: str, column: str) -> ForeignKeyConstraint:
    return ForeignKeyConstraint(
        ["namespace_id", column],
        ["memstore.edges.namespace_id", "memstore.edges.id"],
        name=f"fk_{table}_{column}",
    )


def _unit_interval(column: str) -> CheckConstraint:
    return CheckConstraint(f"{column} >= 0 AND {column} <= 1", name=f"{column}_range")


def _provenance() -> list[Column[str]]:
    """Who wrote a fact, from where, in which run."""
    return [
        Column("source", Text, nullable=True),
        Column("actor", Text, nullable=True),
        Column("run_id", Text, nullable=True),
    ]


def _recorded_at(name: str = "recorded_at") -> Column[object]:
    # Transaction time: every row written by one transaction shares it.
    return Column(name, TSTZ, nullable=False, server_default=text("now()"))


namespaces = Table(
    "namespaces",
    metadata,
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("name", Text, nullable=False),
    Column("settings", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    _recorded_at("created_at"),
    PrimaryKeyConstraint("id", name="pk_namespaces"),
    UniqueConstraint("name", name="uq_namespaces_name"),
    # Any Unicode is allowed; the bound keeps the unique btree entry valid.
    CheckConstraint("char_length(name) >= 1 AND octet_length(name) <= 2048", name="name_length"),
)

nodes = Table(
    "nodes",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("kind", Text, nullable=False),
    Column("node_type", Text, nullable=False, server_default=text("'Memory'")),
    Column("tier", Text, nullable=True),
    Column("layer", SmallInteger, nullable=False, server_default=text("1")),
    Column("label", Text, nullable=True),
    Column("content", Text, nullable=False),
    Column("data", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("importance", REAL, nullable=False, server_default=text("0.5")),
    Column("confidence", REAL, nullable=False, server_default=text("0.5")),
    Column("decay_rate", REAL, nullable=False, server_default=text("0.5")),
    Column("privacy", SmallInteger, nullable=False, server_default=text("0")),
    Column("protected", Boolean, nullable=False, server_default=text("false")),
    Column("subject", Text, nullable=True),
    Column("scope", Text, nullable=True),
    *_provenance(),
    Column("observed_at", TSTZ, nullable=True),
    Column("valid_from", TSTZ, nullable=True),
    Column("valid_to", TSTZ, nullable=True),
    _recorded_at(),
    # sha256 of the normalised content; NULL once redacted, so erased content
    # no longer blocks (or matches) an idempotent re-ingest.
    Column("content_hash", LargeBinary, nullable=True),
    Column(
        "search",
        TSVECTOR,
        Computed(
            f"to_tsvector('{FTS_CONFIG}'::regconfig, coalesce(label, '') || ' ' || content)",
            persisted=True,
        ),
        nullable=True,
    ),
    # Last, as migration 0022 added it. Normalised by the API (memstore.models.normalise_tags);
    # the bound here keeps a GIN entry small whoever writes.
    Column("tags", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_nodes"),
    _namespace_fk("nodes"),
    CheckConstraint(f"kind IN {NODE_KINDS!r}", name="kind_known"),
    CheckConstraint("char_length(node_type) BETWEEN 1 AND 64", name="node_type_length"),
    CheckConstraint(f"layer BETWEEN 0 AND {LAYER_MAX}", name="layer_range"),
    CheckConstraint(f"privacy BETWEEN 0 AND {PRIVACY_MAX}", name="privacy_range"),
    _unit_interval("importance"),
    _unit_interval("confidence"),
    CheckConstraint("decay_rate >= 0 AND decay_rate <= 1", name="decay_rate_range"),
    CheckConstraint(
        "valid_to IS NULL OR valid_from IS NULL OR valid_to > valid_from", name="valid_period"
    ),
    CheckConstraint(
        "content_hash IS NULL OR octet_length(content_hash) = 32", name="content_hash_sha256"
    ),
    CheckConstraint(
        f"cardinality(tags) <= {MAX_TAGS} AND array_position(tags, NULL) IS NULL",
        name="tags_bounded",
    ),
)
Index(
    "uq_nodes_content",
    nodes.c.namespace_id,
    nodes.c.kind,
    nodes.c.node_type,
    nodes.c.content_hash,
    unique=True,
)
Index("ix_nodes_recorded", nodes.c.namespace_id, nodes.c.recorded_at)
Index("ix_nodes_search", nodes.c.search, postgresql_using="gin")
# Tag filters (tags @> ARRAY[...]): namespace_id as a GIN key needs btree_gin,
# which the embedded server may lack, so the index is on tags alone and the
# planner combines it with the namespace's own conditions.
Index("ix_nodes_tags", nodes.c.tags, postgresql_using="gin")
# Tiers (timeline, scratchpad, lessons, procedures, consolidation) are profiles
# over nodes: find a tier's entry by key (label) or its newest entries.
Index(
    "ix_nodes_tier_label",
    nodes.c.namespace_id,
    nodes.c.tier,
    nodes.c.label,
    postgresql_where=text("tier IS NOT NULL"),
)
# The order current_entries reads a tier in (newest first, undated entries
# last): the index must match it exactly, NULLS LAST included, or PostgreSQL
# reads and sorts the whole tier (110-200 ms for 94k turns).
Index(
    "ix_nodes_tier_observed",
    nodes.c.namespace_id,
    nodes.c.tier,
    nodes.c.observed_at.desc().nulls_last(),
    nodes.c.id.desc(),
    postgresql_where=text("tier IS NOT NULL"),
)
# The same within one scope (a timeline's session).
Index(
    "ix_nodes_tier_scope_observed",
    nodes.c.namespace_id,
    nodes.c.tier,
    nodes.c.scope,
    nodes.c.observed_at.desc().nulls_last(),
    nodes.c.id.desc(),
    postgresql_where=text("tier IS NOT NULL"),
)

edges = Table(
    "edges",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("src", BigInteger, nullable=False),
    Column("dst", BigInteger, nullable=False),
    Column("relation", Text, nullable=False, server_default=text("'related'")),
    Column("weight", REAL, nullable=False, server_default=text("0.5")),
    Column("inhibitory", Boolean, nullable=False, server_default=text("false")),
    Column("confidence", REAL, nullable=False, server_default=text("0.5")),
    Column("layer", SmallInteger, nullable=False, server_default=text("1")),
    *_provenance(),
    _recorded_at(),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_edges"),
    _node_fk("edges", "src"),
    _node_fk("edges", "dst"),
    CheckConstraint("src <> dst", name="no_self_loop"),
    CheckConstraint("char_length(relation) BETWEEN 1 AND 64", name="relation_length"),
    _unit_interval("weight"),
    _unit_interval("confidence"),
    CheckConstraint(f"layer BETWEEN 0 AND {LAYER_MAX}", name="layer_range"),
)
# Neighbourhood pulls take each node's heaviest edges first and read only these
# columns: ordered index-only scans both ways, stopping after the fan-out cap.
Index(
    "ix_edges_out",
    edges.c.namespace_id,
    edges.c.src,
    edges.c.weight.desc(),
    edges.c.id,
    postgresql_include=["dst", "relation", "inhibitory"],
)
Index(
    "ix_edges_in",
    edges.c.namespace_id,
    edges.c.dst,
    edges.c.weight.desc(),
    edges.c.id,
    postgresql_include=["src", "relation", "inhibitory"],
)

tombstones = Table(
    "tombstones",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("target_kind", Text, nullable=False),
    # Exactly one of node_id / edge_id is set, so both can carry a real FK.
    Column("node_id", BigInteger, nullable=True),
    Column("edge_id", BigInteger, nullable=True),
    Column("reason", Text, nullable=False),
    Column("actor", Text, nullable=True),
    _recorded_at("at"),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_tombstones"),
    _node_fk("tombstones", "node_id"),
    _edge_fk("tombstones", "edge_id"),
    CheckConstraint(
        "(target_kind = 'node' AND node_id IS NOT NULL AND edge_id IS NULL)"
        " OR (target_kind = 'edge' AND edge_id IS NOT NULL AND node_id IS NULL)",
        name="one_target",
    ),
    CheckConstraint("char_length(reason) >= 1", name="reason_given"),
)
Index(
    "uq_tombstones_node",
    tombstones.c.namespace_id,
    tombstones.c.node_id,
    unique=True,
    postgresql_where=text("node_id IS NOT NULL"),
)
Index(
    "uq_tombstones_edge",
    tombstones.c.namespace_id,
    tombstones.c.edge_id,
    unique=True,
    postgresql_where=text("edge_id IS NOT NULL"),
)

supersessions = Table(
    "supersessions",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("old_id", BigInteger, nullable=False),
    Column("new_id", BigInteger, nullable=False),
    Column("reason", Text, nullable=False),
    Column("actor", Text, nullable=True),
    _recorded_at("at"),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_supersessions"),
    _node_fk("supersessions", "old_id"),
    _node_fk("supersessions", "new_id"),
    CheckConstraint("old_id <> new_id", name="not_itself"),
    CheckConstraint("char_length(reason) >= 1", name="reason_given"),
)
# A node is superseded at most once.
Index("uq_supersessions_old", supersessions.c.namespace_id, supersessions.c.old_id, unique=True)
Index("ix_supersessions_new", supersessions.c.namespace_id, supersessions.c.new_id)

operations = Table(
    "operations",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("batch_id", Text, nullable=True),
    Column("op", Text, nullable=False),
    Column("phase", Text, nullable=True),
    Column("actor", Text, nullable=True),
    Column("outcome", Text, nullable=False),
    Column("reason", Text, nullable=True),
    Column("payload", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("receipt", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    _recorded_at(),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_operations"),
    _namespace_fk("operations"),
    CheckConstraint("outcome IN ('accepted', 'rejected')", name="outcome_known"),
)
Index("ix_operations_recorded", operations.c.namespace_id, operations.c.recorded_at)

proposals = Table(
    "proposals",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("operation", JSONB, nullable=False),
    Column("rationale", Text, nullable=True),
    Column("status", Text, nullable=False, server_default=text("'pending'")),
    Column("proposed_by", Text, nullable=True),
    _recorded_at("proposed_at"),
    Column("decided_by", Text, nullable=True),
    Column("decided_at", TSTZ, nullable=True),
    Column("decision_reason", Text, nullable=True),
    # What the proposal rests on (anchors: node ids, quotes, links), for the
    # reviewer. Last, as migration 0011 added it.
    Column("evidence", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_proposals"),
    _namespace_fk("proposals"),
    CheckConstraint("status IN ('pending', 'accepted', 'rejected')", name="status_known"),
    CheckConstraint("(status = 'pending') = (decided_at IS NULL)", name="decided_when_not_pending"),
)
Index(
    "ix_proposals_pending",
    proposals.c.namespace_id,
    proposals.c.proposed_at,
    postgresql_where=text("status = 'pending'"),
)

activations = Table(
    "activations",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("node_id", BigInteger, nullable=False),
    Column("session_id", Text, nullable=True),
    Column("strength", REAL, nullable=False),
    _recorded_at("at"),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_activations"),
    _node_fk("activations", "node_id"),
    CheckConstraint("strength >= 0", name="strength_nonnegative"),
)
Index("ix_activations_node", activations.c.namespace_id, activations.c.node_id, activations.c.at)
# Retention (ns.maintain) removes a namespace's oldest rows first.
Index("ix_activations_at", activations.c.namespace_id, activations.c.at)

# A later observation that confirmed a memory (IRIS's "confirmed" time;
# sql/11_confirmations.sql, docs/recall.md). Append-only, and it holds no words
# of anyone's: an erasure has nothing to blank here. A node's last_confirmed_at
# is the newest row's time, read through ix_confirmations_node (one index probe
# per node, in the statement that reads the node).
confirmations = Table(
    "confirmations",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("node_id", BigInteger, nullable=False),
    _recorded_at("at"),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_confirmations"),
    _node_fk("confirmations", "node_id"),
)
Index(
    "ix_confirmations_node",
    confirmations.c.namespace_id,
    confirmations.c.node_id,
    confirmations.c.at.desc(),
)

node_state = Table(
    "node_state",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("node_id", BigInteger, nullable=False),
    Column("activation_count", Integer, nullable=False, server_default=text("0")),
    Column("last_activated_at", TSTZ, nullable=True),
    Column("access_ring", ARRAY(TSTZ), nullable=False, server_default=text("'{}'")),
    Column("times_applied", Integer, nullable=False, server_default=text("0")),
    Column("success_count", Integer, nullable=False, server_default=text("0")),
    Column("current_confidence", REAL, nullable=True),
    Column("updated_at", TSTZ, nullable=False, server_default=text("now()")),
    PrimaryKeyConstraint("namespace_id", "node_id", name="pk_node_state"),
    _node_fk("node_state", "node_id"),
    CheckConstraint(f"cardinality(access_ring) <= {ACCESS_RING_MAX}", name="access_ring_bounded"),
    CheckConstraint(
        "activation_count >= 0 AND times_applied >= 0 AND success_count >= 0",
        name="counts_nonnegative",
    ),
    CheckConstraint(
        "current_confidence IS NULL OR (current_confidence >= 0 AND current_confidence <= 1)",
        name="current_confidence_range",
    ),
)

edge_state = Table(
    "edge_state",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("edge_id", BigInteger, nullable=False),
    Column("hebbian_weight", REAL, nullable=False, server_default=text("0")),
    Column("fire_count", Integer, nullable=False, server_default=text("0")),
    Column("last_fired_at", TSTZ, nullable=True),
    # Copies of the edge's (immutable) ends: a neighbourhood pull finds a node's
    # learned edges here without reading all of its edges.
    Column("src", BigInteger, nullable=False),
    Column("dst", BigInteger, nullable=False),
    PrimaryKeyConstraint("namespace_id", "edge_id", name="pk_edge_state"),
    _edge_fk("edge_state", "edge_id"),
    _unit_interval("hebbian_weight"),
    CheckConstraint("fire_count >= 0", name="fire_count_nonnegative"),
)
Index(
    "ix_edge_state_learned_out",
    edge_state.c.namespace_id,
    edge_state.c.src,
    postgresql_include=["edge_id"],
    postgresql_where=text("hebbian_weight > 0"),
)
Index(
    "ix_edge_state_learned_in",
    edge_state.c.namespace_id,
    edge_state.c.dst,
    postgresql_include=["edge_id"],
    postgresql_where=text("hebbian_weight > 0"),
)

embeddings = Table(
    "embeddings",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("node_id", BigInteger, nullable=False),
    Column("model", Text, nullable=False),
    Column("dims", SmallInteger, nullable=False),
    # Untyped vector: one table serves every model; each model gets its own
    # HNSW expression index over embedding::vector(dims), partial on model.
    Column("embedding", Vector(), nullable=False),
    Column("source_hash", LargeBinary, nullable=False),
    _recorded_at("created_at"),
    PrimaryKeyConstraint("namespace_id", "node_id", "model", name="pk_embeddings"),
    _node_fk("embeddings", "node_id"),
    CheckConstraint("vector_dims(embedding) = dims", name="dims_match"),
    CheckConstraint("char_length(model) BETWEEN 1 AND 200", name="model_length"),
)

redactions = Table(
    "redactions",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("node_id", BigInteger, nullable=False),
    Column("reason", Text, nullable=False),
    Column("actor", Text, nullable=False),
    # HMAC-SHA256 of the erased content under the namespace's erasure key
    # (erasure_keys): proves what was erased to whoever holds the key, without
    # keeping it; a plain hash would let anyone confirm a guess. Rows written
    # before revision 0017 held a plain sha256; that migration cleared them.
    Column("content_hash", LargeBinary, nullable=True),
    _recorded_at("redacted_at"),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_redactions"),
    _node_fk("redactions", "node_id"),
    CheckConstraint("char_length(reason) >= 1", name="reason_given"),
)
Index("uq_redactions_node", redactions.c.namespace_id, redactions.c.node_id, unique=True)

# The per-namespace secret of erasure's keyed hashes (sql/03_redaction.sql): an
# HMAC-SHA256 key of 64 random bytes, stored as its inner and outer pads. Drawn
# by memstore.redact_lineage on the namespace's first erasure; readable only by
# memstore_redactor and the owner; never changed.
erasure_keys = Table(
    "erasure_keys",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("inner_pad", LargeBinary, nullable=False),
    Column("outer_pad", LargeBinary, nullable=False),
    _recorded_at("created_at"),
    PrimaryKeyConstraint("namespace_id", name="pk_erasure_keys"),
    _namespace_fk("erasure_keys"),
    CheckConstraint(
        "octet_length(inner_pad) = 64 AND octet_length(outer_pad) = 64", name="pads_64_bytes"
    ),
)

# API keys (sql/10_api_keys.sql, docs/server.md). Like namespaces these are
# reference tables: a key may serve a namespace prefix, so it belongs to no one
# namespace. Only a lookup prefix and a sha256 of the 256-bit secret are kept;
# the secret itself is shown once, at creation. Readable only by the owner: the
# service checks a key through memstore.authenticate_key (SECURITY DEFINER).
API_SCOPES = ("read", "write", "review", "erase", "admin")

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("lookup", Text, nullable=False),
    Column("secret_hash", LargeBinary, nullable=False),
    Column("name", Text, nullable=True),
    Column("namespace", Text, nullable=True),
    Column("namespace_prefix", Text, nullable=True),
    Column("scopes", ARRAY(Text), nullable=False),
    Column("expires_at", TSTZ, nullable=True),
    Column("created_by", Text, nullable=False),
    _recorded_at("created_at"),
    PrimaryKeyConstraint("id", name="pk_api_keys"),
    UniqueConstraint("lookup", name="uq_api_keys_lookup"),
    CheckConstraint("octet_length(secret_hash) = 32", name="sha256_hash"),
    # Bound to one namespace or to an explicit prefix, never to both or neither.
    CheckConstraint("(namespace IS NULL) <> (namespace_prefix IS NULL)", name="one_binding"),
    CheckConstraint(
        "char_length(namespace) >= 1 AND octet_length(namespace) <= 2048", name="namespace_length"
    ),
    CheckConstraint(
        "char_length(namespace_prefix) >= 1 AND octet_length(namespace_prefix) <= 2048",
        name="prefix_length",
    ),
    CheckConstraint(
        "cardinality(scopes) >= 1 AND scopes <@ ARRAY["
        + ", ".join(f"'{scope}'" for scope in API_SCOPES)
        + "]::text[]",
        name="known_scopes",
    ),
)

# A revocation is a row, not a delete or an update: the keys stay append-only.
api_key_revocations = Table(
    "api_key_revocations",
    metadata,
    Column("key_id", BigInteger, nullable=False),
    Column("actor", Text, nullable=False),
    Column("reason", Text, nullable=True),
    _recorded_at("revoked_at"),
    PrimaryKeyConstraint("key_id", name="pk_api_key_revocations"),
    ForeignKeyConstraint(
        ["key_id"], ["memstore.api_keys.id"], name="fk_api_key_revocations_key_id"
    ),
)

# Procedures learn from outcomes (sql/12_maintenance.sql, docs/tiers.md): one
# row per reported success or failure of one procedure version, with the
# episode that produced it (a node of the namespace, or a run id). The golden
# (success) and rejected (failure) examples are these rows: append-only.
procedure_outcomes = Table(
    "procedure_outcomes",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("node_id", BigInteger, nullable=False),
    Column("success", Boolean, nullable=False),
    Column("episode_node_id", BigInteger, nullable=True),
    Column("episode_run", Text, nullable=True),
    Column("note", Text, nullable=True),
    Column("actor", Text, nullable=False),
    _recorded_at(),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_procedure_outcomes"),
    _node_fk("procedure_outcomes", "node_id"),
    _node_fk("procedure_outcomes", "episode_node_id"),
    CheckConstraint("char_length(episode_run) BETWEEN 1 AND 200", name="episode_run_length"),
    CheckConstraint("char_length(note) BETWEEN 1 AND 4000", name="note_length"),
)
Index(
    "ix_procedure_outcomes_node",
    procedure_outcomes.c.namespace_id,
    procedure_outcomes.c.node_id,
    procedure_outcomes.c.id,
)

# The roles a procedure version serves (none: every role). Written with the
# version, copied to its refinements; append-only like the version itself.
procedure_roles = Table(
    "procedure_roles",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("node_id", BigInteger, nullable=False),
    Column("role", Text, nullable=False),
    _recorded_at(),
    PrimaryKeyConstraint("namespace_id", "node_id", "role", name="pk_procedure_roles"),
    _node_fk("procedure_roles", "node_id"),
    CheckConstraint("char_length(role) BETWEEN 1 AND 200", name="role_length"),
)

# Telemetry past its retention, summarised (memstore.summarise_activations):
# one row per namespace, UTC day and node, merged into when a later pass
# summarises more of the same day. Learned numbers: UPDATE, never DELETE.
activation_summaries = Table(
    "activation_summaries",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("day", Date, nullable=False),
    Column("node_id", BigInteger, nullable=False),
    Column("activations", BigInteger, nullable=False),
    Column("strength_sum", DOUBLE_PRECISION, nullable=False),
    Column("strength_max", REAL, nullable=False),
    Column("first_at", TSTZ, nullable=False),
    Column("last_at", TSTZ, nullable=False),
    PrimaryKeyConstraint("namespace_id", "day", "node_id", name="pk_activation_summaries"),
    _node_fk("activation_summaries", "node_id"),
    CheckConstraint("activations >= 1", name="activations_positive"),
)

# One row per maintenance pass that changed something (ns.maintain): what it
# did, and how far decay has been applied (decayed_through), which is what
# makes a second pass at once change nothing.
maintenance_runs = Table(
    "maintenance_runs",
    metadata,
    Column("namespace_id", BigInteger, nullable=False),
    Column("id", BigInteger, Identity(always=True), nullable=False),
    Column("decay_steps", Integer, nullable=False),
    Column("decayed_through", TSTZ, nullable=True),
    Column("report", JSONB, nullable=False),
    _recorded_at(),
    PrimaryKeyConstraint("namespace_id", "id", name="pk_maintenance_runs"),
    _namespace_fk("maintenance_runs"),
    CheckConstraint("decay_steps >= 0", name="decay_steps_nonnegative"),
)

# Tables whose rows, once written, never go and never change (except by the
# audited erasure, memstore.redact_lineage, which blanks the caller's words).
APPEND_ONLY_TABLES = (
    "namespaces",
    "nodes",
    "edges",
    "tombstones",
    "supersessions",
    "operations",
    "activations",
    "redactions",
    "procedure_outcomes",
    "procedure_roles",
    "maintenance_runs",
    "confirmations",
)
# Telemetry: append-only for everyone but memstore.summarise_activations, which
# summarises rows older than the retention into activation_summaries and only
# then removes them (sql/12_maintenance.sql). Truth tables are never pruned.
TELEMETRY_TABLES = ("activations",)
# Learned numbers: UPDATE allowed, DELETE/TRUNCATE never.
MUTABLE_STATE_TABLES = ("node_state", "edge_state", "activation_summaries")
# The API keys: reference tables (no namespace_id, like namespaces), readable
# only by the owner; the service checks a key through memstore.authenticate_key.
KEY_TABLES = ("api_keys", "api_key_revocations")
# Readable only by the owner (and the erasure keys by memstore_redactor,
# sql/03_redaction.sql): the service may not read them.
SECRET_TABLES = ("erasure_keys", *KEY_TABLES)
