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
-- role it runs as (memstore.redact_lineage is SECURITY DEFINER, owned by
-- memstore_redactor), and only when it writes exactly what an erasure writes
-- (memstore.erasure_of, sql/03_redaction.sql). A setting would not do: any
-- session can set one, and settings do not reach the shards of a distributed
-- PostgreSQL.
CREATE OR REPLACE FUNCTION memstore.guard_node_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Nested, not AND: only the redactor may compute the keyed hashes.
    IF current_user = 'memstore_redactor' THEN
        IF to_jsonb(NEW) - 'search'
           = (to_jsonb(OLD) - 'search') || memstore.erasure_of('nodes', to_jsonb(OLD))
        THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'MS001',
        MESSAGE = format('UPDATE on %s refused: nodes are append-only: revise creates a new'
                         ' version; forget writes a tombstone; memstore.redact_lineage erases'
                         ' personal data', TG_TABLE_NAME),
        HINT = 'revise creates a new version; forget writes a tombstone',
        SCHEMA = TG_TABLE_SCHEMA,
        TABLE = TG_TABLE_NAME;
END;
$$;

-- The other truth tables that hold a caller's words about a memory (edges,
-- tombstones, supersessions, operations, activations): UPDATE is refused like
-- refuse_change() refuses it, except the erasure's, as for nodes.
-- TG_ARGV[0]: the table's logical name (a distributed PostgreSQL reports shard
-- names in TG_TABLE_NAME); TG_ARGV[1]: the sanctioned alternative.
CREATE OR REPLACE FUNCTION memstore.refuse_unless_erasing() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'memstore_redactor' THEN
        IF to_jsonb(NEW) = to_jsonb(OLD) || memstore.erasure_of(TG_ARGV[0], to_jsonb(OLD)) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'MS001',
        MESSAGE = format('%s on %s refused: %s', TG_OP, TG_TABLE_NAME, TG_ARGV[1]),
        HINT = TG_ARGV[1],
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
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'edges',
        'edges are append-only: link a new edge; forget writes a tombstone; learned weights live in edge_state');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.edges
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'edges are append-only: link a new edge; forget writes a tombstone; learned weights live in edge_state');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.edges
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'edges are append-only: link a new edge; forget writes a tombstone; learned weights live in edge_state');

-- tombstones
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'tombstones',
        'tombstones are append-only: a tombstone is never lifted; read with tombstoned items included instead');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'tombstones are append-only: a tombstone is never lifted; read with tombstoned items included instead');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.tombstones
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'tombstones are append-only: a tombstone is never lifted; read with tombstoned items included instead');

-- supersessions
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'supersessions',
        'supersessions are append-only: revise the current version to write a newer one');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'supersessions are append-only: revise the current version to write a newer one');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.supersessions
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'supersessions are append-only: revise the current version to write a newer one');

-- operations (the audit log)
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.operations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'operations',
        'operations are append-only: the audit log is never rewritten; record a new operation');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.operations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'operations are append-only: the audit log is never rewritten; record a new operation');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.operations
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'operations are append-only: the audit log is never rewritten; record a new operation');

-- activations (the access log)
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'activations',
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
