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
ALTER FUNCTION memstore.redact_node(bigint, bigint, text, text) OWNER TO memstore_redactor;
