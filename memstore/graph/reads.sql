-- Graph reads of one memory: its edges, its neighbours within a few hops, and
-- two memories' vectors (memstore/graph/reads.py). A memory's edges are those
-- written on any of its versions (memstore.own_versions); an edge is followed
-- only while it is live and its far end, taken to its current version, is
-- visible and neither forgotten nor redacted (memstore.live_end): the rules of
-- the activation pull (sql/05_neighbourhood.sql). The privacy ceiling is the
-- one the transaction declared, read by the expression row-level security uses.
-- Every table reference filters on namespace_id (docs/architecture.md, Citus).

-- edges --
SELECT e.id, e.src, e.dst, e.relation, e.weight, e.inhibitory, e.confidence, e.layer,
       e.source, e.actor, e.run_id, e.recorded_at, f.far,
       coalesce(es.hebbian_weight, 0)::float8 AS learned_weight
FROM memstore.own_versions(%(ns)s, %(node)s, NULL) AS v(id)
CROSS JOIN LATERAL (
    SELECT o.*, o.dst AS far_end FROM memstore.edges o
    WHERE %(outgoing)s AND o.namespace_id = %(ns)s AND o.src = v.id
    UNION ALL
    SELECT i.*, i.src AS far_end FROM memstore.edges i
    WHERE %(incoming)s AND i.namespace_id = %(ns)s AND i.dst = v.id
) AS e
CROSS JOIN LATERAL memstore.live_end(
    %(ns)s, e.id, e.recorded_at, e.far_end, %(node)s,
    nullif(current_setting('memstore.privacy_ceiling', true), '')::int, NULL) AS f
LEFT JOIN memstore.edge_state es ON es.namespace_id = %(ns)s AND es.edge_id = e.id
WHERE %(relation)s::text IS NULL OR e.relation = %(relation)s::text
ORDER BY e.weight DESC, e.id
LIMIT %(limit)s

-- neighbours --
-- Breadth first from the memory's current version, one recursive CTE: each
-- step follows the live edges of every version of the node it stands on (in
-- the directions asked for, of one relation if asked) to current versions.
-- UNION keeps one row per (node, distance), so the walk is bounded by the
-- depth (at most 3, checked by the caller). The rows come out one distance
-- after the other (each iteration of the recursion in turn), so the caller
-- reads them through a cursor and stops once it has its limit of distinct
-- memories: the walk goes no further than that (memstore/graph/reads.py).
WITH RECURSIVE walk (id, distance) AS (
    SELECT c.id, 0 FROM memstore.current_of(%(ns)s, %(node)s, NULL) AS c
    UNION
    SELECT f.far, w.distance + 1
    FROM walk w
    CROSS JOIN LATERAL memstore.own_versions(%(ns)s, w.id, NULL) AS v(id)
    CROSS JOIN LATERAL (
        SELECT o.id, o.recorded_at, o.dst AS far_end FROM memstore.edges o
        WHERE %(outgoing)s AND o.namespace_id = %(ns)s AND o.src = v.id
          AND (%(relation)s::text IS NULL OR o.relation = %(relation)s::text)
        UNION ALL
        SELECT i.id, i.recorded_at, i.src FROM memstore.edges i
        WHERE %(incoming)s AND i.namespace_id = %(ns)s AND i.dst = v.id
          AND (%(relation)s::text IS NULL OR i.relation = %(relation)s::text)
    ) AS e
    CROSS JOIN LATERAL memstore.live_end(
        %(ns)s, e.id, e.recorded_at, e.far_end, w.id,
        nullif(current_setting('memstore.privacy_ceiling', true), '')::int, NULL) AS f
    WHERE w.distance < %(depth)s
)
SELECT w.id, w.distance FROM walk w WHERE w.distance > 0

-- vectors --
-- The stored vectors of some nodes for one model (as text: the client parses
-- two of them, no vector type registration needed).
SELECT e.node_id, e.embedding::text AS embedding
FROM memstore.embeddings e
WHERE e.namespace_id = %(ns)s AND e.model = %(model)s AND e.node_id = ANY(%(ids)s::bigint[])

-- strengthen --
-- Explicit co-activation: the learned weight of every live excitatory edge
-- between the two memories (either direction, any of their versions) moves by
-- delta and stays within [0, 1]; a strengthening fires the edge (fire_count,
-- last_fired_at), a weakening does not. Authored weights never change.
INSERT INTO memstore.edge_state AS es
       (namespace_id, edge_id, src, dst, hebbian_weight, fire_count, last_fired_at)
SELECT e.namespace_id, e.id, e.src, e.dst, greatest(0, least(1, %(delta)s::real)),
       CASE WHEN %(delta)s > 0 THEN 1 ELSE 0 END,
       CASE WHEN %(delta)s > 0 THEN now() END
FROM memstore.edges e
WHERE e.namespace_id = %(ns)s AND e.id = ANY(%(edges)s::bigint[])
ON CONFLICT (namespace_id, edge_id) DO UPDATE
SET hebbian_weight = greatest(0, least(1, es.hebbian_weight + %(delta)s::real)),
    fire_count = es.fire_count + CASE WHEN %(delta)s > 0 THEN 1 ELSE 0 END,
    last_fired_at = CASE WHEN %(delta)s > 0 THEN now() ELSE es.last_fired_at END
RETURNING es.edge_id, es.hebbian_weight::float8 AS learned_weight
