-- Procedures learn from outcomes (memstore/graph/outcomes.py, docs/tiers.md).

-- record --
INSERT INTO memstore.procedure_outcomes
       (namespace_id, node_id, success, episode_node_id, episode_run, note, actor)
VALUES (:ns, :node, :success, :episode_node, :episode_run, :note, :actor)
RETURNING id, node_id, success, episode_node_id, episode_run, note, actor, recorded_at

-- outcomes --
-- Newest first, by time (ids are not ordered across a cluster's nodes).
SELECT o.id, o.node_id, o.success, o.episode_node_id, o.episode_run, o.note, o.actor,
       o.recorded_at
FROM memstore.procedure_outcomes o
WHERE o.namespace_id = :ns AND o.node_id = ANY(CAST(:ids AS bigint[]))
  AND (CAST(:success AS boolean) IS NULL OR o.success = CAST(:success AS boolean))
ORDER BY o.recorded_at DESC, o.id DESC
LIMIT :limit

-- add_roles --
INSERT INTO memstore.procedure_roles (namespace_id, node_id, role)
SELECT :ns, :node, u.role
FROM unnest(CAST(:roles AS text[])) AS u(role)
ON CONFLICT DO NOTHING

-- roles --
SELECT r.role
FROM memstore.procedure_roles r
WHERE r.namespace_id = :ns AND r.node_id = :node
ORDER BY r.role

-- served --
-- For each current procedure a packet found (:ids): nothing when its roles
-- leave :role out, else the version of its lineage to serve: the best record,
-- (successes + 1) / (applications + 2) (Laplace: a version nobody has tried
-- counts as 1/2, one success does not outrank nine of ten), ties to the
-- newest. Forgotten, redacted and above-the-ceiling versions are never served.
WITH RECURSIVE allowed AS (
    SELECT h.id
    FROM unnest(CAST(:ids AS bigint[])) AS h(id)
    WHERE CAST(:role AS text) IS NULL
       OR NOT EXISTS (SELECT 1 FROM memstore.procedure_roles r
                      WHERE r.namespace_id = :ns AND r.node_id = h.id)
       OR EXISTS (SELECT 1 FROM memstore.procedure_roles r
                  WHERE r.namespace_id = :ns AND r.node_id = h.id
                    AND r.role = CAST(:role AS text))
), versions (hit, version, depth) AS (
    SELECT a.id, a.id, 0 FROM allowed a
    UNION
    SELECT v.hit, s.old_id, v.depth + 1
    FROM versions v
    JOIN memstore.supersessions s ON s.namespace_id = :ns AND s.new_id = v.version
    WHERE v.depth < 1000
)
SELECT DISTINCT ON (v.hit) v.hit, v.version,
       coalesce(st.success_count, 0) AS successes, coalesce(st.times_applied, 0) AS applied
FROM versions v
JOIN memstore.nodes n ON n.namespace_id = :ns AND n.id = v.version
LEFT JOIN memstore.node_state st ON st.namespace_id = :ns AND st.node_id = v.version
WHERE n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
  AND NOT EXISTS (SELECT 1 FROM memstore.tombstones t
                  WHERE t.namespace_id = :ns AND t.node_id = v.version)
  AND NOT EXISTS (SELECT 1 FROM memstore.redactions d
                  WHERE d.namespace_id = :ns AND d.node_id = v.version)
ORDER BY v.hit,
         (coalesce(st.success_count, 0) + 1.0) / (coalesce(st.times_applied, 0) + 2.0) DESC,
         v.depth
