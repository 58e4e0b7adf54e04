-- Audited erasure: the only way content leaves memstore (docs/security.md, "Erasure").
--
-- memstore.redact_lineage erases a memory: every version of its lineage (or
-- one version), and every field anywhere in schema memstore that carried the
-- caller's words about it:
--
--   nodes          content '', label/data/subject/scope/tier/tags blanked, node_type
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
            'tags', '[]'::jsonb,
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
    needles text[];
BEGIN
    PERFORM memstore.draw_erasure_key(p_ns);
    -- What quotes the erased words without naming a version (an operation the
    -- law rejected, a proposal that would write them): each content, label and
    -- subject as a JSON string, and as the hex sha256 digest the audit log keeps
    -- of a text (memstore/lifecycle/apply.py digest()). Taken before the blanks.
    SELECT coalesce(array_agg(DISTINCT w.needle), '{}') INTO needles
    FROM memstore.nodes n
    CROSS JOIN LATERAL (VALUES (n.content), (n.label), (n.subject)) AS t(value)
    CROSS JOIN LATERAL (VALUES (to_jsonb(t.value)::text),
                               (encode(sha256(convert_to(t.value, 'UTF8')), 'hex'))) AS w(needle)
    WHERE n.namespace_id = p_ns AND n.id = ANY (p_versions)
      AND t.value IS NOT NULL AND t.value <> '';

    UPDATE memstore.nodes n
    SET content = '', label = NULL, data = '{}'::jsonb, content_hash = NULL,
        subject = NULL, scope = NULL, tier = NULL, node_type = 'Redacted', tags = '{}',
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
    -- or edge, or quote its words (the needles above), and the proposals
    -- behind them (a proposal whose acceptance wrote a version), with the
    -- operations that queued or decided those.
    -- A regular expression over the row's text finds the few candidates
    -- (12 us a row; named_ids() costs 0.4 ms, so it checks only those).
    id_pattern := '(^|[^0-9.])(' || array_to_string(p_versions || edge_ids, '|')
                  || ')($|[^0-9.])';
    WITH texts AS MATERIALIZED (
        SELECT o.id, o.payload, o.receipt, o.payload::text || ' ' || o.receipt::text AS doc
        FROM memstore.operations o
        WHERE o.namespace_id = p_ns
    ), candidates AS MATERIALIZED (
        SELECT t.id, t.payload, t.receipt,
               EXISTS (SELECT FROM unnest(needles) AS q(needle)
                       WHERE strpos(t.doc, q.needle) > 0) AS quoting
        FROM texts t
        WHERE t.doc ~ id_pattern
           OR EXISTS (SELECT FROM unnest(needles) AS q(needle) WHERE strpos(t.doc, q.needle) > 0))
    SELECT coalesce(array_agg(c.id), '{}'),
           coalesce(array_agg((c.receipt->>'proposal_id')::bigint)
                    FILTER (WHERE jsonb_typeof(c.receipt->'proposal_id') = 'number'), '{}')
    INTO named_ops, named_proposals
    FROM candidates c
    WHERE c.quoting
       OR memstore.named_ids(c.payload, false) && p_versions
       OR memstore.named_ids(c.receipt, false) && p_versions
       OR memstore.named_ids(c.payload, true) && edge_ids
       OR memstore.named_ids(c.receipt, true) && edge_ids;

    WITH texts AS MATERIALIZED (
        SELECT pr.id, pr.operation, pr.operation::text || ' ' || pr.evidence::text AS doc
        FROM memstore.proposals pr
        WHERE pr.namespace_id = p_ns
    ), candidates AS MATERIALIZED (
        SELECT t.id, t.operation,
               EXISTS (SELECT FROM unnest(needles) AS q(needle)
                       WHERE strpos(t.doc, q.needle) > 0) AS quoting
        FROM texts t
        WHERE t.doc ~ id_pattern
           OR EXISTS (SELECT FROM unnest(needles) AS q(needle) WHERE strpos(t.doc, q.needle) > 0))
    SELECT named_proposals || coalesce(array_agg(c.id), '{}') INTO named_proposals
    FROM candidates c
    WHERE c.quoting
       OR memstore.named_ids(c.operation, false) && p_versions
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

-- Nothing is written about an erased version after its erasure: no vector in
-- the embeddings cache, no row in the access log (activations). Both are
-- written from what a transaction read before: a rebuild reads a node's text,
-- an activation its working memory; an erasure that commits in between would
-- otherwise be followed by a vector of the erased text (with a plain sha256 of
-- it as source_hash) or by the caller's session id in plain on the erased
-- version, after the erasure hashed that session's ids. This trigger locks the
-- node row FOR KEY SHARE, as the foreign key's check would, so it waits for an
-- erasure in flight (redact_lineage locks the versions FOR UPDATE), and then,
-- seeing the committed redactions row, drops the row quietly: what it was
-- computed from is gone. An erasure that starts after the row was written
-- waits on the same lock and then erases it.
-- SECURITY DEFINER: the service role may not lock nodes (no UPDATE on them),
-- and the row may be above the transaction's privacy ceiling.
CREATE OR REPLACE FUNCTION memstore.drop_if_erased() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM 1 FROM memstore.nodes n
    WHERE n.namespace_id = NEW.namespace_id AND n.id = NEW.node_id
    FOR KEY SHARE;
    IF EXISTS (SELECT 1 FROM memstore.redactions r
               WHERE r.namespace_id = NEW.namespace_id AND r.node_id = NEW.node_id) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION memstore.drop_if_erased() FROM PUBLIC;

CREATE OR REPLACE TRIGGER drop_if_erased BEFORE INSERT OR UPDATE ON memstore.embeddings
    FOR EACH ROW EXECUTE FUNCTION memstore.drop_if_erased();
CREATE OR REPLACE TRIGGER drop_if_erased BEFORE INSERT ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.drop_if_erased();
