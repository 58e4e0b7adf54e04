"""Tags on memories: nodes.tags (text[], set at insert, GIN-indexed) and what reads them.

- memstore.nodes gains ``tags text[] NOT NULL DEFAULT '{}'`` (at most 32, no
  NULL element; the API normalises them: memstore.models.normalise_tags) and
  the GIN index ix_nodes_tags for the filters (tags @> ARRAY[...]). Nodes stay
  append-only: the guard (sql/01) compares whole rows, so an UPDATE of tags is
  refused like any other.
- memstore.node_rows() (working memory's rows) returns tags as well; its row
  type changes, so it is dropped and created again.
- Erasure blanks tags: memstore.erasure_of('nodes', ...) and
  memstore.erase_versions() set them to '{}' (a tag is the caller's words).
- v_current_nodes shows tags (a last column); v_tag_counts counts the current
  memories carrying each tag, per namespace.

Frozen copies of those definitions as sql/03_redaction.sql, sql/05_neighbourhood.sql
and sql/06_views.sql give them at this revision, and of the previous ones (for the
downgrade).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0022"
down_revision: str | Sequence[str] | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NODE_ROWS = "memstore.node_rows(bigint, bigint[])"

# sql/03_redaction.sql: erasure_of() and erase_versions() (CREATE OR REPLACE
# keeps their owner and grants)
ERASURE_SQL = r"""
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
"""

# sql/05_neighbourhood.sql: node_rows()
NODE_ROWS_SQL = r"""
CREATE OR REPLACE FUNCTION memstore.node_rows(p_ns bigint, p_ids bigint[])
RETURNS TABLE (
    id bigint, kind text, node_type text, tier text, layer smallint, label text,
    content text, data jsonb, importance real, confidence real, decay_rate real,
    privacy smallint, protected boolean, subject text, scope text, source text,
    actor text, run_id text, observed_at timestamptz, valid_from timestamptz,
    valid_to timestamptz, recorded_at timestamptz,
    superseded_by bigint, tombstoned boolean, redacted boolean, tags text[]
)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT n.id, n.kind, n.node_type, n.tier, n.layer, n.label, n.content, n.data,
           n.importance, n.confidence, n.decay_rate, n.privacy, n.protected, n.subject,
           n.scope, n.source, n.actor, n.run_id, n.observed_at, n.valid_from, n.valid_to,
           n.recorded_at,
           (SELECT s.new_id FROM memstore.supersessions s
            WHERE s.namespace_id = p_ns AND s.old_id = n.id),
           (SELECT t.id FROM memstore.tombstones t
            WHERE t.namespace_id = p_ns AND t.node_id = n.id) IS NOT NULL,
           (SELECT r.id FROM memstore.redactions r
            WHERE r.namespace_id = p_ns AND r.node_id = n.id) IS NOT NULL,
           n.tags
    FROM memstore.nodes n
    WHERE n.namespace_id = p_ns AND n.id = ANY (p_ids);
END;
$$;
"""

# sql/06_views.sql: v_current_nodes (tags appended: CREATE OR REPLACE may add
# a last column) and v_tag_counts
VIEWS_SQL = r"""
CREATE OR REPLACE VIEW memstore.v_current_nodes WITH (security_invoker = true) AS
SELECT n.namespace_id, n.id, n.kind, n.node_type, n.tier, n.layer, n.label, n.content,
       n.data, n.importance, n.confidence, n.decay_rate, n.privacy, n.protected, n.subject,
       n.scope, n.source, n.actor, n.run_id, n.observed_at, n.valid_from, n.valid_to,
       n.recorded_at, n.tags
FROM memstore.nodes n
WHERE NOT EXISTS (SELECT 1 FROM memstore.supersessions s
                  WHERE s.namespace_id = n.namespace_id AND s.old_id = n.id)
  AND NOT EXISTS (SELECT 1 FROM memstore.tombstones t
                  WHERE t.namespace_id = n.namespace_id AND t.node_id = n.id)
  AND NOT EXISTS (SELECT 1 FROM memstore.redactions r
                  WHERE r.namespace_id = n.namespace_id AND r.node_id = n.id);

CREATE OR REPLACE VIEW memstore.v_tag_counts WITH (security_invoker = true) AS
SELECT c.namespace_id, t.tag, count(*) AS current_nodes
FROM memstore.v_current_nodes c
CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
GROUP BY c.namespace_id, t.tag;
"""

# revision 0017's erasure_of() and 0020's erase_versions()
ERASURE_0020_SQL = r"""
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
"""

# revision 0014's node_rows()
NODE_ROWS_0014_SQL = r"""
CREATE OR REPLACE FUNCTION memstore.node_rows(p_ns bigint, p_ids bigint[])
RETURNS TABLE (
    id bigint, kind text, node_type text, tier text, layer smallint, label text,
    content text, data jsonb, importance real, confidence real, decay_rate real,
    privacy smallint, protected boolean, subject text, scope text, source text,
    actor text, run_id text, observed_at timestamptz, valid_from timestamptz,
    valid_to timestamptz, recorded_at timestamptz,
    superseded_by bigint, tombstoned boolean, redacted boolean
)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT n.id, n.kind, n.node_type, n.tier, n.layer, n.label, n.content, n.data,
           n.importance, n.confidence, n.decay_rate, n.privacy, n.protected, n.subject,
           n.scope, n.source, n.actor, n.run_id, n.observed_at, n.valid_from, n.valid_to,
           n.recorded_at,
           (SELECT s.new_id FROM memstore.supersessions s
            WHERE s.namespace_id = p_ns AND s.old_id = n.id),
           (SELECT t.id FROM memstore.tombstones t
            WHERE t.namespace_id = p_ns AND t.node_id = n.id) IS NOT NULL,
           (SELECT r.id FROM memstore.redactions r
            WHERE r.namespace_id = p_ns AND r.node_id = n.id) IS NOT NULL
    FROM memstore.nodes n
    WHERE n.namespace_id = p_ns AND n.id = ANY (p_ids);
END;
$$;
"""

# revision 0009's v_current_nodes. A view cannot lose a column in place: it is
# created again, with the privileges it had (memstore db roles grants them).
VIEW_0009_SQL = r"""
DO $do$
DECLARE
    granted record;
    kept aclitem[] := (SELECT c.relacl FROM pg_class c
                       WHERE c.oid = 'memstore.v_current_nodes'::regclass);
    view_owner oid := (SELECT c.relowner FROM pg_class c
                  WHERE c.oid = 'memstore.v_current_nodes'::regclass);
BEGIN
    DROP VIEW memstore.v_current_nodes;
    CREATE OR REPLACE VIEW memstore.v_current_nodes WITH (security_invoker = true) AS
    SELECT n.namespace_id, n.id, n.kind, n.node_type, n.tier, n.layer, n.label, n.content,
           n.data, n.importance, n.confidence, n.decay_rate, n.privacy, n.protected, n.subject,
           n.scope, n.source, n.actor, n.run_id, n.observed_at, n.valid_from, n.valid_to,
           n.recorded_at
    FROM memstore.nodes n
    WHERE NOT EXISTS (SELECT 1 FROM memstore.supersessions s
                      WHERE s.namespace_id = n.namespace_id AND s.old_id = n.id)
      AND NOT EXISTS (SELECT 1 FROM memstore.tombstones t
                      WHERE t.namespace_id = n.namespace_id AND t.node_id = n.id)
      AND NOT EXISTS (SELECT 1 FROM memstore.redactions r
                      WHERE r.namespace_id = n.namespace_id AND r.node_id = n.id);
    FOR granted IN
        SELECT a.privilege_type, a.grantee FROM aclexplode(kept) AS a WHERE a.grantee <> view_owner
    LOOP
        EXECUTE format('GRANT %s ON memstore.v_current_nodes TO %s', granted.privilege_type,
                       CASE WHEN granted.grantee = 0 THEN 'PUBLIC'
                            ELSE quote_ident(pg_get_userbyid(granted.grantee)) END);
    END LOOP;
END;
$do$;
"""


def upgrade() -> None:
    op.add_column(
        "nodes",
        sa.Column(
            "tags",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'::text[]"),
            nullable=False,
        ),
        schema="memstore",
    )
    op.create_check_constraint(
        op.f("ck_nodes_tags_bounded"),
        "nodes",
        "cardinality(tags) <= 32 AND array_position(tags, NULL) IS NULL",
        schema="memstore",
    )
    op.create_index("ix_nodes_tags", "nodes", ["tags"], schema="memstore", postgresql_using="gin")
    op.execute(f"DROP FUNCTION {NODE_ROWS}")
    op.execute(NODE_ROWS_SQL)
    op.execute(ERASURE_SQL)
    op.execute(VIEWS_SQL)


def downgrade() -> None:
    op.execute("DROP VIEW memstore.v_tag_counts")
    op.execute(VIEW_0009_SQL)
    op.execute(ERASURE_0020_SQL)
    op.execute(f"DROP FUNCTION {NODE_ROWS}")
    op.execute(NODE_ROWS_0014_SQL)
    op.drop_index("ix_nodes_tags", table_name="nodes", schema="memstore")
    op.drop_constraint("ck_nodes_tags_bounded", "nodes", schema="memstore")
    op.drop_column("nodes", "tags", schema="memstore")
