-- What an activation with learn=True writes back, one batched statement each
-- (memstore/activation/learning.py). Authored weights never change: learned
-- numbers live in node_state and edge_state, and the access log only grows.

-- accesses --
-- Each working-memory node: one more activation, and now in its access ring
-- (the newest K accesses, for ACT-R base-level activation).
INSERT INTO memstore.node_state AS st
       (namespace_id, node_id, activation_count, last_activated_at, access_ring, updated_at)
SELECT %(ns)s, w.id, 1, now(), ARRAY[now()], now()
FROM unnest(%(ids)s::bigint[]) AS w(id)
ON CONFLICT (namespace_id, node_id) DO UPDATE
SET activation_count = st.activation_count + 1,
    last_activated_at = now(),
    access_ring = (st.access_ring || now())[greatest(1, cardinality(st.access_ring) + 2 - %(ring)s):],
    updated_at = now()

-- log --
-- The access log: one row per working-memory node, with its activation.
INSERT INTO memstore.activations (namespace_id, node_id, session_id, strength)
SELECT %(ns)s, w.id, %(session)s, w.strength
FROM unnest(%(ids)s::bigint[], %(strengths)s::real[]) AS w(id, strength)

-- hebbian --
-- Co-activation: every excitatory edge whose ends both entered working memory
-- moves its learned weight toward 1: hebb <- hebb + rate * (1 - hebb).
INSERT INTO memstore.edge_state AS es
       (namespace_id, edge_id, src, dst, hebbian_weight, fire_count, last_fired_at)
SELECT e.namespace_id, e.id, e.src, e.dst, %(rate)s, 1, now()
FROM memstore.edges e
WHERE e.namespace_id = %(ns)s AND e.id = ANY(%(edges)s::bigint[])
ON CONFLICT (namespace_id, edge_id) DO UPDATE
SET hebbian_weight = es.hebbian_weight + %(rate)s * (1 - es.hebbian_weight),
    fire_count = es.fire_count + 1,
    last_fired_at = now()

-- decay --
-- Learned weights of edges not fired within the window fade by a factor; a
-- weight that falls below the floor becomes 0 (the edge is unlearned, and
-- leaves the partial indexes of learned edges).
UPDATE memstore.edge_state
SET hebbian_weight = CASE WHEN hebbian_weight * %(factor)s < %(floor)s
                          THEN 0 ELSE hebbian_weight * %(factor)s END
WHERE namespace_id = %(ns)s AND hebbian_weight > 0
  AND (%(unused_for)s::interval IS NULL OR last_fired_at IS NULL
       OR last_fired_at < now() - %(unused_for)s::interval)
