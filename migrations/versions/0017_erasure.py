"""Erasure that leaves nothing behind: whole lineages, every field with the caller's words, keyed hashes.

memstore.redact_lineage(ns, node, reason, actor, all_versions) erases a memory:
every version of its lineage (or one), and with it every field that carried
the caller's words: the nodes' content, label, data, subject, scope, tier and
node type (source, actor, run id become keyed hashes), the vectors, the edges
touching them (relation, provenance), the reasons of their tombstones and
supersessions, the operations and proposals that name them (their texts), and
the session ids of the sessions that activated them. The redactions row keeps
an HMAC-SHA256 of the erased content under a per-namespace key (the new table
memstore.erasure_keys, readable only by memstore_redactor and the owner)
instead of a plain sha256, which let anyone confirm a guess of the erased text;
the plain hashes already stored are cleared, and the erasures made before this
revision (content, label and data only) are completed.

The append-only guards of nodes, edges, tombstones, supersessions, operations,
activations and proposals let exactly these UPDATEs through, and only as
memstore_redactor. memstore.redact_node(ns, node, reason, actor), revision
0016's function, stays: a wrapper erasing one version, for code of that
revision while a deploy replaces it.

Frozen copies of sql/03_redaction.sql and of the changed parts of
sql/01_append_only.sql and sql/02_lineage.sql as they are at this revision.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/03_redaction.sql
REDACTION_SQL = r"""
-- Audited erasure: the only way content leaves memstore (docs/security.md, "Erasure").
--
-- memstore.redact_lineage erases a memory: every version of its lineage (or
-- one version), and every field anywhere in schema memstore that carried the
-- caller's words about it:
--
--   nodes          content '', label/data/subject/scope/tier blanked, node_type
--                  'Redacted', content hash cleared (the full-text column
--                  follows); source, actor and run_id become keyed hashes
--   embeddings     deleted
--   edges          touching an erased version: relation 'redacted'; source,
--                  actor, run_id keyed hashes
--   tombstones     of an erased version or of such an edge: reason 'redacted',
--                  actor a keyed hash
--   supersessions  to or from an erased version: reason 'redacted', actor a
--                  keyed hash
--   operations     naming an erased version, such an edge or such a proposal
--                  (payload or receipt): every text in payload and receipt
--                  'redacted', free-form data/changes dropped, reason cleared,
--                  actor a keyed hash
--   proposals      whose operation names one, or whose acceptance wrote one:
--                  operation and evidence texts 'redacted', rationale and decision
--                  reason cleared, proposer/decider keyed hashes; a pending one
--                  is rejected
--   activations    the session id of every activation of a session that
--                  activated an erased version becomes a keyed hash (one
--                  value for the whole session, so sessions still group)
--
-- and writes one redactions row per newly erased version: who, why, when,
-- and a keyed hash of the erased content. The rows, their ids, edges,
-- tombstones and lineage stay.
--
-- Keyed hashes: HMAC-SHA256 with a per-namespace key of memstore.erasure_keys
-- (64 bytes from four gen_random_uuid() values, 488 random bits from
-- PostgreSQL's strong random source; stored as the HMAC inner and outer
-- pads). Only memstore_redactor
-- and the owner can read it, so nobody else can confirm a guess of an erased
-- value; who holds the key can (that is what the hash is for: audit).
--
-- The UPDATEs pass the append-only guards (sql/01, sql/02) because they run as
-- memstore_redactor (SECURITY DEFINER), a role nobody logs in as, and only
-- when they write exactly these values: the guards check current_user, which no
-- setting an ordinary session can make can change, and recompute every value.

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
GRANT SELECT, UPDATE ON memstore.edges, memstore.tombstones, memstore.supersessions,
    memstore.operations, memstore.proposals, memstore.activations TO memstore_redactor;
GRANT SELECT, INSERT ON memstore.erasure_keys TO memstore_redactor;

-- The keys: one per namespace, drawn on its first erasure, never changed.
-- Row-level security as for every table (sql/07_row_security.sql).
ALTER TABLE memstore.erasure_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.erasure_keys
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.erasure_keys
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'erasure keys are never changed: the keyed hashes of past erasures depend on them');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.erasure_keys
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'erasure keys are never changed: the keyed hashes of past erasures depend on them');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.erasure_keys
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'erasure keys are never changed: the keyed hashes of past erasures depend on them');

-- HMAC-SHA256 (RFC 2104) of p_value under namespace p_ns's key; NULL when the
-- namespace has no key yet. pgcrypto's hmac() is not on every server (the
-- embedded one lacks it); with the pads stored, HMAC is two sha256() calls.
CREATE OR REPLACE FUNCTION memstore.erasure_digest(p_ns bigint, p_value bytea)
RETURNS bytea
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sha256(k.outer_pad || sha256(k.inner_pad || p_value))
    FROM memstore.erasure_keys k
    WHERE k.namespace_id = p_ns
$$;

-- What an erased identifier becomes: 'erased:' and the hex HMAC of the value.
-- A value already of that form is kept, so erasing twice changes nothing.
CREATE OR REPLACE FUNCTION memstore.erased_text(p_ns bigint, p_value text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p_value IS NULL OR p_value ~ '^erased:[0-9a-f]{64}$' THEN p_value
                ELSE 'erased:' || encode(
                    memstore.erasure_digest(p_ns, convert_to(p_value, 'UTF8')), 'hex') END
$$;

-- The key is secret: only the redactor (and the owner) may compute with it.
REVOKE ALL ON FUNCTION memstore.erasure_digest(bigint, bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION memstore.erased_text(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.erasure_digest(bigint, bytea) TO memstore_redactor;
GRANT EXECUTE ON FUNCTION memstore.erased_text(bigint, text) TO memstore_redactor;

-- A JSON document (an operation, a receipt, evidence) with its words taken
-- out: every string becomes "redacted", and the free-form objects (data,
-- changes) become {}, keys included. Numbers (ids, weights), booleans and the
-- shape stay, so what reads the row still finds the types it expects, and so
-- do the three strings memstore itself writes, not the caller: an "op" name
-- (lower-case letters and _), an "outcome" (accepted/rejected) and a "target"
-- (node/edge).
CREATE OR REPLACE FUNCTION memstore.erased_json(p_doc jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE jsonb_typeof(p_doc)
        WHEN 'string' THEN '"redacted"'::jsonb
        WHEN 'object' THEN (
            SELECT coalesce(jsonb_object_agg(
                       e.key,
                       CASE WHEN e.key IN ('data', 'changes') THEN '{}'::jsonb
                            WHEN jsonb_typeof(e.value) = 'string'
                                 AND ((e.key = 'op' AND e.value #>> '{}' ~ '^[a-z][a-z_]{0,63}$')
                                      OR (e.key = 'outcome'
                                          AND e.value #>> '{}' IN ('accepted', 'rejected'))
                                      OR (e.key = 'target'
                                          AND e.value #>> '{}' IN ('node', 'edge')))
                                 THEN e.value
                            ELSE memstore.erased_json(e.value) END), '{}'::jsonb)
            FROM jsonb_each(p_doc) AS e)
        WHEN 'array' THEN (
            SELECT coalesce(jsonb_agg(memstore.erased_json(a.value) ORDER BY a.n), '[]'::jsonb)
            FROM jsonb_array_elements(p_doc) WITH ORDINALITY AS a(value, n))
        ELSE p_doc END
$$;

-- The ids a JSON document (an operation, a receipt) names: p_edges false, the
-- nodes (node_id, target_id of a node, src, dst, incubation_id, ids, sources,
-- nodes, accounted); true, the edges (edges, target_id of an edge); at any depth.
CREATE OR REPLACE FUNCTION memstore.named_ids(p_doc jsonb, p_edges boolean)
RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(DISTINCT v.value::text::bigint), '{}')
    FROM jsonb_path_query(p_doc, 'strict $.** ? (@.type() == "object")') AS o(obj)
    CROSS JOIN LATERAL jsonb_each(o.obj) AS e(key, value)
    CROSS JOIN LATERAL (
        SELECT e.value WHERE jsonb_typeof(e.value) = 'number'
        UNION ALL
        SELECT a.value FROM jsonb_array_elements(
            CASE WHEN jsonb_typeof(e.value) = 'array' THEN e.value ELSE '[]' END) AS a(value)
        WHERE jsonb_typeof(a.value) = 'number') AS v(value)
    WHERE v.value::text ~ '^[0-9]{1,18}$'
      AND CASE WHEN p_edges
               THEN e.key = 'edges'
                    OR (e.key = 'target_id' AND o.obj->>'target' = 'edge')
               ELSE e.key IN ('node_id', 'src', 'dst', 'incubation_id', 'ids', 'sources',
                              'nodes', 'accounted')
                    OR (e.key = 'target_id' AND coalesce(o.obj->>'target', 'node') = 'node') END
$$;

-- What the erasure of a row of p_table writes over p_old (a row as jsonb):
-- the changed columns and their values. The guards allow exactly this.
CREATE OR REPLACE FUNCTION memstore.erasure_of(p_table text, p_old jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ns bigint := (p_old->>'namespace_id')::bigint;
BEGIN
    CASE p_table
    WHEN 'nodes' THEN
        RETURN jsonb_build_object(
            'content', '', 'label', NULL, 'data', '{}'::jsonb, 'content_hash', NULL,
            'subject', NULL, 'scope', NULL, 'tier', NULL, 'node_type', 'Redacted',
            'source', memstore.erased_text(ns, p_old->>'source'),
            'actor', memstore.erased_text(ns, p_old->>'actor'),
            'run_id', memstore.erased_text(ns, p_old->>'run_id'));
    WHEN 'edges' THEN
        RETURN jsonb_build_object(
            'relation', 'redacted',
            'source', memstore.erased_text(ns, p_old->>'source'),
            'actor', memstore.erased_text(ns, p_old->>'actor'),
            'run_id', memstore.erased_text(ns, p_old->>'run_id'));
    WHEN 'tombstones', 'supersessions' THEN
        RETURN jsonb_build_object(
            'reason', 'redacted', 'actor', memstore.erased_text(ns, p_old->>'actor'));
    WHEN 'operations' THEN
        RETURN jsonb_build_object(
            'payload', memstore.erased_json(p_old->'payload'),
            'receipt', memstore.erased_json(p_old->'receipt'),
            'reason', NULL, 'actor', memstore.erased_text(ns, p_old->>'actor'));
    WHEN 'proposals' THEN
        RETURN jsonb_build_object(
            'operation', memstore.erased_json(p_old->'operation'),
            'evidence', memstore.erased_json(p_old->'evidence'),
            'rationale', NULL,
            'proposed_by', memstore.erased_text(ns, p_old->>'proposed_by'));
    WHEN 'activations' THEN
        RETURN jsonb_build_object(
            'session_id', memstore.erased_text(ns, p_old->>'session_id'));
    ELSE
        RETURN NULL;
    END CASE;
END;
$$;

REVOKE ALL ON FUNCTION memstore.erasure_of(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.erasure_of(text, jsonb) TO memstore_redactor;

-- The key of namespace p_ns, drawn (64 random bytes, stored as the HMAC
-- pads) if it has none yet.
CREATE OR REPLACE FUNCTION memstore.draw_erasure_key(p_ns bigint)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    new_key bytea;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM memstore.erasure_keys k WHERE k.namespace_id = p_ns)
    THEN
        new_key := decode(replace(gen_random_uuid()::text || gen_random_uuid()::text
                              || gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
                      'hex');
        INSERT INTO memstore.erasure_keys (namespace_id, inner_pad, outer_pad)
        SELECT p_ns,
               string_agg(set_byte('\x00'::bytea, 0, get_byte(new_key, i) # 54), ''::bytea ORDER BY i),
               string_agg(set_byte('\x00'::bytea, 0, get_byte(new_key, i) # 92), ''::bytea ORDER BY i)
        FROM generate_series(0, 63) AS i
        ON CONFLICT DO NOTHING;
    END IF;
END;
$$;

-- Erase versions p_versions of namespace p_ns, and everything around them that
-- carried the caller's words (the table at the top of this file); p_actor
-- decides the pending proposals it rejects. Writes no redactions row: that is
-- redact_lineage's (and revision 0017's completion of older erasures). Every
-- UPDATE is idempotent: erasing twice writes the same values.
CREATE OR REPLACE FUNCTION memstore.erase_versions(
    p_ns bigint, p_versions bigint[], p_actor text
) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    edge_ids bigint[];
    id_pattern text;
    named_ops bigint[];
    named_proposals bigint[];
BEGIN
    PERFORM memstore.draw_erasure_key(p_ns);
    UPDATE memstore.nodes n
    SET content = '', label = NULL, data = '{}'::jsonb, content_hash = NULL,
        subject = NULL, scope = NULL, tier = NULL, node_type = 'Redacted',
        source = memstore.erased_text(p_ns, n.source),
        actor = memstore.erased_text(p_ns, n.actor),
        run_id = memstore.erased_text(p_ns, n.run_id)
    WHERE n.namespace_id = p_ns AND n.id = ANY (p_versions);

    DELETE FROM memstore.embeddings e
    WHERE e.namespace_id = p_ns AND e.node_id = ANY (p_versions);

    WITH touched AS (
        UPDATE memstore.edges e
        SET relation = 'redacted',
            source = memstore.erased_text(p_ns, e.source),
            actor = memstore.erased_text(p_ns, e.actor),
            run_id = memstore.erased_text(p_ns, e.run_id)
        WHERE e.namespace_id = p_ns
          AND (e.src = ANY (p_versions) OR e.dst = ANY (p_versions))
        RETURNING e.id)
    SELECT coalesce(array_agg(t.id), '{}') INTO edge_ids FROM touched t;

    UPDATE memstore.tombstones t
    SET reason = 'redacted', actor = memstore.erased_text(p_ns, t.actor)
    WHERE t.namespace_id = p_ns
      AND (t.node_id = ANY (p_versions) OR t.edge_id = ANY (edge_ids));

    UPDATE memstore.supersessions s
    SET reason = 'redacted', actor = memstore.erased_text(p_ns, s.actor)
    WHERE s.namespace_id = p_ns
      AND (s.old_id = ANY (p_versions) OR s.new_id = ANY (p_versions));

    -- The audit log and the review queue: rows that name an erased version
    -- or edge, and the proposals behind them (a proposal whose acceptance
    -- wrote a version), with the operations that queued or decided those.
    -- A regular expression over the row's text finds the few candidates
    -- (12 us a row; named_ids() costs 0.4 ms, so it checks only those).
    id_pattern := '(^|[^0-9.])(' || array_to_string(p_versions || edge_ids, '|')
                  || ')($|[^0-9.])';
    WITH candidates AS MATERIALIZED (
        SELECT o.id, o.payload, o.receipt FROM memstore.operations o
        WHERE o.namespace_id = p_ns
          AND (o.payload::text || ' ' || o.receipt::text) ~ id_pattern)
    SELECT coalesce(array_agg(c.id), '{}'),
           coalesce(array_agg((c.receipt->>'proposal_id')::bigint)
                    FILTER (WHERE jsonb_typeof(c.receipt->'proposal_id') = 'number'), '{}')
    INTO named_ops, named_proposals
    FROM candidates c
    WHERE memstore.named_ids(c.payload, false) && p_versions
       OR memstore.named_ids(c.receipt, false) && p_versions
       OR memstore.named_ids(c.payload, true) && edge_ids
       OR memstore.named_ids(c.receipt, true) && edge_ids;

    WITH candidates AS MATERIALIZED (
        SELECT pr.id, pr.operation FROM memstore.proposals pr
        WHERE pr.namespace_id = p_ns AND pr.operation::text ~ id_pattern)
    SELECT named_proposals || coalesce(array_agg(c.id), '{}') INTO named_proposals
    FROM candidates c
    WHERE memstore.named_ids(c.operation, false) && p_versions
       OR memstore.named_ids(c.operation, true) && edge_ids;

    IF cardinality(named_proposals) > 0 THEN
        SELECT named_ops || coalesce(array_agg(o.id), '{}') INTO named_ops
        FROM memstore.operations o
        WHERE o.namespace_id = p_ns
          AND ((jsonb_typeof(o.receipt->'proposal_id') = 'number'
                AND (o.receipt->>'proposal_id')::bigint = ANY (named_proposals))
               OR (jsonb_typeof(o.payload->'proposal_id') = 'number'
                   AND (o.payload->>'proposal_id')::bigint = ANY (named_proposals)));
    END IF;

    UPDATE memstore.operations o
    SET payload = memstore.erased_json(o.payload),
        receipt = memstore.erased_json(o.receipt),
        reason = NULL,
        actor = memstore.erased_text(p_ns, o.actor)
    WHERE o.namespace_id = p_ns AND o.id = ANY (named_ops);

    UPDATE memstore.proposals pr
    SET operation = memstore.erased_json(pr.operation),
        evidence = memstore.erased_json(pr.evidence),
        rationale = NULL,
        proposed_by = memstore.erased_text(p_ns, pr.proposed_by),
        status = CASE WHEN pr.status = 'pending' THEN 'rejected' ELSE pr.status END,
        decided_by = CASE WHEN pr.status = 'pending' THEN p_actor
                          ELSE memstore.erased_text(p_ns, pr.decided_by) END,
        decision_reason = CASE WHEN pr.status = 'pending' THEN 'erased by a redaction' END
    WHERE pr.namespace_id = p_ns AND pr.id = ANY (named_proposals);

    UPDATE memstore.activations a
    SET session_id = memstore.erased_text(p_ns, a.session_id)
    WHERE a.namespace_id = p_ns
      AND a.session_id IN (SELECT s.session_id FROM memstore.activations s
                           WHERE s.namespace_id = p_ns
                             AND s.node_id = ANY (p_versions) AND s.session_id IS NOT NULL);
END;
$$;

-- Erase the memory p_node_id of namespace p_namespace_id: with p_all_versions
-- every version of its lineage (its ancestors and descendants, as
-- Namespace.lineage lists them), else that version alone. Returns the versions
-- erased by this call and their redactions rows. Refused (MS005) without a
-- reason and an actor, for a node the declared namespace and privacy ceiling do
-- not show, and when every version to erase is already redacted. Versions above
-- the caller's privacy ceiling are erased too (the lineage is erased whole), and
-- a version redacted before (by revision 0016's redact_node, which blanked less)
-- is erased again without a second redactions row.
CREATE OR REPLACE FUNCTION memstore.redact_lineage(
    p_namespace_id bigint,
    p_node_id bigint,
    p_reason text,
    p_actor text,
    p_all_versions boolean
) RETURNS TABLE (node_id bigint, redaction_id bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller_ceiling text := current_setting('memstore.privacy_ceiling', true);
    versions bigint[];
    locked bigint[];
    seen bigint;
    fresh bigint[];
BEGIN
    IF p_reason IS NULL OR btrim(p_reason) = '' OR p_actor IS NULL OR btrim(p_actor) = '' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS005',
            MESSAGE = 'a redaction needs a reason and an actor',
            TABLE = 'redactions';
    END IF;
    -- The node as the caller may see it (namespace and privacy ceiling).
    PERFORM 1 FROM memstore.nodes n
    WHERE n.namespace_id = p_namespace_id AND n.id = p_node_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS005',
            MESSAGE = format('node %s does not exist in namespace %s', p_node_id, p_namespace_id),
            TABLE = 'nodes';
    END IF;
    -- Every version is erased, whatever its privacy; the caller's ceiling
    -- comes back before returning (and with a rollback, as any setting).
    PERFORM set_config('memstore.privacy_ceiling', '3', true);

    -- The versions, locked; again until no version appeared meanwhile.
    locked := '{}';
    LOOP
        IF p_all_versions THEN
            WITH RECURSIVE back(id) AS (
                SELECT p_node_id
                UNION
                SELECT s.old_id FROM memstore.supersessions s JOIN back b ON s.new_id = b.id
                WHERE s.namespace_id = p_namespace_id
            ), forward(id) AS (
                SELECT p_node_id
                UNION
                SELECT s.new_id FROM memstore.supersessions s JOIN forward f ON s.old_id = f.id
                WHERE s.namespace_id = p_namespace_id
            )
            SELECT array_agg(DISTINCT u.id ORDER BY u.id) INTO versions
            FROM (SELECT id FROM back UNION SELECT id FROM forward) AS u;
        ELSE
            versions := ARRAY[p_node_id];
        END IF;
        EXIT WHEN versions <@ locked;
        PERFORM 1 FROM memstore.nodes n
        WHERE n.namespace_id = p_namespace_id AND n.id = ANY (versions)
        ORDER BY n.id
        FOR UPDATE;
        GET DIAGNOSTICS seen = ROW_COUNT;
        -- Every version has a row (a foreign key); one not seen is hidden by
        -- the ceiling, where the setting above does not reach (the shards of a
        -- distributed PostgreSQL): refuse rather than erase part of a memory.
        IF seen < cardinality(versions) THEN
            RAISE EXCEPTION USING
                ERRCODE = 'MS005',
                MESSAGE = format('node %s has versions above the declared privacy ceiling:'
                                 ' declare ceiling 3 to erase the whole memory', p_node_id),
                TABLE = 'nodes';
        END IF;
        locked := locked || versions;
    END LOOP;

    SELECT coalesce(array_agg(v.id ORDER BY v.id), '{}') INTO fresh
    FROM unnest(versions) AS v(id)
    WHERE NOT EXISTS (SELECT 1 FROM memstore.redactions r
                      WHERE r.namespace_id = p_namespace_id AND r.node_id = v.id);
    IF cardinality(fresh) = 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS005',
            MESSAGE = CASE WHEN p_all_versions
                           THEN format('node %s is already redacted, with every version', p_node_id)
                           ELSE format('node %s is already redacted', p_node_id) END,
            TABLE = 'redactions';
    END IF;

    PERFORM memstore.draw_erasure_key(p_namespace_id);
    -- The records first, while the content is there to be hashed.
    RETURN QUERY
    INSERT INTO memstore.redactions AS r (namespace_id, node_id, reason, actor, content_hash)
    SELECT p_namespace_id, n.id, p_reason, p_actor,
           memstore.erasure_digest(p_namespace_id, convert_to(n.content, 'UTF8'))
    FROM memstore.nodes n
    WHERE n.namespace_id = p_namespace_id AND n.id = ANY (fresh)
    ORDER BY n.id
    RETURNING r.node_id, r.id;

    PERFORM memstore.erase_versions(p_namespace_id, versions, p_actor);

    PERFORM set_config('memstore.privacy_ceiling', coalesce(caller_ceiling, ''), true);
END;
$$;

-- Revision 0016's erasure, for its code while a deploy replaces it: one
-- version, erased as completely as redact_lineage erases; returns the id of
-- its redactions row.
CREATE OR REPLACE FUNCTION memstore.redact_node(
    p_namespace_id bigint,
    p_node_id bigint,
    p_reason text,
    p_actor text
) RETURNS bigint
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.redaction_id
    FROM memstore.redact_lineage(p_namespace_id, p_node_id, p_reason, p_actor, false) AS r
$$;

-- Erasure is not for everyone who can connect: the migrating role may call it,
-- and grants it to the application role (docs/security.md). Grants first:
-- after the owner changes, a non-superuser migrating role could not grant.
REVOKE ALL ON FUNCTION memstore.draw_erasure_key(bigint) FROM PUBLIC;
ALTER FUNCTION memstore.draw_erasure_key(bigint) OWNER TO memstore_redactor;
REVOKE ALL ON FUNCTION memstore.erase_versions(bigint, bigint[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.erase_versions(bigint, bigint[], text) TO CURRENT_USER;
ALTER FUNCTION memstore.erase_versions(bigint, bigint[], text) OWNER TO memstore_redactor;
REVOKE ALL ON FUNCTION memstore.redact_lineage(bigint, bigint, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.redact_lineage(bigint, bigint, text, text, boolean)
    TO CURRENT_USER;
ALTER FUNCTION memstore.redact_lineage(bigint, bigint, text, text, boolean)
    OWNER TO memstore_redactor;
REVOKE ALL ON FUNCTION memstore.redact_node(bigint, bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.redact_node(bigint, bigint, text, text) TO CURRENT_USER;
ALTER FUNCTION memstore.redact_node(bigint, bigint, text, text) OWNER TO memstore_redactor;
"""

# sql/01_append_only.sql: guard_node_update(), refuse_unless_erasing() and the
# UPDATE triggers that use it; sql/02_lineage.sql: guard_proposal_update()
GUARDS_SQL = r"""
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

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.edges
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'edges',
        'edges are append-only: link a new edge; forget writes a tombstone; learned weights live in edge_state');
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'tombstones',
        'tombstones are append-only: a tombstone is never lifted; read with tombstoned items included instead');
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'supersessions',
        'supersessions are append-only: revise the current version to write a newer one');
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.operations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'operations',
        'operations are append-only: the audit log is never rewritten; record a new operation');
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_unless_erasing(
        'activations',
        'activations are append-only: the access log is never rewritten; learned numbers live in node_state');

-- proposals: status moves pending -> accepted | rejected, once; nothing else
-- about a proposal changes, and a proposal is never deleted. The one exception
-- is the audited erasure (memstore.redact_lineage, running as
-- memstore_redactor): it writes what memstore.erasure_of says, rejects a
-- pending proposal and erases a decided one's decision.
CREATE OR REPLACE FUNCTION memstore.guard_proposal_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'memstore_redactor' THEN
        IF to_jsonb(NEW) - ARRAY['status', 'decided_by', 'decided_at', 'decision_reason']
           = (to_jsonb(OLD) - ARRAY['status', 'decided_by', 'decided_at', 'decision_reason'])
             || memstore.erasure_of('proposals', to_jsonb(OLD))
           AND ((OLD.status = 'pending' AND NEW.status = 'rejected')
                OR (OLD.status <> 'pending' AND NEW.status = OLD.status
                    AND NEW.decided_at = OLD.decided_at AND NEW.decision_reason IS NULL
                    AND NEW.decided_by IS NOT DISTINCT FROM
                        memstore.erased_text(OLD.namespace_id, OLD.decided_by)))
        THEN
            NEW.decided_at := coalesce(NEW.decided_at, now());
            RETURN NEW;
        END IF;
    END IF;
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
"""

# The redactions rows written before this revision hold a plain sha256 of the
# erased content: cleared (the table refuses UPDATE, even to its owner, while
# its trigger is enabled).
CLEAR_PLAIN_HASHES_SQL = r"""
ALTER TABLE memstore.redactions DISABLE TRIGGER no_update;
UPDATE memstore.redactions SET content_hash = NULL WHERE content_hash IS NOT NULL;
ALTER TABLE memstore.redactions ENABLE TRIGGER no_update;
"""

# Erasures made before this revision blanked content, label and data only:
# each redacted version is erased again, completely (its subject, scope,
# provenance, edges, reasons, log entries, proposals, sessions). No new
# redactions rows; pending proposals about them are rejected by this migration.
COMPLETE_OLD_ERASURES_SQL = r"""
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT d.namespace_id, array_agg(d.node_id ORDER BY d.node_id) AS ids
             FROM memstore.redactions d GROUP BY d.namespace_id ORDER BY d.namespace_id
    LOOP
        -- erase_versions runs as memstore_redactor, which row-level security
        -- confines to the declared namespace.
        PERFORM set_config('memstore.namespace_id', r.namespace_id::text, true);
        PERFORM set_config('memstore.privacy_ceiling', '3', true);
        PERFORM memstore.erase_versions(r.namespace_id, r.ids, 'memstore migration 0017');
    END LOOP;
    PERFORM set_config('memstore.namespace_id', '', true);
    PERFORM set_config('memstore.privacy_ceiling', '', true);
END;
$$;
"""

# The same parts as revision 0016 had them (sql/01, sql/02, sql/03 of 0002).
PREVIOUS_SQL = r"""
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

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.edges
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'edges are append-only: link a new edge; forget writes a tombstone; learned weights live in edge_state');
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'tombstones are append-only: a tombstone is never lifted; read with tombstoned items included instead');
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'supersessions are append-only: revise the current version to write a newer one');
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.operations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'operations are append-only: the audit log is never rewritten; record a new operation');
CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'activations are append-only: the access log is never rewritten; learned numbers live in node_state');

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
"""

# redact_node() already exists, owned by memstore_redactor: the GRANT to the
# migrating role above adds an entry that creating it afresh (sql/03 on an empty
# database) folds into the owner's. Dropped again, so both agree; the migrating
# role runs it as a member of memstore_redactor, and memstore_app's grant stays.
REDACT_NODE_GRANT_SQL = """
REVOKE EXECUTE ON FUNCTION memstore.redact_node(bigint, bigint, text, text) FROM CURRENT_USER
"""

DROPPED = (
    "memstore.redact_lineage(bigint, bigint, text, text, boolean)",
    "memstore.erase_versions(bigint, bigint[], text)",
    "memstore.draw_erasure_key(bigint)",
    "memstore.refuse_unless_erasing()",
    "memstore.erasure_of(text, jsonb)",
    "memstore.named_ids(jsonb, boolean)",
    "memstore.erased_json(jsonb)",
    "memstore.erased_text(bigint, text)",
    "memstore.erasure_digest(bigint, bytea)",
)


# Handing a function to memstore_redactor needs that role to have CREATE on the
# schema (PostgreSQL asks it of a new owner); a non-superuser migrating role
# grants it for the hand-over only, as revision 0002 does.
LEND_CREATE = "GRANT CREATE ON SCHEMA memstore TO memstore_redactor"
TAKE_CREATE_BACK = "REVOKE CREATE ON SCHEMA memstore FROM memstore_redactor"


def upgrade() -> None:
    op.create_table(
        "erasure_keys",
        sa.Column("namespace_id", sa.BigInteger(), nullable=False),
        sa.Column("inner_pad", sa.LargeBinary(), nullable=False),
        sa.Column("outer_pad", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            sa.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "octet_length(inner_pad) = 64 AND octet_length(outer_pad) = 64",
            name=op.f("ck_erasure_keys_pads_64_bytes"),
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id"], ["memstore.namespaces.id"], name="fk_erasure_keys_namespace"
        ),
        sa.PrimaryKeyConstraint("namespace_id", name="pk_erasure_keys"),
        schema="memstore",
    )
    op.execute(LEND_CREATE)
    op.execute(REDACTION_SQL)
    op.execute(REDACT_NODE_GRANT_SQL)
    op.execute(TAKE_CREATE_BACK)
    op.execute(GUARDS_SQL)
    op.execute(CLEAR_PLAIN_HASHES_SQL)
    op.execute(COMPLETE_OLD_ERASURES_SQL)


def downgrade() -> None:
    op.execute(LEND_CREATE)
    op.execute(PREVIOUS_SQL)
    op.execute(REDACT_NODE_GRANT_SQL)
    op.execute(TAKE_CREATE_BACK)
    for function in DROPPED:
        op.execute(f"DROP FUNCTION {function}")
    op.execute(
        "REVOKE ALL ON memstore.edges, memstore.tombstones, memstore.supersessions,"
        " memstore.operations, memstore.proposals, memstore.activations FROM memstore_redactor"
    )
    op.drop_table("erasure_keys", schema="memstore")
