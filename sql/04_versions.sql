-- Version lookups for reads that follow supersession (spreading activation).
-- Edges stay on the version they were authored on; a read treats the edges of
-- every earlier version as the current version's, and an edge into an old
-- version as leading to the current one (docs/activation.md).
--
-- Both take as_of: a supersession recorded after it does not count, so an
-- as-of read sees the lineage the store knew then. Callers guard the call with
-- an index probe (does the node have a successor / a predecessor?), so the
-- common case of a never-revised node costs no function call.

CREATE OR REPLACE FUNCTION memstore.current_version(
    ns bigint, node bigint, as_of timestamptz DEFAULT NULL
) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    -- A node is superseded at most once and never into a cycle (02_lineage.sql),
    -- so the chain forward is a simple path.
    WITH RECURSIVE chain(id, step) AS (
        SELECT node, 0
        UNION ALL
        SELECT s.new_id, c.step + 1
        FROM memstore.supersessions s
        JOIN chain c ON s.old_id = c.id
        WHERE s.namespace_id = ns AND (as_of IS NULL OR s.at <= as_of)
    )
    SELECT id FROM chain ORDER BY step DESC LIMIT 1
$$;

CREATE OR REPLACE FUNCTION memstore.earlier_versions(
    ns bigint, node bigint, as_of timestamptz DEFAULT NULL
) RETURNS SETOF bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    -- Every version that led to this one (a merge has several predecessors).
    WITH RECURSIVE back(id) AS (
        SELECT s.old_id
        FROM memstore.supersessions s
        WHERE s.namespace_id = ns AND s.new_id = node AND (as_of IS NULL OR s.at <= as_of)
        UNION
        SELECT s.old_id
        FROM memstore.supersessions s
        JOIN back b ON s.new_id = b.id
        WHERE s.namespace_id = ns AND (as_of IS NULL OR s.at <= as_of)
    )
    SELECT id FROM back
$$;
