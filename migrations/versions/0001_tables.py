"""Schema memstore: the tables and indexes of the data model (DESIGN §3).

Frozen: this revision never changes once released; later revisions alter it.

Revision ID: 0001
Revises:
Create Date: 2026-12-01

"""

from collections.abc import Sequence

import pgvector.sqlalchemy
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # pgvector: the embeddings cache stores vector; the extension may need a
    # privileged role on managed services (docs/operations.md).
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "namespaces",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column(
            "settings",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "char_length(name) >= 1 AND octet_length(name) <= 2048",
            name=op.f("ck_namespaces_name_length"),
        ),
        sa.PrimaryKeyConstraint("id", name="pk_namespaces"),
        sa.UniqueConstraint("name", name="uq_namespaces_name"),
        schema="memstore",
    )
    op.create_table(
        "nodes",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("node_type", sa.Text(), server_default=sa.text("'Memory'"), nullable=False),
        sa.Column("tier", sa.Text(), nullable=True),
        sa.Column("layer", sa.SmallInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column("label", sa.Text(), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column(
            "data",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("importance", sa.REAL(), server_default=sa.text("0.5"), nullable=False),
        sa.Column("confidence", sa.REAL(), server_default=sa.text("0.5"), nullable=False),
        sa.Column("decay_rate", sa.REAL(), server_default=sa.text("0.5"), nullable=False),
        sa.Column("privacy", sa.SmallInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("protected", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("scope", sa.Text(), nullable=True),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column("observed_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.Column("valid_from", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.Column("valid_to", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.Column(
            "recorded_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("content_hash", sa.LargeBinary(), nullable=True),
        sa.Column(
            "search",
            postgresql.TSVECTOR(),
            sa.Computed(
                "to_tsvector('english'::regconfig, coalesce(label, '') || ' ' || content)",
                persisted=True,
            ),
            nullable=True,
        ),
        sa.CheckConstraint(
            "kind IN ('working', 'episodic', 'semantic', 'procedural')",
            name=op.f("ck_nodes_kind_known"),
        ),
        sa.CheckConstraint(
            "char_length(node_type) BETWEEN 1 AND 64", name=op.f("ck_nodes_node_type_length")
        ),
        sa.CheckConstraint(
            "confidence >= 0 AND confidence <= 1", name=op.f("ck_nodes_confidence_range")
        ),
        sa.CheckConstraint(
            "content_hash IS NULL OR octet_length(content_hash) = 32",
            name=op.f("ck_nodes_content_hash_sha256"),
        ),
        sa.CheckConstraint(
            "decay_rate >= 0 AND decay_rate <= 1", name=op.f("ck_nodes_decay_rate_range")
        ),
        sa.CheckConstraint(
            "importance >= 0 AND importance <= 1", name=op.f("ck_nodes_importance_range")
        ),
        sa.CheckConstraint("layer BETWEEN 0 AND 4", name=op.f("ck_nodes_layer_range")),
        sa.CheckConstraint("privacy BETWEEN 0 AND 3", name=op.f("ck_nodes_privacy_range")),
        sa.CheckConstraint(
            "valid_to IS NULL OR valid_from IS NULL OR valid_to > valid_from",
            name=op.f("ck_nodes_valid_period"),
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id"], ["memstore.namespaces.id"], name="fk_nodes_namespace"
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_nodes"),
        schema="memstore",
    )
    op.create_index(
        "ix_nodes_recorded",
        "nodes",
        ["namespace_id", "recorded_at"],
        unique=False,
        schema="memstore",
    )
    op.create_index(
        "ix_nodes_search",
        "nodes",
        ["search"],
        unique=False,
        schema="memstore",
        postgresql_using="gin",
    )
    op.create_index(
        "uq_nodes_content",
        "nodes",
        ["namespace_id", "kind", "node_type", "content_hash"],
        unique=True,
        schema="memstore",
    )
    op.create_table(
        "operations",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("batch_id", sa.Text(), nullable=True),
        sa.Column("op", sa.Text(), nullable=False),
        sa.Column("phase", sa.Text(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column(
            "payload",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column(
            "receipt",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column(
            "recorded_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "outcome IN ('accepted', 'rejected')", name=op.f("ck_operations_outcome_known")
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id"], ["memstore.namespaces.id"], name="fk_operations_namespace"
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_operations"),
        schema="memstore",
    )
    op.create_index(
        "ix_operations_recorded",
        "operations",
        ["namespace_id", "recorded_at"],
        unique=False,
        schema="memstore",
    )
    op.create_table(
        "proposals",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("operation", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("rationale", sa.Text(), nullable=True),
        sa.Column("status", sa.Text(), server_default=sa.text("'pending'"), nullable=False),
        sa.Column("proposed_by", sa.Text(), nullable=True),
        sa.Column(
            "proposed_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("decided_by", sa.Text(), nullable=True),
        sa.Column("decided_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.Column("decision_reason", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "(status = 'pending') = (decided_at IS NULL)",
            name=op.f("ck_proposals_decided_when_not_pending"),
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'accepted', 'rejected')", name=op.f("ck_proposals_status_known")
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id"], ["memstore.namespaces.id"], name="fk_proposals_namespace"
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_proposals"),
        schema="memstore",
    )
    op.create_index(
        "ix_proposals_pending",
        "proposals",
        ["namespace_id", "proposed_at"],
        unique=False,
        schema="memstore",
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_table(
        "activations",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("strength", sa.REAL(), nullable=False),
        sa.Column(
            "at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("strength >= 0", name=op.f("ck_activations_strength_nonnegative")),
        sa.ForeignKeyConstraint(
            ["namespace_id", "node_id"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_activations_node_id",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_activations"),
        schema="memstore",
    )
    op.create_index(
        "ix_activations_node",
        "activations",
        ["namespace_id", "node_id", "at"],
        unique=False,
        schema="memstore",
    )
    op.create_table(
        "edges",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("src", sa.BigInteger(), nullable=False),
        sa.Column("dst", sa.BigInteger(), nullable=False),
        sa.Column("relation", sa.Text(), server_default=sa.text("'related'"), nullable=False),
        sa.Column("weight", sa.REAL(), server_default=sa.text("0.5"), nullable=False),
        sa.Column("inhibitory", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("confidence", sa.REAL(), server_default=sa.text("0.5"), nullable=False),
        sa.Column("layer", sa.SmallInteger(), server_default=sa.text("1"), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column(
            "recorded_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "char_length(relation) BETWEEN 1 AND 64", name=op.f("ck_edges_relation_length")
        ),
        sa.CheckConstraint(
            "confidence >= 0 AND confidence <= 1", name=op.f("ck_edges_confidence_range")
        ),
        sa.CheckConstraint("layer BETWEEN 0 AND 4", name=op.f("ck_edges_layer_range")),
        sa.CheckConstraint("src <> dst", name=op.f("ck_edges_no_self_loop")),
        sa.CheckConstraint("weight >= 0 AND weight <= 1", name=op.f("ck_edges_weight_range")),
        sa.ForeignKeyConstraint(
            ["namespace_id", "dst"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_edges_dst",
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id", "src"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_edges_src",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_edges"),
        schema="memstore",
    )
    op.create_index(
        "ix_edges_in",
        "edges",
        ["namespace_id", "dst"],
        unique=False,
        schema="memstore",
        postgresql_include=["src", "weight", "relation", "inhibitory"],
    )
    op.create_index(
        "ix_edges_out",
        "edges",
        ["namespace_id", "src"],
        unique=False,
        schema="memstore",
        postgresql_include=["dst", "weight", "relation", "inhibitory"],
    )
    op.create_table(
        "embeddings",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("dims", sa.SmallInteger(), nullable=False),
        sa.Column("embedding", pgvector.sqlalchemy.vector.VECTOR(), nullable=False),
        sa.Column("source_hash", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "char_length(model) BETWEEN 1 AND 200", name=op.f("ck_embeddings_model_length")
        ),
        sa.CheckConstraint("vector_dims(embedding) = dims", name=op.f("ck_embeddings_dims_match")),
        sa.ForeignKeyConstraint(
            ["namespace_id", "node_id"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_embeddings_node_id",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "node_id", "model", name="pk_embeddings"),
        schema="memstore",
    )
    op.create_table(
        "node_state",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("activation_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_activated_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.Column(
            "access_ring",
            postgresql.ARRAY(postgresql.TIMESTAMP(timezone=True)),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
        sa.Column("times_applied", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("success_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("current_confidence", sa.REAL(), nullable=True),
        sa.Column(
            "updated_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "activation_count >= 0 AND times_applied >= 0 AND success_count >= 0",
            name=op.f("ck_node_state_counts_nonnegative"),
        ),
        sa.CheckConstraint(
            "cardinality(access_ring) <= 64", name=op.f("ck_node_state_access_ring_bounded")
        ),
        sa.CheckConstraint(
            "current_confidence IS NULL OR (current_confidence >= 0 AND current_confidence <= 1)",
            name=op.f("ck_node_state_current_confidence_range"),
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id", "node_id"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_node_state_node_id",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "node_id", name="pk_node_state"),
        schema="memstore",
    )
    op.create_table(
        "redactions",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.LargeBinary(), nullable=True),
        sa.Column(
            "redacted_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("char_length(reason) >= 1", name=op.f("ck_redactions_reason_given")),
        sa.ForeignKeyConstraint(
            ["namespace_id", "node_id"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_redactions_node_id",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_redactions"),
        schema="memstore",
    )
    op.create_index(
        "uq_redactions_node",
        "redactions",
        ["namespace_id", "node_id"],
        unique=True,
        schema="memstore",
    )
    op.create_table(
        "supersessions",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("old_id", sa.BigInteger(), nullable=False),
        sa.Column("new_id", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column(
            "at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("char_length(reason) >= 1", name=op.f("ck_supersessions_reason_given")),
        sa.CheckConstraint("old_id <> new_id", name=op.f("ck_supersessions_not_itself")),
        sa.ForeignKeyConstraint(
            ["namespace_id", "new_id"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_supersessions_new_id",
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id", "old_id"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_supersessions_old_id",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_supersessions"),
        schema="memstore",
    )
    op.create_index(
        "ix_supersessions_new",
        "supersessions",
        ["namespace_id", "new_id"],
        unique=False,
        schema="memstore",
    )
    op.create_index(
        "uq_supersessions_old",
        "supersessions",
        ["namespace_id", "old_id"],
        unique=True,
        schema="memstore",
    )
    op.create_table(
        "edge_state",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("edge_id", sa.BigInteger(), nullable=False),
        sa.Column("hebbian_weight", sa.REAL(), server_default=sa.text("0"), nullable=False),
        sa.Column("fire_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_fired_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.CheckConstraint("fire_count >= 0", name=op.f("ck_edge_state_fire_count_nonnegative")),
        sa.CheckConstraint(
            "hebbian_weight >= 0 AND hebbian_weight <= 1",
            name=op.f("ck_edge_state_hebbian_weight_range"),
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id", "edge_id"],
            ["memstore.edges.namespace_id", "memstore.edges.id"],
            name="fk_edge_state_edge_id",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "edge_id", name="pk_edge_state"),
        schema="memstore",
    )
    op.create_table(
        "tombstones",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("target_kind", sa.Text(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=True),
        sa.Column("edge_id", sa.BigInteger(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column(
            "at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "(target_kind = 'node' AND node_id IS NOT NULL AND edge_id IS NULL) OR (target_kind = 'edge' AND edge_id IS NOT NULL AND node_id IS NULL)",
            name=op.f("ck_tombstones_one_target"),
        ),
        sa.CheckConstraint("char_length(reason) >= 1", name=op.f("ck_tombstones_reason_given")),
        sa.ForeignKeyConstraint(
            ["namespace_id", "edge_id"],
            ["memstore.edges.namespace_id", "memstore.edges.id"],
            name="fk_tombstones_edge_id",
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id", "node_id"],
            ["memstore.nodes.namespace_id", "memstore.nodes.id"],
            name="fk_tombstones_node_id",
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_tombstones"),
        schema="memstore",
    )
    op.create_index(
        "uq_tombstones_edge",
        "tombstones",
        ["namespace_id", "edge_id"],
        unique=True,
        schema="memstore",
        postgresql_where=sa.text("edge_id IS NOT NULL"),
    )
    op.create_index(
        "uq_tombstones_node",
        "tombstones",
        ["namespace_id", "node_id"],
        unique=True,
        schema="memstore",
        postgresql_where=sa.text("node_id IS NOT NULL"),
    )


def downgrade() -> None:
    # Indexes go with their tables. The schema itself stays: it holds the
    # version table, and another application may share the vector extension.
    op.drop_table("tombstones", schema="memstore")
    op.drop_table("edge_state", schema="memstore")
    op.drop_table("supersessions", schema="memstore")
    op.drop_table("redactions", schema="memstore")
    op.drop_table("node_state", schema="memstore")
    op.drop_table("embeddings", schema="memstore")
    op.drop_table("edges", schema="memstore")
    op.drop_table("activations", schema="memstore")
    op.drop_table("proposals", schema="memstore")
    op.drop_table("operations", schema="memstore")
    op.drop_table("nodes", schema="memstore")
    op.drop_table("namespaces", schema="memstore")
