-- The context packet's reads besides recall (memstore/recall/context.py, for
-- memstore/tiers/context.py). They travel in one pipeline with the recall
-- statement: one wait for the server.

-- tier_candidates --
-- The current pinned facts (newest first), the current lessons whose current
-- confidence (learned in node_state, else as added) reaches the threshold
-- (most confident first), the newest current turns of the timeline (of one
-- session when asked), the open agency pressures (strongest first: a
-- pressure's importance is its value) and the newest current short-term
-- records, each a row set of its own, in one statement.
-- Each subquery reads its tier through ix_nodes_tier_observed or
-- ix_nodes_tier_scope_observed, whose order it repeats exactly (NULLS LAST).
-- Rows carry only what a packet shows (the columns fragment, then the
-- confidence it shows: a lesson's learned one, else the node's). The current
-- fragment is tiers/common.py's is_current() (tests/integration/test_context.py
-- checks that both read the same entries). The session fragment narrows the
-- timeline to one session; without it, a statement of its own, so each keeps a
-- plan of its own when prepared. The tagged fragment, likewise, narrows every
-- section to the memories carrying the packet's tags.
(SELECT 'scratchpad' AS section, {columns}, n.confidence
 FROM memstore.nodes n
 WHERE n.namespace_id = %(ns)s AND n.tier = 'scratchpad' AND {current} {tagged}
 ORDER BY n.observed_at DESC NULLS LAST, n.id DESC
 LIMIT %(max_pins)s)
UNION ALL
(SELECT 'lessons' AS section, {columns}, c.confidence
 FROM memstore.nodes n
 CROSS JOIN LATERAL (
     SELECT coalesce((SELECT s.current_confidence FROM memstore.node_state s
                      WHERE s.namespace_id = %(ns)s AND s.node_id = n.id),
                     n.confidence) AS confidence) AS c
 WHERE n.namespace_id = %(ns)s AND n.tier = 'lessons' AND {current}
   AND c.confidence >= %(lesson_threshold)s {tagged}
 ORDER BY c.confidence DESC, n.observed_at DESC NULLS LAST, n.id DESC
 LIMIT %(max_lessons)s)
UNION ALL
(SELECT 'timeline' AS section, {columns}, n.confidence
 FROM memstore.nodes n
 WHERE n.namespace_id = %(ns)s AND n.tier = 'timeline' AND n.node_type = 'Turn'
   {session} AND {current} {tagged}
 ORDER BY n.observed_at DESC NULLS LAST, n.id DESC
 LIMIT %(recent_turns)s)
UNION ALL
-- One current node per pressure key (memstore/lifecycle/apply.py): few rows,
-- sorted by value without an index.
(SELECT 'agency' AS section, {columns}, n.confidence
 FROM memstore.nodes n
 WHERE n.namespace_id = %(ns)s AND n.tier = 'agency' AND {current}
 ORDER BY n.importance DESC, n.observed_at DESC NULLS LAST, n.id DESC
 LIMIT %(open_pressures)s)
UNION ALL
-- Newest first in ix_nodes_tier_observed's order, as current_entries reads a
-- tier (lifecycle records carry no observed_at: the newest id comes first).
(SELECT 'short_term' AS section, {columns}, n.confidence
 FROM memstore.nodes n
 WHERE n.namespace_id = %(ns)s AND n.tier = 'short_term' AND {current}
 ORDER BY n.observed_at DESC NULLS LAST, n.id DESC
 LIMIT %(fresh_short_term)s)

-- session --
AND n.scope = %(session_id)s

-- tagged --
-- recall_context(tags=...): only memories carrying every tag (ix_nodes_tags).
AND n.tags @> %(tags)s::text[]

-- columns --
-- What a packet shows of a memory (packet.py's Entry but its confidence, which
-- each row set appends): no data, nothing a model would need to be built
-- (every row is current by the WHERE clause).
n.id, n.kind, n.node_type, n.tier, n.label, n.content, n.source, n.actor,
n.observed_at, n.recorded_at

-- current --
NOT EXISTS (SELECT 1 FROM memstore.supersessions s
            WHERE s.namespace_id = %(ns)s AND s.old_id = n.id)
AND NOT EXISTS (SELECT 1 FROM memstore.tombstones t
                WHERE t.namespace_id = %(ns)s AND t.node_id = n.id)
AND NOT EXISTS (SELECT 1 FROM memstore.redactions r
                WHERE r.namespace_id = %(ns)s AND r.node_id = n.id)
-- The privacy ceiling the transaction declared, as row-level security reads
-- it (memstore/graph/rows.py's within_ceiling): the owner bypasses the policy.
AND n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint

-- redacted_count --
-- How many memories of the namespace, up to the privacy ceiling, were redacted
-- (the packet warns of them).
SELECT count(*) AS redacted
FROM memstore.redactions r
JOIN memstore.nodes n ON n.namespace_id = %(ns)s AND n.id = r.node_id
WHERE r.namespace_id = %(ns)s
  AND n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
