-- Operator views: the stable, documented SQL interface to a memstore database
-- (docs/operators.md). Query these, not the raw tables: their columns are a
-- versioned contract, changed only by a migration.
--
-- Every view exposes namespace_id, joins its tables on namespace_id, and names
-- its columns (never SELECT *), so a new column in a table changes no view and
-- a query filtering on namespace_id is routed to one shard of a distributed
-- PostgreSQL. The views are security_invoker: the row-level security of the
-- tables beneath applies to whoever queries them (sql/07_row_security.sql), so
-- memstore_app and memstore_reader see one namespace, within their privacy
-- ceiling, and the owner sees everything.

-- Each node with its status. Redacted outranks tombstoned, which outranks
-- superseded (memstore/graph/rows.py, status_of).
CREATE OR REPLACE VIEW memstore.v_node_status WITH (security_invoker = true) AS
SELECT n.namespace_id, n.id, n.kind, n.node_type, n.tier, n.privacy, n.recorded_at,
       CASE WHEN EXISTS (SELECT 1 FROM memstore.redactions r
                         WHERE r.namespace_id = n.namespace_id AND r.node_id = n.id)
                 THEN 'redacted'
            WHEN EXISTS (SELECT 1 FROM memstore.tombstones t
                         WHERE t.namespace_id = n.namespace_id AND t.node_id = n.id)
                 THEN 'tombstoned'
            WHEN EXISTS (SELECT 1 FROM memstore.supersessions s
                         WHERE s.namespace_id = n.namespace_id AND s.old_id = n.id)
                 THEN 'superseded'
            ELSE 'current' END AS status
FROM memstore.nodes n;

-- What the store holds now: nodes neither superseded, tombstoned nor redacted.
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

-- Lineage: every node with the version that replaced it (if any), the current
-- version its chain ends in, and how many versions led to it. No recursive CTE
-- here (a distributed PostgreSQL needs a namespace filter inside each one):
-- the walks are memstore.current_version / earlier_versions (sql/04).
CREATE OR REPLACE VIEW memstore.v_node_lineage WITH (security_invoker = true) AS
SELECT n.namespace_id, n.id AS node_id, s.new_id AS superseded_by, s.reason AS supersede_reason,
       s.actor AS superseded_by_actor, s.at AS superseded_at,
       memstore.current_version(n.namespace_id, n.id) AS current_id,
       (SELECT count(*) FROM memstore.earlier_versions(n.namespace_id, n.id) AS p(id))
           AS earlier_versions,
       n.recorded_at
FROM memstore.nodes n
LEFT JOIN memstore.supersessions s ON s.namespace_id = n.namespace_id AND s.old_id = n.id;

-- Per namespace: nodes per status (what `memstore status` reports).
CREATE OR REPLACE VIEW memstore.v_namespace_stats WITH (security_invoker = true) AS
SELECT ns.id AS namespace_id, ns.name AS namespace,
       count(st.id) AS nodes,
       count(st.id) FILTER (WHERE st.status = 'current') AS current,
       count(st.id) FILTER (WHERE st.status = 'superseded') AS superseded,
       count(st.id) FILTER (WHERE st.status = 'tombstoned') AS tombstoned,
       count(st.id) FILTER (WHERE st.status = 'redacted') AS redacted
FROM memstore.namespaces ns
LEFT JOIN memstore.v_node_status st ON st.namespace_id = ns.id
GROUP BY ns.id, ns.name;

-- Per namespace and tier ('' for nodes outside the tiers): nodes per status.
CREATE OR REPLACE VIEW memstore.v_tier_stats WITH (security_invoker = true) AS
SELECT st.namespace_id, coalesce(st.tier, '') AS tier,
       count(*) AS nodes,
       count(*) FILTER (WHERE st.status = 'current') AS current,
       count(*) FILTER (WHERE st.status = 'superseded') AS superseded,
       count(*) FILTER (WHERE st.status = 'tombstoned') AS tombstoned,
       count(*) FILTER (WHERE st.status = 'redacted') AS redacted
FROM memstore.v_node_status st
GROUP BY st.namespace_id, coalesce(st.tier, '');

-- The access log by UTC day: how often spreading activation put nodes into
-- working memory (activate with learn=True), how many distinct nodes and sessions.
CREATE OR REPLACE VIEW memstore.v_activation_daily WITH (security_invoker = true) AS
SELECT a.namespace_id, (a.at AT TIME ZONE 'UTC')::date AS day,
       count(*) AS activations,
       count(DISTINCT a.node_id) AS nodes,
       count(DISTINCT a.session_id) AS sessions,
       avg(a.strength)::float8 AS mean_strength
FROM memstore.activations a
GROUP BY a.namespace_id, (a.at AT TIME ZONE 'UTC')::date;

-- Learned (Hebbian) edges that are not forgotten, strongest first within each
-- namespace (rank 1 = strongest). effective_weight combines authored and
-- learned weight as spreading activation does: 1 - (1 - weight)(1 - hebbian).
CREATE OR REPLACE VIEW memstore.v_strongest_edges WITH (security_invoker = true) AS
SELECT e.namespace_id, e.id AS edge_id, e.src, e.dst, e.relation, e.inhibitory,
       e.weight, es.hebbian_weight,
       (1 - (1 - e.weight) * (1 - es.hebbian_weight))::float8 AS effective_weight,
       es.fire_count, es.last_fired_at,
       rank() OVER (PARTITION BY e.namespace_id
                    ORDER BY es.hebbian_weight DESC, es.fire_count DESC, e.id) AS rank
FROM memstore.edge_state es
JOIN memstore.edges e ON e.namespace_id = es.namespace_id AND e.id = es.edge_id
WHERE es.hebbian_weight > 0
  AND NOT EXISTS (SELECT 1 FROM memstore.tombstones t
                  WHERE t.namespace_id = e.namespace_id AND t.edge_id = e.id);

-- Vector freshness per namespace and model: the namespace's own embedder
-- (namespaces.settings) and every model that has vectors there. Counts cover
-- the nodes that should have a vector (all but redacted ones), as
-- Namespace.embedding_status does: fresh (source hash matches the content),
-- stale (content changed since), missing (no vector for that model).
CREATE OR REPLACE VIEW memstore.v_embedding_freshness WITH (security_invoker = true) AS
WITH models AS (
    SELECT ns.id AS namespace_id, ns.settings ->> 'embedder' AS model
    FROM memstore.namespaces ns
    WHERE ns.settings ? 'embedder'
    UNION
    SELECT e.namespace_id, e.model FROM memstore.embeddings e
)
SELECT m.namespace_id, m.model,
       count(n.id) AS nodes,
       count(n.id) FILTER (WHERE e.node_id IS NOT NULL
                             AND e.source_hash = sha256(convert_to(n.content, 'UTF8')))
           AS fresh,
       count(n.id) FILTER (WHERE e.node_id IS NOT NULL
                             AND e.source_hash <> sha256(convert_to(n.content, 'UTF8')))
           AS stale,
       count(n.id) FILTER (WHERE e.node_id IS NULL) AS missing,
       max(e.created_at) AS newest_vector_at
FROM models m
JOIN memstore.nodes n ON n.namespace_id = m.namespace_id
LEFT JOIN memstore.embeddings e
       ON e.namespace_id = n.namespace_id AND e.node_id = n.id AND e.model = m.model
WHERE NOT EXISTS (SELECT 1 FROM memstore.redactions r
                  WHERE r.namespace_id = n.namespace_id AND r.node_id = n.id)
GROUP BY m.namespace_id, m.model;

-- The review queue: proposals with pending ones first (queue_position 1 is the
-- oldest pending proposal), then decided ones, newest decision first.
CREATE OR REPLACE VIEW memstore.v_review_queue WITH (security_invoker = true) AS
SELECT p.namespace_id, p.id AS proposal_id, p.status, p.operation, p.rationale,
       p.proposed_by, p.proposed_at, p.decided_by, p.decided_at, p.decision_reason,
       CASE WHEN p.status = 'pending' THEN now() - p.proposed_at END AS waiting,
       row_number() OVER (PARTITION BY p.namespace_id
                          ORDER BY p.status <> 'pending', p.decided_at DESC NULLS FIRST,
                                   p.proposed_at, p.id) AS queue_position,
       p.operation ->> 'op' AS op,
       p.evidence
FROM memstore.proposals p;

-- The audit log by UTC day, operation and outcome.
CREATE OR REPLACE VIEW memstore.v_operations_daily WITH (security_invoker = true) AS
SELECT o.namespace_id, (o.recorded_at AT TIME ZONE 'UTC')::date AS day, o.op, o.outcome,
       count(*) AS operations,
       count(DISTINCT o.batch_id) AS batches,
       count(DISTINCT o.actor) AS actors
FROM memstore.operations o
GROUP BY o.namespace_id, (o.recorded_at AT TIME ZONE 'UTC')::date, o.op, o.outcome;

-- Per namespace and tag: how many current memories carry it (revision 0022).
CREATE OR REPLACE VIEW memstore.v_tag_counts WITH (security_invoker = true) AS
SELECT c.namespace_id, t.tag, count(*) AS current_nodes
FROM memstore.v_current_nodes c
CROSS JOIN LATERAL unnest(c.tags) AS t(tag)
GROUP BY c.namespace_id, t.tag;
