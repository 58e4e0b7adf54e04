"""The append-only law, lineage rules and audited erasure, in the database.

Frozen copies of sql/01_append_only.sql, sql/02_lineage.sql and sql/03_redaction.sql as
they were at this revision: a migration never reads a file that a later change
could edit. A later change to sql/ ships as a new revision with the new text;
tests/migrations/test_parity.py proves the two agree at head.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/01_append_only.sql
APPEND_ONLY_SQL = r"""
-- The append-only law (docs/architecture.md, "The append-only law").
--
-- Truth tables refuse UPDATE, DELETE and TRUNCATE; learned-state tables refuse
-- DELETE and TRUNCATE. Every refusal raises SQLSTATE MS001 with a message that
-- names the table and the sanctioned alternative, so psql users and the Python
-- layer (memstore.errors.ImmutableRecordError) both learn what to do instead.
-- The message carries the logical table name: a distributed PostgreSQL reports
-- shard table names in TG_TABLE_NAME, so callers match on SQLSTATE and text.

CREATE OR REPLACE FUNCTION memstore.refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = 'MS001',
        MESSAGE = format('%s on %s refused: %s', TG_OP, TG_TABLE_NAME, TG_ARGV[0]),
        HINT = TG_ARGV[0],
        SCHEMA = TG_TABLE_SCHEMA,
        TABLE = TG_TABLE_NAME;
END;
$$;

-- nodes: the one UPDATE that passes is the audited erasure, recognised by the
-- role it runs as (memstore.redact_node is SECURITY DEFINER, owned by
-- memstore_redactor). A setting would not do: any session can set one, and
-- settings do not reach the shards of a distributed PostgreSQL.
CREATE OR REPLACE FUNCTION memstore.guard_node_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'memstore_redactor'
       AND NEW.content = '' AND NEW.label IS NULL
       AND NEW.data = '{}'::jsonb AND NEW.content_hash IS NULL
       AND to_jsonb(NEW) - ARRAY['content', 'label', 'data', 'content_hash', 'search']
           = to_jsonb(OLD) - ARRAY['content', 'label', 'data', 'content_hash', 'search']
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'MS001',
        MESSAGE = format('UPDATE on %s refused: nodes are append-only: revise creates a new'
                         ' version; forget writes a tombstone; memstore.redact_node erases'
                         ' personal data', TG_TABLE_NAME),
        HINT = 'revise creates a new version; forget writes a tombstone',
        SCHEMA = TG_TABLE_SCHEMA,
        TABLE = TG_TABLE_NAME;
END;
$$;

-- namespaces
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.namespaces
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'namespaces are append-only: a namespace is never renamed or removed; forget its memories with tombstones');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.namespaces
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'namespaces are append-only: a namespace is never renamed or removed; forget its memories with tombstones');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.namespaces
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'namespaces are append-only: a namespace is never renamed or removed; forget its memories with tombstones');

-- nodes
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.nodes
    FOR EACH ROW EXECUTE FUNCTION memstore.guard_node_update();
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.nodes
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'nodes are append-only: revise creates a new version; forget writes a tombstone');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.nodes
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'nodes are append-only: revise creates a new version; forget writes a tombstone');

-- edges
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.edges
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'edges are append-only: link a new edge; forget writes a tombstone; learned weights live in edge_state');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.edges
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'edges are append-only: link a new edge; forget writes a tombstone; learned weights live in edge_state');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.edges
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'edges are append-only: link a new edge; forget writes a tombstone; learned weights live in edge_state');

-- tombstones
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'tombstones are append-only: a tombstone is never lifted; read with tombstoned items included instead');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'tombstones are append-only: a tombstone is never lifted; read with tombstoned items included instead');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.tombstones
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'tombstones are append-only: a tombstone is never lifted; read with tombstoned items included instead');

-- supersessions
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'supersessions are append-only: revise the current version to write a newer one');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'supersessions are append-only: revise the current version to write a newer one');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.supersessions
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'supersessions are append-only: revise the current version to write a newer one');

-- operations (the audit log)
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.operations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'operations are append-only: the audit log is never rewritten; record a new operation');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.operations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'operations are append-only: the audit log is never rewritten; record a new operation');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.operations
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'operations are append-only: the audit log is never rewritten; record a new operation');

-- activations (the access log)
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'activations are append-only: the access log is never rewritten; learned numbers live in node_state');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'activations are append-only: the access log is never rewritten; learned numbers live in node_state');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.activations
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'activations are append-only: the access log is never rewritten; learned numbers live in node_state');

-- redactions (the erasure record)
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.redactions
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'redactions are append-only: the erasure record is kept for audit');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.redactions
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'redactions are append-only: the erasure record is kept for audit');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.redactions
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'redactions are append-only: the erasure record is kept for audit');

-- node_state and edge_state: learned numbers may change, rows never go.
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.node_state
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'node_state rows are never deleted: update the learned values instead');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.node_state
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'node_state rows are never deleted: update the learned values instead');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.edge_state
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'edge_state rows are never deleted: update or decay the learned weight instead');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.edge_state
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'edge_state rows are never deleted: update or decay the learned weight instead');
"""

# sql/02_lineage.sql
LINEAGE_SQL = r"""
-- Lineage rules: a node is superseded at most once and never into a cycle; a
-- target is tombstoned at most once; a proposal is decided once.
-- Unique indexes (uq_supersessions_old, uq_tombstones_node/_edge) back these
-- checks when two writers race; the checks give the readable message.

CREATE OR REPLACE FUNCTION memstore.check_supersession() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    current_version bigint;
BEGIN
    -- One supersession at a time per namespace: two concurrent links could
    -- otherwise each pass the cycle check and close a cycle together.
    PERFORM pg_advisory_xact_lock(hashtextextended('memstore.supersessions', NEW.namespace_id));

    IF EXISTS (SELECT 1 FROM memstore.supersessions s
               WHERE s.namespace_id = NEW.namespace_id AND s.old_id = NEW.old_id) THEN
        WITH RECURSIVE chain(id, depth) AS (
            SELECT NEW.old_id, 0
            UNION
            SELECT s.new_id, c.depth + 1
            FROM memstore.supersessions s
            JOIN chain c ON s.old_id = c.id
            WHERE s.namespace_id = NEW.namespace_id
        )
        SELECT id INTO current_version FROM chain ORDER BY depth DESC LIMIT 1;
        RAISE EXCEPTION USING
            ERRCODE = 'MS002',
            MESSAGE = format('node %s is already superseded; its current version is node %s',
                             NEW.old_id, current_version),
            HINT = 'supersessions are append-only: revise the current version instead',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;

    IF EXISTS (
        WITH RECURSIVE chain(id) AS (
            SELECT NEW.new_id
            UNION
            SELECT s.new_id
            FROM memstore.supersessions s
            JOIN chain c ON s.old_id = c.id
            WHERE s.namespace_id = NEW.namespace_id
        )
        SELECT 1 FROM chain WHERE id = NEW.old_id
    ) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS002',
            MESSAGE = format('superseding node %s by node %s would close a cycle',
                             NEW.old_id, NEW.new_id),
            HINT = 'supersessions are append-only: a lineage only moves forward',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER check_supersession BEFORE INSERT ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.check_supersession();

CREATE OR REPLACE FUNCTION memstore.check_tombstone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM memstore.tombstones t
               WHERE t.namespace_id = NEW.namespace_id
                 AND t.target_kind = NEW.target_kind
                 AND (t.node_id = NEW.node_id OR t.edge_id = NEW.edge_id)) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS003',
            MESSAGE = format('%s %s is already tombstoned', NEW.target_kind,
                             coalesce(NEW.node_id, NEW.edge_id)),
            HINT = 'tombstones are append-only: a target is tombstoned once',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER check_tombstone BEFORE INSERT ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.check_tombstone();

-- proposals: status moves pending -> accepted | rejected, once; nothing else
-- about a proposal changes, and a proposal is never deleted.
CREATE OR REPLACE FUNCTION memstore.guard_proposal_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'pending' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS004',
            MESSAGE = format('proposal %s was already %s: a decision is final', OLD.id, OLD.status),
            HINT = 'propose again to reconsider',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    IF NEW.status NOT IN ('accepted', 'rejected') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS004',
            MESSAGE = format('proposal %s may only move from pending to accepted or rejected', OLD.id),
            HINT = 'accept or reject the proposal',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    IF to_jsonb(NEW) - ARRAY['status', 'decided_by', 'decided_at', 'decision_reason']
       <> to_jsonb(OLD) - ARRAY['status', 'decided_by', 'decided_at', 'decision_reason'] THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS004',
            MESSAGE = format('proposal %s: only its decision may change', OLD.id),
            HINT = 'propose again with the changed operation',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    NEW.decided_at := coalesce(NEW.decided_at, now());
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER guard_decision BEFORE UPDATE ON memstore.proposals
    FOR EACH ROW EXECUTE FUNCTION memstore.guard_proposal_update();
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.proposals
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'proposals are never deleted: reject a pending proposal instead');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.proposals
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'proposals are never deleted: reject a pending proposal instead');
"""

# sql/03_redaction.sql
REDACTION_SQL = r"""
-- Audited erasure: the only way content leaves memstore.
--
-- memstore.redact_node blanks a node's content, label and data (the generated
-- full-text column follows), clears its content hash, deletes its embeddings
-- and writes a redactions row: who, why, when, and the sha256 of the erased
-- content. The node's id, edges, tombstones and lineage stay.
--
-- It passes the nodes UPDATE guard because it runs as memstore_redactor
-- (SECURITY DEFINER), a role nobody logs in as: the guard checks current_user,
-- which no setting an ordinary session can make can change.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memstore_redactor') THEN
        CREATE ROLE memstore_redactor NOLOGIN;
    END IF;
END;
$$;

GRANT USAGE ON SCHEMA memstore TO memstore_redactor;
GRANT SELECT, UPDATE ON memstore.nodes TO memstore_redactor;
GRANT SELECT, DELETE ON memstore.embeddings TO memstore_redactor;
GRANT SELECT, INSERT ON memstore.redactions TO memstore_redactor;

CREATE OR REPLACE FUNCTION memstore.redact_node(
    p_namespace_id bigint,
    p_node_id bigint,
    p_reason text,
    p_actor text
) RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    erased_hash bytea;
    redaction_id bigint;
BEGIN
    IF p_reason IS NULL OR btrim(p_reason) = '' OR p_actor IS NULL OR btrim(p_actor) = '' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS005',
            MESSAGE = 'a redaction needs a reason and an actor',
            TABLE = 'redactions';
    END IF;

    SELECT sha256(convert_to(n.content, 'UTF8')) INTO erased_hash
    FROM memstore.nodes n
    WHERE n.namespace_id = p_namespace_id AND n.id = p_node_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS005',
            MESSAGE = format('node %s does not exist in namespace %s', p_node_id, p_namespace_id),
            TABLE = 'nodes';
    END IF;

    IF EXISTS (SELECT 1 FROM memstore.redactions r
               WHERE r.namespace_id = p_namespace_id AND r.node_id = p_node_id) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS005',
            MESSAGE = format('node %s is already redacted', p_node_id),
            TABLE = 'redactions';
    END IF;

    UPDATE memstore.nodes
    SET content = '', label = NULL, data = '{}'::jsonb, content_hash = NULL
    WHERE namespace_id = p_namespace_id AND id = p_node_id;

    DELETE FROM memstore.embeddings
    WHERE namespace_id = p_namespace_id AND node_id = p_node_id;

    INSERT INTO memstore.redactions (namespace_id, node_id, reason, actor, content_hash)
    VALUES (p_namespace_id, p_node_id, p_reason, p_actor, erased_hash)
    RETURNING id INTO redaction_id;

    RETURN redaction_id;
END;
$$;

-- Erasure is not for everyone who can connect: the migrating role may call it,
-- and grants it to the application role (docs/operations.md). Grants first:
-- after the owner changes, a non-superuser migrating role could not grant.
REVOKE ALL ON FUNCTION memstore.redact_node(bigint, bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.redact_node(bigint, bigint, text, text) TO CURRENT_USER;
-- PostgreSQL lets a function change owner only to a role with CREATE on its
-- schema; memstore_redactor has it for this one statement (a non-superuser
-- migrating role owns the schema, so it may grant and revoke it).
GRANT CREATE ON SCHEMA memstore TO memstore_redactor;
ALTER FUNCTION memstore.redact_node(bigint, bigint, text, text) OWNER TO memstore_redactor;
REVOKE CREATE ON SCHEMA memstore FROM memstore_redactor;
"""


def upgrade() -> None:
    op.execute(APPEND_ONLY_SQL)
    op.execute(LINEAGE_SQL)
    op.execute(REDACTION_SQL)


def downgrade() -> None:
    # The memstore_redactor role stays: roles belong to the whole cluster and
    # other databases on it may still use theirs.
    op.execute("DROP TRIGGER no_update ON memstore.namespaces")
    op.execute("DROP TRIGGER no_delete ON memstore.namespaces")
    op.execute("DROP TRIGGER no_truncate ON memstore.namespaces")
    op.execute("DROP TRIGGER no_update ON memstore.nodes")
    op.execute("DROP TRIGGER no_delete ON memstore.nodes")
    op.execute("DROP TRIGGER no_truncate ON memstore.nodes")
    op.execute("DROP TRIGGER no_update ON memstore.edges")
    op.execute("DROP TRIGGER no_delete ON memstore.edges")
    op.execute("DROP TRIGGER no_truncate ON memstore.edges")
    op.execute("DROP TRIGGER no_update ON memstore.tombstones")
    op.execute("DROP TRIGGER no_delete ON memstore.tombstones")
    op.execute("DROP TRIGGER no_truncate ON memstore.tombstones")
    op.execute("DROP TRIGGER no_update ON memstore.supersessions")
    op.execute("DROP TRIGGER no_delete ON memstore.supersessions")
    op.execute("DROP TRIGGER no_truncate ON memstore.supersessions")
    op.execute("DROP TRIGGER no_update ON memstore.operations")
    op.execute("DROP TRIGGER no_delete ON memstore.operations")
    op.execute("DROP TRIGGER no_truncate ON memstore.operations")
    op.execute("DROP TRIGGER no_update ON memstore.activations")
    op.execute("DROP TRIGGER no_delete ON memstore.activations")
    op.execute("DROP TRIGGER no_truncate ON memstore.activations")
    op.execute("DROP TRIGGER no_update ON memstore.redactions")
    op.execute("DROP TRIGGER no_delete ON memstore.redactions")
    op.execute("DROP TRIGGER no_truncate ON memstore.redactions")
    op.execute("DROP TRIGGER no_delete ON memstore.node_state")
    op.execute("DROP TRIGGER no_truncate ON memstore.node_state")
    op.execute("DROP TRIGGER no_delete ON memstore.edge_state")
    op.execute("DROP TRIGGER no_truncate ON memstore.edge_state")
    op.execute("DROP TRIGGER check_supersession ON memstore.supersessions")
    op.execute("DROP TRIGGER check_tombstone ON memstore.tombstones")
    op.execute("DROP TRIGGER guard_decision ON memstore.proposals")
    op.execute("DROP TRIGGER no_delete ON memstore.proposals")
    op.execute("DROP TRIGGER no_truncate ON memstore.proposals")
    op.execute("DROP FUNCTION memstore.refuse_change()")
    op.execute("DROP FUNCTION memstore.guard_node_update()")
    op.execute("DROP FUNCTION memstore.check_supersession()")
    op.execute("DROP FUNCTION memstore.check_tombstone()")
    op.execute("DROP FUNCTION memstore.guard_proposal_update()")
    op.execute("DROP FUNCTION memstore.redact_node(bigint, bigint, text, text)")
    op.execute(
        "REVOKE ALL ON memstore.nodes, memstore.embeddings, memstore.redactions FROM memstore_redactor"
    )
    op.execute("REVOKE USAGE ON SCHEMA memstore FROM memstore_redactor")
