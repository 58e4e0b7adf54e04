-- The neighbourhood of an activation: one statement, one round trip, one
-- snapshot. memstore/activation/pull.py composes it from the fragments below
-- ({step}, {visible}, {current}, {versions} are filled in there) and reads the
-- result as arrays (docs/activation.md, "The neighbourhood pull").
--
-- Parameters: ns; seeds (bigint[]); depth; fanout; both (follow edges against
-- their direction too); privacy (ceiling or NULL); as_of (or NULL: now);
-- vector (the query's embedding or NULL) and model (its embedder).
-- Optional filters arrive as NULL and fold away in the custom plan.
--
-- Supersession: edges stay on the version they were authored on. The walk
-- reads the edges of a node's earlier versions as its own ({versions}) and
-- follows an edge into an old version to the current one ({current}).

-- visible --
-- Whether the node may be reached: recorded (as of), within the privacy
-- ceiling, not tombstoned (as of), not redacted.
(((%(privacy)s::int IS NULL AND %(as_of)s::timestamptz IS NULL) OR EXISTS (
      SELECT 1 FROM memstore.nodes vn
      WHERE vn.namespace_id = %(ns)s AND vn.id = {node}
        AND (%(privacy)s::int IS NULL OR vn.privacy <= %(privacy)s::int)
        AND (%(as_of)s::timestamptz IS NULL OR vn.recorded_at <= %(as_of)s::timestamptz)))
 AND NOT EXISTS (
      SELECT 1 FROM memstore.tombstones vt
      WHERE vt.namespace_id = %(ns)s AND vt.node_id = {node}
        AND (%(as_of)s::timestamptz IS NULL OR vt.at <= %(as_of)s::timestamptz))
 AND NOT EXISTS (
      SELECT 1 FROM memstore.redactions vr
      WHERE vr.namespace_id = %(ns)s AND vr.node_id = {node}))

-- current --
-- The node's current version; one index probe when it was never revised.
CASE WHEN EXISTS (
          SELECT 1 FROM memstore.supersessions cs
          WHERE cs.namespace_id = %(ns)s AND cs.old_id = {node}
            AND (%(as_of)s::timestamptz IS NULL OR cs.at <= %(as_of)s::timestamptz))
     THEN memstore.current_version(%(ns)s, {node}, %(as_of)s::timestamptz)
     ELSE {node} END

-- versions --
-- The node and every version that led to it: the ids whose edges are its own.
SELECT {node} AS id
UNION ALL
SELECT p.id
FROM memstore.earlier_versions(%(ns)s, {node}, %(as_of)s::timestamptz) AS p(id)
WHERE EXISTS (
    SELECT 1 FROM memstore.supersessions vs
    WHERE vs.namespace_id = %(ns)s AND vs.new_id = {node}
      AND (%(as_of)s::timestamptz IS NULL OR vs.at <= %(as_of)s::timestamptz))

-- edge_ok --
-- Whether edge e may be followed: recorded (as of) and not tombstoned (as of).
(%(as_of)s::timestamptz IS NULL OR e.recorded_at <= %(as_of)s::timestamptz)
AND NOT EXISTS (
    SELECT 1 FROM memstore.tombstones et
    WHERE et.namespace_id = %(ns)s AND et.edge_id = e.id
      AND (%(as_of)s::timestamptz IS NULL OR et.at <= %(as_of)s::timestamptz))

-- branch --
-- One direction's candidate edges of version w.id (standing for node w.node).
-- near is the edge's end at w, far the end it leads to. The authored
-- candidates are the heaviest by authored weight, read in index order and
-- stopping at the cap; the learned ones (hebbian_weight > 0) are read from
-- edge_state. Together they hold the heaviest edges by effective weight.
(SELECT e.id AS edge_id, fe.far, e.weight, e.inhibitory, e.relation, {reverse} AS reverse
 FROM memstore.edges e
 CROSS JOIN LATERAL (SELECT {current_far} AS far) AS fe
 WHERE {enabled} AND e.namespace_id = %(ns)s AND e.{near} = w.id
   AND fe.far <> w.node AND {edge_ok} AND {visible_far}
 ORDER BY e.weight DESC, e.id
 LIMIT %(fanout)s)
UNION
(SELECT e.id, fe.far, e.weight, e.inhibitory, e.relation, {reverse}
 FROM memstore.edge_state ls
 JOIN memstore.edges e ON e.namespace_id = %(ns)s AND e.id = ls.edge_id
 CROSS JOIN LATERAL (SELECT {current_far} AS far) AS fe
 WHERE {enabled} AND ls.namespace_id = %(ns)s AND ls.{near} = w.id AND ls.hebbian_weight > 0
   AND fe.far <> w.node AND {edge_ok} AND {visible_far})

-- step --
-- The fan-out cap: version w.id's heaviest edges by effective weight
-- w_eff = 1 - (1 - weight) * (1 - hebbian_weight), ties by edge id.
SELECT c.edge_id, c.far AS dst, c.weight, coalesce(l.hebbian_weight, 0) AS hebb,
       c.inhibitory, c.relation, c.reverse
FROM ({out_branch} UNION {in_branch}) AS c
LEFT JOIN memstore.edge_state l ON l.namespace_id = %(ns)s AND l.edge_id = c.edge_id
ORDER BY 1 - (1 - c.weight) * (1 - coalesce(l.hebbian_weight, 0)) DESC, c.edge_id, c.reverse
LIMIT %(fanout)s

-- statement --
WITH RECURSIVE seeds AS MATERIALIZED (
    SELECT DISTINCT c.id
    FROM unnest(%(seeds)s::bigint[]) AS seed(id)
    CROSS JOIN LATERAL (SELECT {current_seed} AS id) AS c
    WHERE {visible_seed}
), walk(id, node, depth) AS (
    -- UNION (not UNION ALL): a node reached again at the same depth is not
    -- expanded twice, so hubs do not multiply the rows.
    SELECT v.id, s.id, 0
    FROM seeds s CROSS JOIN LATERAL ({versions_seed}) AS v
    UNION
    SELECT v.id, x.dst, w.depth + 1
    FROM walk w
    CROSS JOIN LATERAL ({step}) AS x
    CROSS JOIN LATERAL ({versions_dst}) AS v
    WHERE w.depth + 1 < %(depth)s AND NOT x.inhibitory
), expanded AS (
    SELECT id, node, min(depth) AS depth FROM walk GROUP BY id, node
), pulled AS MATERIALIZED (
    SELECT w.node AS src, x.dst, x.edge_id, x.weight, x.hebb, x.inhibitory, x.relation,
           x.reverse, w.depth + 1 AS depth
    FROM expanded w CROSS JOIN LATERAL ({step}) AS x
), reached AS MATERIALIZED (
    SELECT id, min(depth) AS depth
    FROM (SELECT id, 0 AS depth FROM seeds UNION ALL SELECT dst, depth FROM pulled) AS r
    GROUP BY id
)
SELECT e.*, v.*, a.*
FROM (SELECT array_agg(src) AS edge_src, array_agg(dst) AS edge_dst,
             array_agg(edge_id) AS edge_id, array_agg(weight) AS edge_weight,
             array_agg(hebb) AS edge_hebb, array_agg(inhibitory) AS edge_inhibitory,
             array_agg(relation) AS edge_relation, array_agg(reverse) AS edge_reverse,
             array_agg(depth) AS edge_depth
      FROM pulled) AS e,
     -- Similarity is computed here, next to the vectors: they never travel.
     (SELECT array_agg(n.id) AS node_id, array_agg(m.depth) AS node_depth,
             array_agg(n.layer) AS node_layer, array_agg(n.node_type) AS node_type,
             array_agg(n.label) AS node_label, array_agg(n.tier) AS node_tier,
             array_agg(n.importance) AS node_importance,
             array_agg(n.decay_rate) AS node_decay_rate,
             array_agg(extract(epoch FROM coalesce(%(as_of)s::timestamptz, now())
                                          - n.recorded_at)::float8) AS node_age,
             array_agg((1 - (emb.embedding <=> %(vector)s))::float8) AS node_similarity
      FROM reached m
      JOIN memstore.nodes n ON n.namespace_id = %(ns)s AND n.id = m.id
      LEFT JOIN memstore.embeddings emb
             ON emb.namespace_id = %(ns)s AND emb.node_id = n.id AND emb.model = %(model)s
     ) AS v,
     -- The ACT-R access history: one (node, age in seconds) pair per access.
     (SELECT array_agg(st.node_id) AS access_node, array_agg(
                 extract(epoch FROM coalesce(%(as_of)s::timestamptz, now()) - t.at)::float8
             ) AS access_age
      FROM memstore.node_state st
      CROSS JOIN LATERAL unnest(st.access_ring) AS t(at)
      WHERE st.namespace_id = %(ns)s AND st.node_id IN (SELECT id FROM reached)
        AND t.at <= coalesce(%(as_of)s::timestamptz, now())) AS a
