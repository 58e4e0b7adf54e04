"""Maintenance and procedure outcomes: telemetry retention, outcomes, role-scoped procedures.

Four tables: memstore.procedure_outcomes (append-only: each success or failure
of a procedure version with its episode), memstore.procedure_roles
(append-only: the roles a procedure version serves), memstore.activation_summaries
(learned numbers: the access log past its retention, per day and node) and
memstore.maintenance_runs (append-only: what each maintenance pass changed,
and how far decay has been applied). The role memstore_maintainer owns
memstore.summarise_activations (SECURITY DEFINER), the only code that may
remove activations rows, and only after summarising them.

A frozen copy of sql/12_maintenance.sql at this revision.

Revision ID: 0025
Revises: 0021
Create Date: 2026-12-03

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0025"
down_revision: str | Sequence[str] | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/12_maintenance.sql
MAINTENANCE_SQL = r"""
-- Maintenance and procedure outcomes (docs/operations.md "Maintenance",
-- docs/tiers.md "Procedures").
--
-- Truth and telemetry. Truth tables (nodes, edges, tombstones, supersessions,
-- operations, redactions, proposals, procedure_outcomes, procedure_roles,
-- maintenance_runs) keep every row for ever. The one telemetry table is
-- activations, the access log that activate(learn=True) writes: what learning
-- needs from it already lives in node_state and edge_state, so after a
-- retention (MEMSTORE_ACTIVATION_RETENTION_DAYS) a maintenance pass
-- summarises its old rows into activation_summaries (per namespace, UTC day
-- and node) and only then removes them, in one statement.
--
-- The removal passes the append-only guard the way an erasure does: by the
-- role it runs as. memstore.summarise_activations is SECURITY DEFINER, owned
-- by memstore_maintainer, a role nobody logs in as; the activations guard lets
-- a DELETE through only for current_user = memstore_maintainer. The service
-- (memstore_app) may not DELETE any truth or telemetry row itself; it may
-- EXECUTE the function, which removes nothing but rows older than the cutoff
-- it is given, of the namespace the transaction declared (row-level security
-- confines the maintainer as it confines the service). TRUNCATE stays refused.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memstore_maintainer') THEN
        CREATE ROLE memstore_maintainer NOLOGIN;
    END IF;
END;
$$;

GRANT USAGE ON SCHEMA memstore TO memstore_maintainer;
GRANT SELECT, DELETE ON memstore.activations TO memstore_maintainer;
GRANT SELECT, INSERT, UPDATE ON memstore.activation_summaries TO memstore_maintainer;

-- Row-level security, as for every table (sql/07_row_security.sql).
ALTER TABLE memstore.procedure_outcomes ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.procedure_outcomes
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.procedure_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.procedure_roles
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.activation_summaries ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.activation_summaries
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.maintenance_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.maintenance_runs
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

-- Transaction time belongs to the database (sql/09_transaction_time.sql).
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.procedure_outcomes
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.procedure_roles
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.maintenance_runs
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();

-- The append-only law for the new truth tables (sql/01_append_only.sql).
-- procedure_outcomes hold a caller's words about a procedure version and its
-- episode (note, run id, actor): an erasure of either blanks them
-- (sql/03_redaction.sql), recognised like the erasure's other UPDATEs by the
-- role it runs as and by writing exactly these values.
GRANT SELECT, UPDATE ON memstore.procedure_outcomes TO memstore_redactor;

CREATE OR REPLACE FUNCTION memstore.erased_outcome(p_row jsonb) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_build_object(
        'note', NULL,
        'episode_run', CASE WHEN p_row->>'episode_run' IS NULL THEN NULL ELSE 'redacted' END,
        'actor', memstore.erased_text((p_row->>'namespace_id')::bigint, p_row->>'actor'))
$$;
REVOKE ALL ON FUNCTION memstore.erased_outcome(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.erased_outcome(jsonb) TO memstore_redactor;

CREATE OR REPLACE FUNCTION memstore.guard_outcome_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'memstore_redactor' THEN
        IF to_jsonb(NEW) = to_jsonb(OLD) || memstore.erased_outcome(to_jsonb(OLD)) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'MS001',
        MESSAGE = format('UPDATE on %s refused: procedure outcomes are append-only:'
                         ' record a new outcome', TG_TABLE_NAME),
        HINT = 'record a new outcome',
        SCHEMA = TG_TABLE_SCHEMA,
        TABLE = TG_TABLE_NAME;
END;
$$;

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.procedure_outcomes
    FOR EACH ROW EXECUTE FUNCTION memstore.guard_outcome_update();

-- Each new erasure record (one per erased version, written by
-- memstore.redact_lineage as memstore_redactor) blanks the outcomes of that
-- version and the outcomes whose episode it was.
CREATE OR REPLACE FUNCTION memstore.erase_outcomes() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE memstore.procedure_outcomes o
    SET note = NULL,
        episode_run = CASE WHEN o.episode_run IS NULL THEN NULL ELSE 'redacted' END,
        actor = memstore.erased_text(o.namespace_id, o.actor)
    WHERE o.namespace_id = NEW.namespace_id
      AND (o.node_id = NEW.node_id OR o.episode_node_id = NEW.node_id)
      AND (o.note IS NOT NULL OR o.episode_run IS DISTINCT FROM 'redacted'
           OR o.actor IS DISTINCT FROM memstore.erased_text(o.namespace_id, o.actor));
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER erase_outcomes AFTER INSERT ON memstore.redactions
    FOR EACH ROW EXECUTE FUNCTION memstore.erase_outcomes();
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.procedure_outcomes
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'procedure outcomes are append-only: record a new outcome');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.procedure_outcomes
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'procedure outcomes are append-only: record a new outcome');

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.procedure_roles
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'procedure roles are append-only: refine the procedure with new roles');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.procedure_roles
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'procedure roles are append-only: refine the procedure with new roles');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.procedure_roles
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'procedure roles are append-only: refine the procedure with new roles');

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.maintenance_runs
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'maintenance runs are append-only: a pass records a new run');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.maintenance_runs
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'maintenance runs are append-only: a pass records a new run');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.maintenance_runs
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'maintenance runs are append-only: a pass records a new run');

-- Summaries are learned numbers: merged into, never removed.
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.activation_summaries
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'activation summaries are never deleted: a later pass merges into them');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.activation_summaries
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'activation summaries are never deleted: a later pass merges into them');

-- activations: DELETE passes only inside memstore.summarise_activations
-- (recognised by the role it runs as, like the erasure's UPDATE).
-- TG_ARGV[0]: the sanctioned alternative.
CREATE OR REPLACE FUNCTION memstore.guard_telemetry_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'memstore_maintainer' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'MS001',
        MESSAGE = format('%s on %s refused: %s', TG_OP, TG_TABLE_NAME, TG_ARGV[0]),
        HINT = TG_ARGV[0],
        SCHEMA = TG_TABLE_SCHEMA,
        TABLE = TG_TABLE_NAME;
END;
$$;

CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.guard_telemetry_delete(
        'activations are append-only: the access log is never rewritten; ns.maintain() summarises rows past their retention');

-- Summarise the declared namespace's activations recorded before p_before into
-- activation_summaries, and remove them: both or neither (one statement).
-- Answers how many rows were summarised and how many summary rows they touched.
CREATE OR REPLACE FUNCTION memstore.summarise_activations(p_namespace_id bigint,
                                                          p_before timestamptz)
RETURNS TABLE (summarised bigint, summaries bigint)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM memstore.activations a
        WHERE a.namespace_id = p_namespace_id AND a.at < p_before
        RETURNING a.namespace_id, a.node_id, a.at, a.strength
    ), merged AS (
        INSERT INTO memstore.activation_summaries AS s
               (namespace_id, day, node_id, activations, strength_sum, strength_max,
                first_at, last_at)
        SELECT g.namespace_id, (g.at AT TIME ZONE 'UTC')::date, g.node_id, count(*),
               sum(g.strength), max(g.strength), min(g.at), max(g.at)
        FROM gone g
        GROUP BY g.namespace_id, (g.at AT TIME ZONE 'UTC')::date, g.node_id
        ON CONFLICT (namespace_id, day, node_id) DO UPDATE
        SET activations = s.activations + excluded.activations,
            strength_sum = s.strength_sum + excluded.strength_sum,
            strength_max = greatest(s.strength_max, excluded.strength_max),
            first_at = least(s.first_at, excluded.first_at),
            last_at = greatest(s.last_at, excluded.last_at)
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM merged);
$$;

REVOKE ALL ON FUNCTION memstore.summarise_activations(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.summarise_activations(bigint, timestamptz) TO CURRENT_USER;
ALTER FUNCTION memstore.summarise_activations(bigint, timestamptz) OWNER TO memstore_maintainer;
"""

RESTORE_SQL = r"""
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'activations are append-only: the access log is never rewritten; learned numbers live in node_state');
DROP FUNCTION memstore.guard_telemetry_delete();
DROP TRIGGER erase_outcomes ON memstore.redactions;
DROP FUNCTION memstore.erase_outcomes();
REVOKE ALL ON memstore.activations FROM memstore_maintainer;
REVOKE USAGE ON SCHEMA memstore FROM memstore_maintainer;
DROP FUNCTION memstore.summarise_activations(bigint, timestamptz);
"""


# Handing memstore.summarise_activations to memstore_maintainer needs that role
# to have CREATE on the schema (PostgreSQL asks it of a new owner); a
# non-superuser migrating role grants it for the hand-over only, as 0017 does.
# The role must exist before it can be lent CREATE (the SQL below creates it
# too, where the migrating role may: `memstore db roles --apply` creates it
# first in a deploy).
ROLE_SQL = r"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memstore_maintainer') THEN
        CREATE ROLE memstore_maintainer NOLOGIN;
    END IF;
END;
$$;
"""
LEND_CREATE = "GRANT CREATE ON SCHEMA memstore TO memstore_maintainer"
TAKE_CREATE_BACK = "REVOKE CREATE ON SCHEMA memstore FROM memstore_maintainer"


def _recorded_at(name: str = "recorded_at") -> sa.Column[object]:
    return sa.Column(
        name, sa.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def _node_fk(table: str, column: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["namespace_id", column],
        ["memstore.nodes.namespace_id", "memstore.nodes.id"],
        name=f"fk_{table}_{column}",
    )


def upgrade() -> None:
    op.create_table(
        "procedure_outcomes",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("episode_node_id", sa.BigInteger(), nullable=True),
        sa.Column("episode_run", sa.Text(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=False),
        _recorded_at(),
        sa.CheckConstraint(
            "char_length(episode_run) BETWEEN 1 AND 200",
            name=op.f("ck_procedure_outcomes_episode_run_length"),
        ),
        sa.CheckConstraint(
            "char_length(note) BETWEEN 1 AND 4000", name=op.f("ck_procedure_outcomes_note_length")
        ),
        _node_fk("procedure_outcomes", "node_id"),
        _node_fk("procedure_outcomes", "episode_node_id"),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_procedure_outcomes"),
        schema="memstore",
    )
    op.create_index(
        "ix_procedure_outcomes_node",
        "procedure_outcomes",
        ["namespace_id", "node_id", "id"],
        schema="memstore",
    )
    op.create_table(
        "procedure_roles",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        _recorded_at(),
        sa.CheckConstraint(
            "char_length(role) BETWEEN 1 AND 200", name=op.f("ck_procedure_roles_role_length")
        ),
        _node_fk("procedure_roles", "node_id"),
        sa.PrimaryKeyConstraint("namespace_id", "node_id", "role", name="pk_procedure_roles"),
        schema="memstore",
    )
    op.create_table(
        "activation_summaries",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("node_id", sa.BigInteger(), nullable=False),
        sa.Column("activations", sa.BigInteger(), nullable=False),
        sa.Column("strength_sum", postgresql.DOUBLE_PRECISION(), nullable=False),
        sa.Column("strength_max", sa.REAL(), nullable=False),
        sa.Column("first_at", sa.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("last_at", sa.TIMESTAMP(timezone=True), nullable=False),
        sa.CheckConstraint(
            "activations >= 1", name=op.f("ck_activation_summaries_activations_positive")
        ),
        _node_fk("activation_summaries", "node_id"),
        sa.PrimaryKeyConstraint("namespace_id", "day", "node_id", name="pk_activation_summaries"),
        schema="memstore",
    )
    op.create_table(
        "maintenance_runs",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("decay_steps", sa.Integer(), nullable=False),
        sa.Column("decayed_through", sa.TIMESTAMP(timezone=True), nullable=True),
        sa.Column("report", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        _recorded_at(),
        sa.CheckConstraint(
            "decay_steps >= 0", name=op.f("ck_maintenance_runs_decay_steps_nonnegative")
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id"], ["memstore.namespaces.id"], name="fk_maintenance_runs_namespace"
        ),
        sa.PrimaryKeyConstraint("namespace_id", "id", name="pk_maintenance_runs"),
        schema="memstore",
    )
    op.create_index("ix_activations_at", "activations", ["namespace_id", "at"], schema="memstore")
    op.execute(ROLE_SQL)
    op.execute(LEND_CREATE)
    op.execute(MAINTENANCE_SQL)
    op.execute(TAKE_CREATE_BACK)


def downgrade() -> None:
    op.execute(RESTORE_SQL)
    op.drop_index("ix_activations_at", table_name="activations", schema="memstore")
    op.drop_table("maintenance_runs", schema="memstore")
    op.drop_table("activation_summaries", schema="memstore")
    op.drop_table("procedure_roles", schema="memstore")
    op.drop_index("ix_procedure_outcomes_node", table_name="procedure_outcomes", schema="memstore")
    op.drop_table("procedure_outcomes", schema="memstore")
    op.execute("DROP FUNCTION memstore.guard_outcome_update()")
    op.execute("DROP FUNCTION memstore.erased_outcome(jsonb)")
