-- Graph reads of one memory: its edges, its neighbours within a few hops, and
-- two memories' vectors (memstore/graph/reads.py). A memory's edges are those
-- written on any of its versions (memstore.own_versions); an edge is followed
-- only while it is live and its far end, taken to its current version, is
-- visible and neither forgotten nor redacted (memstore.live_end): the rules of
-- the activation pull (sql/05_neighbourhood.sql). The privacy ceiling is the
-- one the transaction declared, read by the expression row-level security uses.
-- Every table reference filters on namespace_id (docs/architecture.md, Citus).

-- memory --
-- The memory a read starts from, as its checks need it (memstore/services/graph.py):
-- no row when the asked id is not visible (missing, another namespace's, above the
-- ceiling); else its current version, whether that version is visible, and whether
-- it was forgotten or redacted. Sent in the read's own round trip, before the read,
-- whose rows count only when this verdict lets them.
SELECT c.id AS current,
       EXISTS (SELECT 1 FROM memstore.nodes m
               WHERE m.namespace_id = %(ns)s AND m.id = c.id
                 AND m.privacy <= nullif(current_setting('memstore.privacy_ceiling', true),
                                         '')::smallint) AS visible,
       EXISTS (SELECT 1 FROM memstore.tombstones t
               WHERE t.namespace_id = %(ns)s AND t.node_id = c.id) AS tombstoned,
       EXISTS (SELECT 1 FROM memstore.redactions r
               WHERE r.namespace_id = %(ns)s AND r.node_id = c.id) AS redacted
FROM memstore.nodes a
CROSS JOIN LATERAL memstore.current_of(%(ns)s, a.id, NULL) AS c
WHERE a.namespace_id = %(ns)s AND a.id = %(node)s
  AND a.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint

-- edges --
-- From the asked id's current version (the start only when the asked id is visible:
-- an invisible one walks nothing), in the same round trip as its checks ("memory").
WITH m AS (
    SELECT c.id FROM memstore.nodes a
    CROSS JOIN LATERAL memstore.current_of(%(ns)s, a.id, NULL) AS c
    WHERE a.namespace_id = %(ns)s AND a.id = %(node)s
      AND a.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
)
SELECT e.id, e.src, e.dst, e.relation, e.weight, e.inhibitory, e.confidence, e.layer,
       e.source, e.actor, e.run_id, e.recorded_at, f.far,
       coalesce(es.hebbian_weight, 0)::float8 AS learned_weight
FROM m CROSS JOIN LATERAL memstore.own_versions(%(ns)s, m.id, NULL) AS v(id)
CROSS JOIN LATERAL (
    SELECT o.*, o.dst AS far_end FROM memstore.edges o
    WHERE %(outgoing)s AND o.namespace_id = %(ns)s AND o.src = v.id
    UNION ALL
    SELECT i.*, i.src AS far_end FROM memstore.edges i
    WHERE %(incoming)s AND i.namespace_id = %(ns)s AND i.dst = v.id
) AS e
CROSS JOIN LATERAL memstore.live_end(
    %(ns)s, e.id, e.recorded_at, e.far_end, m.id,
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
-- takes the first rows, up to %(rows)s, and keeps the first row of each memory
-- until it has its limit of distinct memories (memstore/graph/reads.py):
-- (limit + 1) × (depth + 1) rows hold that many whenever the walk reaches them,
-- since a memory comes at most once per distance. A recursive query is read
-- lazily, so the LIMIT stops the walk there. The walk starts only when the asked
-- id is visible, so it can be sent in the same round trip as its checks.
WITH RECURSIVE walk (id, distance) AS (
    SELECT c.id, 0 FROM memstore.nodes a
    CROSS JOIN LATERAL memstore.current_of(%(ns)s, a.id, NULL) AS c
    WHERE a.namespace_id = %(ns)s AND a.id = %(node)s
      AND a.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
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
SELECT w.id, w.distance FROM walk w WHERE w.distance > 0 LIMIT %(rows)s

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
