-- Remembering one memory (memstore/graph/nodes.py: remember_node, used by
-- ns.remember and every NamespaceTransaction write of a single node).
--
-- One statement writes the node and its vector and returns the node with its
-- status, so ns.remember is one round trip (with BEGIN, SET LOCAL and COMMIT
-- pipelined alongside it). The unique index uq_nodes_content keeps the same
-- memory one node: ON CONFLICT DO NOTHING skips a key already stored, and the
-- last branch returns that stored node instead. Rows written by the CTEs are
-- invisible to the rest of the statement, so exactly one branch answers.
-- A kind the namespace policy refuses (its current policy node's
-- data.policy.refused_kinds) writes nothing and returns no row: the caller's
-- transaction path then raises PolicyRefusedError (memstore/tx.py check_kind).
-- Given ns_name (ns.remember's one-round-trip path, which uses the id the store
-- kept for a name), nothing is written or returned unless namespace ns still has
-- that name: an owner who renamed or removed it past its append-only guard must
-- not have the memory land in a namespace that is no longer the caller's. The
-- caller then opens a checked transaction, which looks the name up again.

-- remember_node --
WITH refused AS (
    SELECT FROM memstore.nodes p
    WHERE p.namespace_id = %(ns)s AND p.tier = 'policy' AND p.label = 'law'
      AND p.data -> 'policy' -> 'refused_kinds' ? %(kind)s
      AND NOT EXISTS (SELECT FROM memstore.supersessions s
                      WHERE s.namespace_id = %(ns)s AND s.old_id = p.id)
      AND NOT EXISTS (SELECT FROM memstore.tombstones t
                      WHERE t.namespace_id = %(ns)s AND t.node_id = p.id)
      AND NOT EXISTS (SELECT FROM memstore.redactions r
                      WHERE r.namespace_id = %(ns)s AND r.node_id = p.id)
), named AS (
    SELECT %(ns_name)s::text IS NULL
           OR EXISTS (SELECT FROM memstore.namespaces ns
                      WHERE ns.id = %(ns)s AND ns.name = %(ns_name)s::text) AS ok
), created AS (
    INSERT INTO memstore.nodes (
        namespace_id, content_hash, kind, node_type, tier, layer, label, content, data,
        importance, confidence, decay_rate, privacy, protected, subject, scope, source,
        actor, run_id, observed_at, valid_from, valid_to, tags
    )
    SELECT
        %(ns)s, %(content_hash)s, %(kind)s, %(node_type)s, %(tier)s, %(layer)s, %(label)s,
        %(content)s, %(data)s, %(importance)s, %(confidence)s, %(decay_rate)s, %(privacy)s,
        %(protected)s, %(subject)s, %(scope)s, %(source)s, %(actor)s, %(run_id)s,
        %(observed_at)s, %(valid_from)s, %(valid_to)s, %(tags)s::text[]
    WHERE NOT EXISTS (SELECT FROM refused) AND (SELECT ok FROM named)
    ON CONFLICT (namespace_id, kind, node_type, content_hash) DO NOTHING
    RETURNING id, kind, node_type, tier, layer, label, content, data, importance, confidence,
              decay_rate, privacy, protected, subject, scope, source, actor, run_id,
              observed_at, valid_from, valid_to, recorded_at, tags
),
-- The vector of a node this statement created (no other transaction can see
-- that node, so none can have written a vector for it). No vector given: none.
vector AS (
    INSERT INTO memstore.embeddings (namespace_id, node_id, model, dims, embedding, source_hash)
    SELECT %(ns)s, c.id, %(model)s, %(dims)s, %(embedding)b::vector, %(source_hash)s
    FROM created c
    WHERE %(embedding)b::vector IS NOT NULL
)
SELECT c.*, true AS created,
       NULL::bigint AS superseded_by, false AS superseded, false AS tombstoned,
       false AS redacted, NULL::timestamptz AS last_confirmed_at
FROM created c
UNION ALL
-- The node already stored under the key, when this statement's snapshot sees
-- it. A key taken by a concurrent writer after that snapshot (ON CONFLICT
-- waited for its commit) returns no row at all: remember_node (nodes.py)
-- then runs the statement again, with a fresh snapshot. A stored node above
-- the transaction's privacy ceiling is not returned either (the owner bypasses
-- row-level security, so the filter is here too): remember_node then stores
-- the memory under a key of its own, and the caller never learns of the other.
SELECT n.id, n.kind, n.node_type, n.tier, n.layer, n.label, n.content, n.data, n.importance,
       n.confidence, n.decay_rate, n.privacy, n.protected, n.subject, n.scope, n.source,
       n.actor, n.run_id, n.observed_at, n.valid_from, n.valid_to, n.recorded_at, n.tags,
       false AS created,
       (SELECT s.new_id FROM memstore.supersessions s
        JOIN memstore.nodes v ON v.namespace_id = %(ns)s AND v.id = s.new_id
        WHERE s.namespace_id = %(ns)s AND s.old_id = n.id
          AND v.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
       ) AS superseded_by,
       EXISTS (SELECT FROM memstore.supersessions s
               WHERE s.namespace_id = %(ns)s AND s.old_id = n.id) AS superseded,
       EXISTS (SELECT FROM memstore.tombstones t
               WHERE t.namespace_id = %(ns)s AND t.node_id = n.id) AS tombstoned,
       EXISTS (SELECT FROM memstore.redactions r
               WHERE r.namespace_id = %(ns)s AND r.node_id = n.id) AS redacted,
       (SELECT f.at FROM memstore.confirmations f
        WHERE f.namespace_id = %(ns)s AND f.node_id = n.id
        ORDER BY f.at DESC LIMIT 1) AS last_confirmed_at
FROM memstore.nodes n
WHERE n.namespace_id = %(ns)s AND n.kind = %(kind)s AND n.node_type = %(node_type)s
  AND n.content_hash = %(content_hash)s
  AND n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
  AND NOT EXISTS (SELECT FROM created)
  AND NOT EXISTS (SELECT FROM refused)
  AND (SELECT ok FROM named)
