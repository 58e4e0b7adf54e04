-- Row-level security: a transaction sees and changes one namespace, within a
-- privacy ceiling (docs/security.md).
--
-- The service declares both per transaction, as literal SET LOCAL statements
-- (memstore.db.transaction.namespace_transaction):
--
--     SET LOCAL memstore.namespace_id = '42';
--     SET LOCAL memstore.privacy_ceiling = '3';
--
-- SET LOCAL ends with the transaction, so a pooled connection (pgbouncer in
-- transaction mode) never carries one tenant's setting into another's
-- transaction, and a distributed PostgreSQL (Citus) forwards literal SET LOCAL
-- statements to its workers, which set_config() and session SET are not.
-- Unset (or empty) settings match no row: forgetting to declare a namespace
-- shows nothing rather than everything.
--
-- Policies apply to every role that neither owns the tables nor bypasses RLS:
-- memstore_app, memstore_reader, and memstore_redactor inside
-- memstore.redact_node (so erasure, too, reaches only the declared
-- namespace). The owner (who migrates) and superusers are not confined.
-- Policies hold no subqueries: Citus copies them to shards, where they may not.
--
-- Every table of schema memstore has RLS enabled and a policy; a test fails
-- for a table without. A new table adds two statements here (and in its
-- migration): ENABLE ROW LEVEL SECURITY and its namespace_only policy.

-- namespaces: a transaction sees only the namespace it declared. The service
-- finds (or creates) a namespace by its exact name through
-- memstore.open_namespace below, which cannot list other namespaces.
ALTER TABLE memstore.namespaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.namespaces
    USING (id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

-- nodes: the namespace, and privacy at most the declared ceiling.
ALTER TABLE memstore.nodes ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.nodes
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint
           AND privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint)
    WITH CHECK (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.edges ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.edges
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.tombstones ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.tombstones
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.supersessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.supersessions
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.operations ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.operations
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.proposals ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.proposals
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.activations ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.activations
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.node_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.node_state
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.edge_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.edge_state
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.embeddings ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.embeddings
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.redactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.redactions
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

-- The namespace called p_name, created with p_settings on first use; returns
-- its id. Exact equality on the unique name: never a pattern, so '_' and '%'
-- are just characters. SECURITY DEFINER (owned by the migrating role, which
-- RLS does not confine): the one way a confined role learns a namespace id,
-- and only for a name it already knows.
CREATE OR REPLACE FUNCTION memstore.open_namespace(p_name text, p_settings jsonb)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found bigint;
BEGIN
    INSERT INTO memstore.namespaces (name, settings)
    VALUES (p_name, coalesce(p_settings, '{}'::jsonb))
    ON CONFLICT (name) DO NOTHING
    RETURNING id INTO found;
    IF found IS NULL THEN
        SELECT ns.id INTO found FROM memstore.namespaces ns WHERE ns.name = p_name;
    END IF;
    RETURN found;
END;
$$;

REVOKE ALL ON FUNCTION memstore.open_namespace(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.open_namespace(text, jsonb) TO CURRENT_USER;

-- The id of the namespace called p_name, or NULL: a lookup that never creates.
-- Reads of a namespace nobody has written to answer empty (or not found) and
-- leave nothing behind; memstore.open_namespace runs inside a namespace's
-- first write transaction instead, so a write that fails creates nothing.
-- SECURITY DEFINER like open_namespace, for the same reason (a confined role
-- cannot see the namespaces table), and like it only for a name the caller
-- already knows: it cannot list namespaces.
CREATE OR REPLACE FUNCTION memstore.find_namespace(p_name text)
RETURNS bigint
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ns.id FROM memstore.namespaces ns WHERE ns.name = p_name;
$$;

REVOKE ALL ON FUNCTION memstore.find_namespace(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.find_namespace(text) TO CURRENT_USER;
