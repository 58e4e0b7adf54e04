"""Nothing is written about an erased memory after its erasure; an erasure finds the log rows that quote it.

A rebuild (ns.rebuild_embeddings, memstore embed rebuild) reads a node's
text, computes its vector and writes it in the same transaction, but an
erasure committed in between left the vector, and a plain sha256 of the erased
text as its source_hash, in the cache of the erased node; an activation that
logged its working memory after such an erasure left its session id in plain
on the erased version. The trigger drop_if_erased (BEFORE INSERT OR UPDATE on
memstore.embeddings, BEFORE INSERT on memstore.activations) locks the node
row (FOR KEY SHARE, so it waits for an erasure in flight) and drops a row
about a redacted node.

memstore.erase_versions also erases the operations and proposals that quote
an erased version's content, label or subject (as a JSON string, or as the
plain sha256 digest the audit log keeps of a text) without naming it: a
rejected operation that carried the same words, a proposal that would write
them. Before, they kept the words (or their plain digest) after the erasure.

Frozen copies of the trigger and of erase_versions as sql/03_redaction.sql
defines them at this revision, and of erase_versions as revision 0017 left it
(for the downgrade).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/03_redaction.sql: drop_if_erased()
DROP_IF_ERASED_SQL = r"""
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
"""


# sql/03_redaction.sql: erase_versions() (CREATE OR REPLACE keeps its owner,
# memstore_redactor, and its grants)
ERASE_VERSIONS_SQL = r"""
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

# revision 0017's erase_versions()
ERASE_VERSIONS_0017_SQL = r"""
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
"""


def upgrade() -> None:
    op.execute(DROP_IF_ERASED_SQL)
    op.execute(ERASE_VERSIONS_SQL)


def downgrade() -> None:
    op.execute(ERASE_VERSIONS_0017_SQL)
    op.execute("DROP TRIGGER drop_if_erased ON memstore.activations")
    op.execute("DROP TRIGGER drop_if_erased ON memstore.embeddings")
    op.execute("DROP FUNCTION memstore.drop_if_erased()")
