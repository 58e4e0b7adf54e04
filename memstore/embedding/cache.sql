-- Reads of the embeddings cache that run on a hot path, as named queries
-- (memstore/embedding/cache.py); the rest of the module builds its statements
-- with SQLAlchemy.

-- unfresh --
-- Of the given nodes, which have no vector of the model (missing) and which
-- have one computed from other text (stale: its source hash is not the hash
-- of the node's content). One bigint[] of ids; a context packet checks its
-- ~200 candidates this way.
SELECT n.id, e.node_id IS NULL AS missing,
       e.source_hash = sha256(convert_to(n.content, 'UTF8')) AS fresh
FROM memstore.nodes n
LEFT JOIN memstore.embeddings e
       ON e.namespace_id = n.namespace_id AND e.node_id = n.id AND e.model = %(model)s
WHERE n.namespace_id = %(ns)s AND n.id = ANY(%(ids)s::bigint[])
