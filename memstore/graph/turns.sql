-- Bulk timeline ingest (memstore/graph/turns.py, used by Timeline.ingest_turns).
--
-- The nodes go through copy_nodes (ingest.sql); these statements find where
-- each new turn joins its session and write the ``next`` edges.

-- create_turn_order --
-- The turns one ingest_turns call created, in the order it read them. Ids
-- come from the COPY in key order, not reading order: where two turns of a
-- session share a time, the one read later is the newer, as it would be
-- had each turn been ingested by its own call. Kept for the session,
-- emptied at commit (and rolled back with a failed call).
CREATE TEMP TABLE IF NOT EXISTS memstore_turn_order (
    node_id int8 PRIMARY KEY, seq int8 NOT NULL
) ON COMMIT DELETE ROWS

-- record_turn_order --
INSERT INTO memstore_turn_order (node_id, seq)
SELECT t.node_id, t.seq FROM unnest(%(node_ids)s::int8[], %(seqs)s::int8[]) AS t(node_id, seq)

-- latest_turns --
-- For each (session, moment): the newest current turn of the session observed
-- at or before the moment, up to the transaction's privacy ceiling, as
-- memstore.graph.entries.current_entries orders them (by observed_at, then
-- id), except that among turns of one time this call's later ones come first.
-- The first lateral walks ix_nodes_tier_scope_observed to the newest time;
-- the second reads only the turns of that time. ``seq`` is NULL for a turn
-- stored before this call.
SELECT k.ord, pick.id, pick.observed_at, pick.seq
FROM unnest(%(sessions)s::text[], %(moments)s::timestamptz[]) WITH ORDINALITY
     AS k(session, moment, ord)
CROSS JOIN LATERAL (
    SELECT n.observed_at
    FROM memstore.nodes n
    WHERE n.namespace_id = %(ns)s AND n.tier = %(tier)s AND n.scope = k.session
      AND n.node_type = %(node_type)s AND n.observed_at <= k.moment
      AND n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
      AND NOT EXISTS (SELECT FROM memstore.supersessions s
                      WHERE s.namespace_id = n.namespace_id AND s.old_id = n.id)
      AND NOT EXISTS (SELECT FROM memstore.tombstones t
                      WHERE t.namespace_id = n.namespace_id AND t.node_id = n.id)
      AND NOT EXISTS (SELECT FROM memstore.redactions r
                      WHERE r.namespace_id = n.namespace_id AND r.node_id = n.id)
    ORDER BY n.observed_at DESC NULLS LAST, n.id DESC
    LIMIT 1
) latest
CROSS JOIN LATERAL (
    SELECT n.id, n.observed_at, o.seq
    FROM memstore.nodes n
    LEFT JOIN memstore_turn_order o ON o.node_id = n.id
    WHERE n.namespace_id = %(ns)s AND n.tier = %(tier)s AND n.scope = k.session
      AND n.node_type = %(node_type)s AND n.observed_at = latest.observed_at
      AND n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
      AND NOT EXISTS (SELECT FROM memstore.supersessions s
                      WHERE s.namespace_id = n.namespace_id AND s.old_id = n.id)
      AND NOT EXISTS (SELECT FROM memstore.tombstones t
                      WHERE t.namespace_id = n.namespace_id AND t.node_id = n.id)
      AND NOT EXISTS (SELECT FROM memstore.redactions r
                      WHERE r.namespace_id = n.namespace_id AND r.node_id = n.id)
    ORDER BY o.seq DESC NULLS LAST, n.id DESC
    LIMIT 1
) pick

-- insert_links --
-- One edge per (src, dst), every other column as LinkInput's defaults.
INSERT INTO memstore.edges (namespace_id, src, dst, relation, weight, inhibitory, confidence,
                            layer)
SELECT %(ns)s, e.src, e.dst, %(relation)s, %(weight)s, false, 0.5, 1
FROM unnest(%(srcs)s::int8[], %(dsts)s::int8[]) AS e(src, dst)
