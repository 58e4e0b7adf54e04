-- Bulk ingest (memstore/graph/nodes.py: copy_nodes, used by remember_many).
--
-- Node rows travel by binary COPY into a temporary staging table, one row per
-- distinct idempotency key (the client folds duplicates first), and move into
-- memstore.nodes with one INSERT … ON CONFLICT DO NOTHING: the unique index
-- uq_nodes_content keeps the same memory one node, also against concurrent
-- writers. Vectors skip the staging table: they go straight from numpy arrays,
-- as one binary vector[] parameter, into memstore.embeddings (COPY FROM cannot
-- write a table under row-level security; INSERT … SELECT FROM unnest can).

-- create_staging --
-- Kept for the session, emptied at commit; one per backend, so concurrent
-- bulk loads never see each other's rows.
CREATE TEMP TABLE IF NOT EXISTS memstore_ingest_nodes (
    content_hash bytea, kind text, node_type text, tier text, layer int2,
    label text, content text, data jsonb, importance float4, confidence float4,
    decay_rate float4, privacy int2, protected bool, subject text, scope text,
    source text, actor text, run_id text, observed_at timestamptz,
    valid_from timestamptz, valid_to timestamptz, tags text[]
) ON COMMIT DELETE ROWS

-- clear_staging --
-- Rows of an earlier flush of the same transaction.
TRUNCATE memstore_ingest_nodes

-- copy_staging --
COPY memstore_ingest_nodes (
    content_hash, kind, node_type, tier, layer, label, content, data, importance,
    confidence, decay_rate, privacy, protected, subject, scope, source, actor, run_id,
    observed_at, valid_from, valid_to, tags
) FROM STDIN (FORMAT BINARY)

-- insert_nodes --
-- The staged rows that are new memories; returns the key and id of each node
-- this statement created. A key it skipped is already stored (or was stored
-- by a concurrent writer, whose transaction ON CONFLICT waited for).
-- Rows go in key order, as they always have: ids, and so the order in which
-- vectors reach the HNSW build, stay what they were before this path changed.
INSERT INTO memstore.nodes (
    namespace_id, content_hash, kind, node_type, tier, layer, label, content, data,
    importance, confidence, decay_rate, privacy, protected, subject, scope, source, actor,
    run_id, observed_at, valid_from, valid_to, tags
)
SELECT %(ns)s, content_hash, kind, node_type, tier, layer, label, content, data,
       importance, confidence, decay_rate, privacy, protected, subject, scope, source, actor,
       run_id, observed_at, valid_from, valid_to, tags
FROM memstore_ingest_nodes
ORDER BY kind, node_type, content_hash
ON CONFLICT (namespace_id, kind, node_type, content_hash) DO NOTHING
RETURNING kind, node_type, content_hash, id

-- find_nodes --
-- The stored nodes of keys insert_nodes skipped. A statement of its own, so
-- its fresh snapshot sees rows that concurrent writers committed meanwhile.
SELECT n.kind, n.node_type, n.content_hash, n.id
FROM unnest(%(kinds)s::text[], %(node_types)s::text[], %(hashes)s::bytea[])
     AS k(kind, node_type, content_hash)
JOIN memstore.nodes n
  ON n.namespace_id = %(ns)s AND n.kind = k.kind AND n.node_type = k.node_type
 AND n.content_hash = k.content_hash
-- A node above the transaction's privacy ceiling is not returned (the owner
-- bypasses row-level security): copy_nodes stores such an item as a node of
-- its own, and the caller never learns of the other.
WHERE n.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint

-- insert_new_vectors --
-- Vectors of nodes this transaction created: no other transaction can see
-- those nodes, so none can have written a vector for them.
INSERT INTO memstore.embeddings (namespace_id, node_id, model, dims, embedding, source_hash)
SELECT %(ns)s, v.node_id, %(model)s, %(dims)s, v.embedding, v.source_hash
FROM unnest(%(node_ids)s::bigint[], %(embeddings)b::vector[], %(source_hashes)s::bytea[])
     AS v(node_id, embedding, source_hash)

-- insert_found_vectors --
-- Vectors for nodes that were already stored: only where the stored text is
-- exactly the embedded text (a vector of a whitespace variant would be stale
-- from the start), the first such item per node, and never over a vector the
-- node already has for this model.
INSERT INTO memstore.embeddings (namespace_id, node_id, model, dims, embedding, source_hash)
SELECT DISTINCT ON (n.id) %(ns)s, n.id, %(model)s, %(dims)s, v.embedding, v.source_hash
FROM unnest(%(node_ids)s::bigint[], %(contents)s::text[], %(embeddings)b::vector[],
            %(source_hashes)s::bytea[]) WITH ORDINALITY
     AS v(node_id, content, embedding, source_hash, ord)
JOIN memstore.nodes n
  ON n.namespace_id = %(ns)s AND n.id = v.node_id AND n.content = v.content
ORDER BY n.id, v.ord
ON CONFLICT (namespace_id, node_id, model) DO NOTHING

-- The owner's path (copy_nodes with direct=True) -------------------------------
-- A role that row-level security does not confine may COPY straight into the
-- tables: no staging table, no INSERT … SELECT, and COPY's multi-row inserts.
-- COPY has no ON CONFLICT, so each batch runs under a savepoint: a key that is
-- already stored (or that a concurrent writer committed meanwhile: the unique
-- index waits for it) fails the COPY, and the batch goes the staging way.

-- may_copy --
-- Whether this role may take the owner's path: not confined by row-level
-- security (COPY FROM refuses a table under a policy) and allowed to draw
-- node ids from the identity sequence itself.
SELECT NOT (c.relrowsecurity
            AND NOT (r.rolsuper OR r.rolbypassrls
                     OR (pg_has_role(current_user, c.relowner, 'USAGE')
                         AND NOT c.relforcerowsecurity)))
       AND pg_get_serial_sequence('memstore.nodes', 'id') = 'memstore.nodes_id_seq'
       AND has_sequence_privilege('memstore.nodes_id_seq', 'USAGE')
       AND has_table_privilege('memstore.embeddings', 'INSERT')
FROM pg_catalog.pg_roles r, pg_catalog.pg_class c
WHERE r.rolname = current_user AND c.oid = 'memstore.nodes'::regclass

-- next_node_ids --
-- Ids for the batch's nodes, ascending: COPY writes the identity column
-- itself (as INSERT … OVERRIDING SYSTEM VALUE would), so that COPY can insert
-- many rows at a time. Ids of a batch that falls back stay unused, as the ids
-- of any rolled-back insert do. The sequence is named as a literal (may_copy
-- checks the name), so it is resolved once, not once per id.
SELECT nextval('memstore.nodes_id_seq'::regclass) FROM generate_series(1, %(n)s)

-- copy_nodes --
COPY memstore.nodes (
    id, namespace_id, content_hash, kind, node_type, tier, layer, label, content, data,
    importance, confidence, decay_rate, privacy, protected, subject, scope, source, actor,
    run_id, observed_at, valid_from, valid_to, tags
) FROM STDIN (FORMAT BINARY)

-- copy_vectors --
COPY memstore.embeddings (namespace_id, node_id, model, dims, embedding, source_hash)
FROM STDIN (FORMAT BINARY)
