-- The neighbourhood pull of spreading activation (docs/activation.md).
--
-- memstore.neighbourhood_v3() walks the graph hop by hop and returns one row
-- of arrays. It is a PL/pgSQL function so that its plan is cached per
-- connection: planning the statement cost 17-26 ms, executing a 2-hop pull
-- about 2 ms.
--
-- Every "is it tombstoned / redacted / revised" check is a scalar subquery
-- ((SELECT ...) IS NULL), not NOT EXISTS: the planner turns NOT EXISTS into an
-- anti-join, and under the recursive CTE's inflated row estimates it chose
-- hash anti-joins that read every edge of a node (and once the whole
-- tombstones table) before the fan-out cap could stop the scan. A scalar
-- subquery stays a per-row index probe of about a microsecond.
--
-- The per-edge checks live in memstore.live_end(), a set-returning SQL
-- function: PostgreSQL inlines those into the calling query (it does not
-- inline a scalar SQL function whose body has a subquery — each call would
-- then be a separate function execution, ~30 us).
--
-- Supersession: edges stay on the version they were authored on. The walk
-- reads the edges of a node's earlier versions as its own
-- (memstore.own_versions) and follows an edge into an old version to the
-- current one (memstore.live_end, memstore.current_of).

-- The node's current version (as of); one index probe when it was never
-- revised. A set-returning function of one row: PostgreSQL inlines it into
-- the calling query (a scalar SQL function with a subquery is a separate
-- function execution per call instead).
CREATE OR REPLACE FUNCTION memstore.current_of(
    ns bigint, node bigint, as_of timestamptz
) RETURNS TABLE (id bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN (SELECT s.new_id FROM memstore.supersessions s
                      WHERE s.namespace_id = ns AND s.old_id = node
                        AND (as_of IS NULL OR s.at <= as_of)) IS NULL
                THEN node
                ELSE memstore.current_version(ns, node, as_of) END
$$;

-- The node and every version that led to it: the ids whose edges are its own.
-- Each version is superseded at most once, so they form a tree below the
-- node: its direct predecessors by one index probe, and the earlier versions
-- of those (a recursive query, ~50 us) only for a predecessor that has any.
CREATE OR REPLACE FUNCTION memstore.own_versions(
    ns bigint, node bigint, as_of timestamptz
) RETURNS SETOF bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT node
    UNION ALL
    SELECT p.old_id
    FROM memstore.supersessions p
    WHERE p.namespace_id = ns AND p.new_id = node AND (as_of IS NULL OR p.at <= as_of)
    UNION ALL
    SELECT q.id
    FROM memstore.supersessions p
    CROSS JOIN LATERAL memstore.earlier_versions(ns, p.old_id, as_of) AS q(id)
    WHERE p.namespace_id = ns AND p.new_id = node AND (as_of IS NULL OR p.at <= as_of)
      AND (SELECT s.id FROM memstore.supersessions s
           WHERE s.namespace_id = ns AND s.new_id = p.old_id
             AND (as_of IS NULL OR s.at <= as_of)
           LIMIT 1) IS NOT NULL
$$;

-- The far end of an edge followed from `node`, resolved to its current
-- version, if the edge may be followed: recorded and not tombstoned (as of),
-- leading to a visible node other than `node` itself. No row otherwise.
-- OFFSET 0 keeps the resolved end computed once per edge.
CREATE OR REPLACE FUNCTION memstore.live_end(
    ns bigint, edge bigint, recorded timestamptz, far_end bigint, node bigint,
    ceiling int, as_of timestamptz
) RETURNS TABLE (far bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT v.far
    FROM (SELECT CASE WHEN (SELECT s.new_id FROM memstore.supersessions s
                            WHERE s.namespace_id = ns AND s.old_id = far_end
                              AND (as_of IS NULL OR s.at <= as_of)) IS NULL
                      THEN far_end
                      -- Revised: most ends were revised once, which two index
                      -- probes settle; a longer chain is walked by
                      -- current_version() (a recursive query, ~50 us a call).
                      ELSE (SELECT CASE WHEN s2.new_id IS NULL THEN s1.new_id
                                        ELSE memstore.current_version(ns, s2.new_id, as_of) END
                            FROM memstore.supersessions s1
                            LEFT JOIN memstore.supersessions s2
                                   ON s2.namespace_id = ns AND s2.old_id = s1.new_id
                                  AND (as_of IS NULL OR s2.at <= as_of)
                            WHERE s1.namespace_id = ns AND s1.old_id = far_end
                              AND (as_of IS NULL OR s1.at <= as_of)) END AS far
          OFFSET 0) AS v
    WHERE v.far <> node
      AND (as_of IS NULL OR recorded <= as_of)
      AND (SELECT t.id FROM memstore.tombstones t
           WHERE t.namespace_id = ns AND t.edge_id = edge
             AND (as_of IS NULL OR t.at <= as_of)) IS NULL
      AND ((ceiling IS NULL AND as_of IS NULL) OR (
               SELECT n.id FROM memstore.nodes n
               WHERE n.namespace_id = ns AND n.id = v.far
                 AND (ceiling IS NULL OR n.privacy <= ceiling)
                 AND (as_of IS NULL OR n.recorded_at <= as_of)) IS NOT NULL)
      AND (SELECT t.id FROM memstore.tombstones t
           WHERE t.namespace_id = ns AND t.node_id = v.far
             AND (as_of IS NULL OR t.at <= as_of)) IS NULL
      -- Redaction is rare (erasure of personal data): a namespace without any
      -- is checked once per statement (an InitPlan), not once per edge.
      AND ((SELECT r.id FROM memstore.redactions r WHERE r.namespace_id = ns LIMIT 1) IS NULL
           OR (SELECT r.id FROM memstore.redactions r
               WHERE r.namespace_id = ns AND r.node_id = v.far) IS NULL)
$$;

-- The fan-out cap: the heaviest live edges of version `version` (standing for
-- node `node`) by effective weight w_eff = 1 - (1 - weight)(1 - hebbian),
-- ties by edge id, at most `fanout`. For each direction it reads the
-- heaviest by authored weight in index order, stopping at the cap, plus the
-- learned edges (hebbian_weight > 0) from edge_state: together they hold the
-- top `fanout` by effective weight, since learning only raises a weight.
-- Liveness is checked before the cap, so forgotten edges do not use it up.
-- An edge's learned weight is the one its learned row brings (every learned
-- edge of the version is among those rows); an edge found only in index order
-- has none. Grouping by edge keeps each edge once with its learned weight,
-- without probing edge_state once more per edge.
CREATE OR REPLACE FUNCTION memstore.heaviest_edges(
    ns bigint, version bigint, node bigint, fanout int, both_ways boolean,
    ceiling int, as_of timestamptz
) RETURNS TABLE (edge_id bigint, dst bigint, weight real, hebb real, inhibitory boolean,
                 relation text, reverse boolean)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT c.edge_id, c.far, c.weight, max(c.hebb), c.inhibitory, c.relation, c.reverse
    FROM (
        (SELECT e.id AS edge_id, f.far, e.weight, 0::real AS hebb, e.inhibitory, e.relation,
                false AS reverse
         FROM memstore.edges e
         CROSS JOIN LATERAL memstore.live_end(
             ns, e.id, e.recorded_at, e.dst, node, ceiling, as_of) AS f
         WHERE e.namespace_id = ns AND e.src = version
         ORDER BY e.weight DESC, e.id
         LIMIT fanout)
        UNION ALL
        (SELECT e.id, f.far, e.weight, ls.hebbian_weight, e.inhibitory, e.relation, false
         FROM memstore.edge_state ls
         JOIN memstore.edges e ON e.namespace_id = ns AND e.id = ls.edge_id
         CROSS JOIN LATERAL memstore.live_end(
             ns, e.id, e.recorded_at, e.dst, node, ceiling, as_of) AS f
         WHERE ls.namespace_id = ns AND ls.src = version AND ls.hebbian_weight > 0)
        UNION ALL
        (SELECT e.id, f.far, e.weight, 0::real, e.inhibitory, e.relation, true
         FROM memstore.edges e
         CROSS JOIN LATERAL memstore.live_end(
             ns, e.id, e.recorded_at, e.src, node, ceiling, as_of) AS f
         WHERE both_ways AND e.namespace_id = ns AND e.dst = version
         ORDER BY e.weight DESC, e.id
         LIMIT fanout)
        UNION ALL
        (SELECT e.id, f.far, e.weight, ls.hebbian_weight, e.inhibitory, e.relation, true
         FROM memstore.edge_state ls
         JOIN memstore.edges e ON e.namespace_id = ns AND e.id = ls.edge_id
         CROSS JOIN LATERAL memstore.live_end(
             ns, e.id, e.recorded_at, e.src, node, ceiling, as_of) AS f
         WHERE both_ways AND ls.namespace_id = ns AND ls.dst = version
           AND ls.hebbian_weight > 0)
    ) AS c
    GROUP BY c.edge_id, c.far, c.weight, c.inhibitory, c.relation, c.reverse
    ORDER BY 1 - (1 - c.weight) * (1 - max(c.hebb)) DESC, c.edge_id, c.reverse
    LIMIT fanout
$$;

-- The fan-out cap of a node with no earlier versions and no learned edges
-- (learning only ever touches the edges between working-memory nodes, so
-- that is most nodes): every effective weight is its authored weight, so the
-- heaviest live edges in index order are already the answer — no learned
-- rows to merge, no grouping, no re-sort by effective weight. The same edges,
-- in the same order, as heaviest_edges() returns for such a node (with both
-- directions, an edge cannot be found both ways: its far end would be the
-- node itself).
CREATE OR REPLACE FUNCTION memstore.plain_edges(
    ns bigint, node bigint, fanout int, both_ways boolean, ceiling int, as_of timestamptz
) RETURNS TABLE (edge_id bigint, dst bigint, weight real, hebb real, inhibitory boolean,
                 relation text, reverse boolean)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    (SELECT e.id, f.far, e.weight, 0::real, e.inhibitory, e.relation, false
     FROM memstore.edges e
     CROSS JOIN LATERAL memstore.live_end(
         ns, e.id, e.recorded_at, e.dst, node, ceiling, as_of) AS f
     WHERE NOT both_ways AND e.namespace_id = ns AND e.src = node
     ORDER BY e.weight DESC, e.id
     LIMIT fanout)
    UNION ALL
    (SELECT c.edge_id, c.far, c.weight, 0::real, c.inhibitory, c.relation, c.reverse
     FROM ((SELECT e.id AS edge_id, f.far, e.weight, e.inhibitory, e.relation,
                   false AS reverse
            FROM memstore.edges e
            CROSS JOIN LATERAL memstore.live_end(
                ns, e.id, e.recorded_at, e.dst, node, ceiling, as_of) AS f
            WHERE both_ways AND e.namespace_id = ns AND e.src = node
            ORDER BY e.weight DESC, e.id
            LIMIT fanout)
           UNION ALL
           (SELECT e.id, f.far, e.weight, e.inhibitory, e.relation, true
            FROM memstore.edges e
            CROSS JOIN LATERAL memstore.live_end(
                ns, e.id, e.recorded_at, e.src, node, ceiling, as_of) AS f
            WHERE both_ways AND e.namespace_id = ns AND e.dst = node
            ORDER BY e.weight DESC, e.id
            LIMIT fanout)) AS c
     ORDER BY c.weight DESC, c.edge_id, c.reverse
     LIMIT fanout)
$$;

-- The pull, hop by hop: seeds -> each hop's frontier expanded once (its nodes'
-- capped edges) -> every reached node with its similarity to the query
-- (computed here, next to the vectors: they never travel) and its access ring.
--
-- A loop, not a recursive CTE: the CTE's UNION de-duplicated (version, node,
-- depth) rows, so a node reached at two depths was expanded twice, and the
-- nodes of the inner hops had their edges read and checked once by the walk
-- and once more for the result. Here a hop's frontier is the set of nodes first
-- reached (through an excitatory edge) in the hop before, each expanded exactly
-- once at its least depth; the edges found are the result. The seeds are always
-- expanded (so depth 0 and 1 both return the seeds' edges, as before).
-- Being STABLE, every statement of the function reads the calling query's
-- snapshot: the hops see one state of the store.
--
-- The seeds are p_seeds and p_given, any version of a node (each stands for
-- its current version, as of). For the ids in p_given, the caller's own seeds,
-- it also reports what the caller must check before it may use them, in the
-- same round trip: each one's current version (as of), whether the id is a
-- node of this namespace, and whether that current version is live now (not
-- forgotten, not redacted).
--
-- Times come back as they are — when each node was recorded, each remembered
-- access, and `moment`, the time the activation is for (as_of, else now()) —
-- and the caller turns them into ages: extract(epoch ...) is numeric
-- arithmetic, 0.6 us a value (1.7 ms of a 3-hop pull reaching 3k nodes).
CREATE OR REPLACE FUNCTION memstore.neighbourhood_v3(
    p_ns bigint, p_seeds bigint[], p_given bigint[], p_depth int, p_fanout int,
    p_both boolean, p_privacy int, p_as_of timestamptz, p_vector vector, p_model text
) RETURNS TABLE (
    edge_src bigint[], edge_dst bigint[], edge_id bigint[], edge_weight real[],
    edge_hebb real[], edge_inhibitory boolean[], edge_relation text[], edge_reverse boolean[],
    edge_depth int[],
    node_id bigint[], node_depth int[], node_layer smallint[], node_type text[],
    node_label text[], node_tier text[], node_importance real[], node_decay_rate real[],
    node_recorded timestamptz[], node_similarity float8[],
    access_node bigint[], access_at timestamptz[],
    given_current bigint[], given_known boolean[], given_live boolean[],
    moment timestamptz
)
-- Always the cached generic plans: left to choose, the plan cache sometimes
-- kept planning the hop statements afresh on every call (custom plans; the
-- pull then cost 2.4x the CPU at 10k nodes, 2 hops). The statements are
-- written for the generic plan (see the as_of note in the loop).
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    t_moment timestamptz := coalesce(p_as_of, now());
    seeds bigint[];
    frontier bigint[];  -- the nodes expanded in this hop
    walked bigint[];    -- every node expanded so far or queued to be
    special bigint[];   -- the frontier's nodes with earlier versions or learned edges
    -- every reached node, and what is read about it
    r_id bigint[]; r_depth int[];
    n_id bigint[]; n_layer smallint[]; n_type text[]; n_label text[]; n_tier text[];
    n_importance real[]; n_decay_rate real[]; n_recorded timestamptz[]; n_similarity float8[];
    hop int := 0;
    g_current bigint[] := '{}'; g_known boolean[] := '{}'; g_live boolean[] := '{}';
    -- this hop's edges
    h_src bigint[]; h_dst bigint[]; h_id bigint[]; h_weight real[]; h_hebb real[];
    h_inhibitory boolean[]; h_relation text[]; h_reverse boolean[];
    -- every hop's edges
    e_src bigint[] := '{}'; e_dst bigint[] := '{}'; e_id bigint[] := '{}';
    e_weight real[] := '{}'; e_hebb real[] := '{}'; e_inhibitory boolean[] := '{}';
    e_relation text[] := '{}'; e_reverse boolean[] := '{}'; e_depth int[] := '{}';
BEGIN
    IF cardinality(p_given) > 0 THEN
        SELECT array_agg(c.id ORDER BY g.ord),
               array_agg((SELECT n.id FROM memstore.nodes n
                          WHERE n.namespace_id = p_ns AND n.id = g.id) IS NOT NULL
                         ORDER BY g.ord),
               array_agg((SELECT n.id FROM memstore.nodes n
                          WHERE n.namespace_id = p_ns AND n.id = c.id) IS NOT NULL
                         AND (SELECT t.id FROM memstore.tombstones t
                              WHERE t.namespace_id = p_ns AND t.node_id = c.id) IS NULL
                         AND (SELECT r.id FROM memstore.redactions r
                              WHERE r.namespace_id = p_ns AND r.node_id = c.id) IS NULL
                         ORDER BY g.ord)
        INTO g_current, g_known, g_live
        FROM unnest(p_given) WITH ORDINALITY AS g(id, ord)
        CROSS JOIN LATERAL memstore.current_of(p_ns, g.id, p_as_of) AS c;
    END IF;
    SELECT coalesce(array_agg(DISTINCT c.id), '{}') INTO seeds
    FROM unnest(p_seeds || p_given) AS seed(id)
    CROSS JOIN LATERAL memstore.current_of(p_ns, seed.id, p_as_of) AS c
    WHERE ((p_privacy IS NULL AND p_as_of IS NULL) OR (
              SELECT n.id FROM memstore.nodes n
              WHERE n.namespace_id = p_ns AND n.id = c.id
                AND (p_privacy IS NULL OR n.privacy <= p_privacy)
                AND (p_as_of IS NULL OR n.recorded_at <= p_as_of)) IS NOT NULL)
      AND (SELECT t.id FROM memstore.tombstones t
           WHERE t.namespace_id = p_ns AND t.node_id = c.id
             AND (p_as_of IS NULL OR t.at <= p_as_of)) IS NULL
      AND (SELECT r.id FROM memstore.redactions r
           WHERE r.namespace_id = p_ns AND r.node_id = c.id) IS NULL;
    frontier := seeds;
    walked := seeds;
    LOOP
        hop := hop + 1;
        -- The frontier's nodes that have earlier versions or learned edges
        -- (whenever recorded: a superset is safe) take heaviest_edges(), the
        -- rest plain_edges() -- the same edges, without merging learned rows
        -- per node. One index scan per table for the whole hop instead of
        -- three probes per node (0.85x the hop's time at 3 hops, 100k nodes).
        SELECT coalesce(array_agg(DISTINCT x.id), '{}') INTO special
        FROM (SELECT p.new_id
              FROM memstore.supersessions p
              WHERE p.namespace_id = p_ns AND p.new_id = ANY (frontier)
              UNION ALL
              SELECT ls.src
              FROM memstore.edge_state ls
              WHERE ls.namespace_id = p_ns AND ls.src = ANY (frontier)
                AND ls.hebbian_weight > 0
              UNION ALL
              SELECT ls.dst
              FROM memstore.edge_state ls
              WHERE p_both AND ls.namespace_id = p_ns AND ls.dst = ANY (frontier)
                AND ls.hebbian_weight > 0) AS x(id);
        -- Each node's edges are read through every version it has (the cap
        -- applies per version). The same statement twice: with a literal NULL
        -- for as_of the planner drops the edges' recorded_at check even from
        -- the cached generic plan, so the edges are read by an index-only scan
        -- of ix_edges_out; with p_as_of (a parameter) every edge costs a heap
        -- fetch for recorded_at.
        IF p_as_of IS NULL AND cardinality(special) = 0 THEN
            -- The usual hop: no node needs heaviest_edges(). Its edges carry no
            -- learned weight, and are all followed forwards unless both ways:
            -- those columns are filled in, not aggregated (an aggregate costs
            -- ~0.1 us a row, 0.3 ms of a 3-hop pull at 200k nodes).
            SELECT coalesce(array_agg(f.node), '{}'), coalesce(array_agg(x.dst), '{}'),
                   coalesce(array_agg(x.edge_id), '{}'), coalesce(array_agg(x.weight), '{}'),
                   coalesce(array_agg(x.inhibitory), '{}'),
                   coalesce(array_agg(x.relation), '{}'),
                   array_agg(x.reverse) FILTER (WHERE p_both)
            INTO h_src, h_dst, h_id, h_weight, h_inhibitory, h_relation, h_reverse
            FROM unnest(frontier) AS f(node)
            CROSS JOIN LATERAL memstore.plain_edges(
                p_ns, f.node, p_fanout, p_both, p_privacy, NULL) AS x;
            h_hebb := array_fill(0::real, ARRAY[cardinality(h_src)]);
            h_reverse := coalesce(h_reverse, array_fill(false, ARRAY[cardinality(h_src)]));
        ELSIF p_as_of IS NULL THEN
            SELECT coalesce(array_agg(f.node), '{}'), coalesce(array_agg(x.dst), '{}'),
                   coalesce(array_agg(x.edge_id), '{}'), coalesce(array_agg(x.weight), '{}'),
                   coalesce(array_agg(x.hebb), '{}'), coalesce(array_agg(x.inhibitory), '{}'),
                   coalesce(array_agg(x.relation), '{}'), coalesce(array_agg(x.reverse), '{}')
            INTO h_src, h_dst, h_id, h_weight, h_hebb, h_inhibitory, h_relation, h_reverse
            FROM unnest(frontier) AS f(node)
            CROSS JOIN LATERAL (
                SELECT x.* FROM memstore.plain_edges(
                    p_ns, f.node, p_fanout, p_both, p_privacy, NULL) AS x
                WHERE NOT f.node = ANY (special)
                UNION ALL
                SELECT x.* FROM memstore.own_versions(p_ns, f.node, NULL) AS v(id)
                CROSS JOIN LATERAL memstore.heaviest_edges(
                    p_ns, v.id, f.node, p_fanout, p_both, p_privacy, NULL) AS x
                WHERE f.node = ANY (special)) AS x;
        ELSE
            SELECT coalesce(array_agg(f.node), '{}'), coalesce(array_agg(x.dst), '{}'),
                   coalesce(array_agg(x.edge_id), '{}'), coalesce(array_agg(x.weight), '{}'),
                   coalesce(array_agg(x.hebb), '{}'), coalesce(array_agg(x.inhibitory), '{}'),
                   coalesce(array_agg(x.relation), '{}'), coalesce(array_agg(x.reverse), '{}')
            INTO h_src, h_dst, h_id, h_weight, h_hebb, h_inhibitory, h_relation, h_reverse
            FROM unnest(frontier) AS f(node)
            CROSS JOIN LATERAL (
                SELECT x.* FROM memstore.plain_edges(
                    p_ns, f.node, p_fanout, p_both, p_privacy, p_as_of) AS x
                WHERE NOT f.node = ANY (special)
                UNION ALL
                SELECT x.* FROM memstore.own_versions(p_ns, f.node, p_as_of) AS v(id)
                CROSS JOIN LATERAL memstore.heaviest_edges(
                    p_ns, v.id, f.node, p_fanout, p_both, p_privacy, p_as_of) AS x
                WHERE f.node = ANY (special)) AS x;
        END IF;
        e_src := e_src || h_src;
        e_dst := e_dst || h_dst;
        e_id := e_id || h_id;
        e_weight := e_weight || h_weight;
        e_hebb := e_hebb || h_hebb;
        e_inhibitory := e_inhibitory || h_inhibitory;
        e_relation := e_relation || h_relation;
        e_reverse := e_reverse || h_reverse;
        e_depth := e_depth || array_fill(hop, ARRAY[cardinality(h_src)]);
        EXIT WHEN hop >= p_depth;
        -- Only excitatory edges are walked through; a node already expanded
        -- (or queued) is not expanded again.
        SELECT coalesce(array_agg(d.id), '{}') INTO frontier
        FROM (SELECT u.id FROM unnest(h_dst, h_inhibitory) AS u(id, inhibitory)
              WHERE NOT u.inhibitory
              EXCEPT
              SELECT w.id FROM unnest(walked) AS w(id)) AS d;
        EXIT WHEN cardinality(frontier) = 0;
        walked := walked || frontier;
    END LOOP;

    -- Every reached node once, at its least depth, in id order: one sort
    -- (grouping, then sorting once per aggregate, took 1.3 ms for 3k edges).
    SELECT array_agg(r.id), array_agg(r.depth)
    INTO r_id, r_depth
    FROM (SELECT DISTINCT ON (u.id) u.id, u.depth
          FROM (SELECT s.id, 0 FROM unnest(seeds) AS s(id)
                UNION ALL
                SELECT d.id, d.depth FROM unnest(e_dst, e_depth) AS d(id, depth)) AS u(id, depth)
          ORDER BY u.id, u.depth) AS r;
    -- Their rows, and their vectors' similarities, each read by one index
    -- scan over the sorted ids (= ANY) rather than one probe per node: 0.75x
    -- the time for the rows of 2.7k nodes, 0.9x for their vectors, most of
    -- them not in shared buffers. The arrays line up with r_id when every
    -- reached node's row and vector were found (a row the caller may not see,
    -- a node without a vector: the probes below instead).
    SELECT array_agg(n.id), array_agg(n.layer), array_agg(n.node_type), array_agg(n.label),
           array_agg(n.tier), array_agg(n.importance), array_agg(n.decay_rate),
           array_agg(n.recorded_at)
    INTO n_id, n_layer, n_type, n_label, n_tier, n_importance, n_decay_rate, n_recorded
    FROM (SELECT n.id, n.layer, n.node_type, n.label, n.tier, n.importance, n.decay_rate,
                 n.recorded_at
          FROM memstore.nodes n
          WHERE n.namespace_id = p_ns AND n.id = ANY (r_id)
          ORDER BY n.id) AS n;
    IF p_vector IS NULL THEN
        -- Without a query vector there is no similarity: no vector is read.
        n_similarity := array_fill(NULL::float8, ARRAY[coalesce(cardinality(n_id), 0)]);
    ELSE
        SELECT array_agg(e.similarity) INTO n_similarity
        FROM (SELECT (1 - (e.embedding <=> p_vector))::float8 AS similarity
              FROM memstore.embeddings e
              WHERE e.namespace_id = p_ns AND e.node_id = ANY (r_id) AND e.model = p_model
              ORDER BY e.node_id) AS e;
    END IF;
    IF cardinality(n_id) = cardinality(r_id)
       AND cardinality(n_similarity) = cardinality(r_id) THEN
        RETURN QUERY
        SELECT e_src, e_dst, e_id, e_weight, e_hebb, e_inhibitory, e_relation, e_reverse,
               e_depth, n_id, r_depth, n_layer, n_type, n_label, n_tier, n_importance,
               n_decay_rate, n_recorded, n_similarity, a.*, g_current, g_known, g_live,
               t_moment
        FROM (SELECT array_agg(st.node_id), array_agg(t.at)
              FROM memstore.node_state st
              CROSS JOIN LATERAL unnest(st.access_ring) AS t(at)
              WHERE st.namespace_id = p_ns AND st.node_id = ANY (r_id)
                AND t.at <= t_moment) AS a;
        RETURN;
    END IF;

    RETURN QUERY
    WITH reached AS MATERIALIZED (
        SELECT r.id, min(r.depth) AS depth
        FROM (SELECT s.id, 0 AS depth FROM unnest(seeds) AS s(id)
              UNION ALL
              SELECT u.id, u.depth FROM unnest(e_dst, e_depth) AS u(id, depth)) AS r
        GROUP BY r.id
    )
    SELECT e_src, e_dst, e_id, e_weight, e_hebb, e_inhibitory, e_relation, e_reverse, e_depth,
           v.*, a.*, g_current, g_known, g_live, t_moment
    FROM (SELECT array_agg(n.id), array_agg(m.depth), array_agg(n.layer),
                 array_agg(n.node_type), array_agg(n.label), array_agg(n.tier),
                 array_agg(n.importance), array_agg(n.decay_rate),
                 array_agg(n.recorded_at), array_agg(emb.similarity)
          -- In id order: the probes below then walk their indexes, and the
          -- heap, in order.
          FROM (SELECT r.id, r.depth FROM reached r ORDER BY r.id) AS m
          -- One index probe per reached node (OFFSET 0 keeps it a probe): once
          -- the planner knew how many nodes were reached it chose to hash the
          -- whole namespace's nodes instead, 5x slower at 3k of 100k.
          CROSS JOIN LATERAL (
              SELECT n.id, n.layer, n.node_type, n.label, n.tier, n.importance, n.decay_rate,
                     n.recorded_at
              FROM memstore.nodes n
              WHERE n.namespace_id = p_ns AND n.id = m.id
              OFFSET 0) AS n
          -- Without a query vector there is no similarity: no vector is read.
          LEFT JOIN LATERAL (
              SELECT (1 - (e.embedding <=> p_vector))::float8 AS similarity
              FROM memstore.embeddings e
              WHERE p_vector IS NOT NULL
                AND e.namespace_id = p_ns AND e.node_id = m.id AND e.model = p_model
              OFFSET 0) AS emb ON true
         ) AS v,
         (SELECT array_agg(st.node_id), array_agg(t.at)
          FROM memstore.node_state st
          CROSS JOIN LATERAL unnest(st.access_ring) AS t(at)
          WHERE st.namespace_id = p_ns AND st.node_id IN (SELECT r.id FROM reached r)
            AND t.at <= t_moment) AS a;
END;
$$;

-- The pull as revision 0015 called it (ages in seconds instead of the times
-- themselves, no moment), kept for code of that revision while a deploy
-- replaces it.
CREATE OR REPLACE FUNCTION memstore.neighbourhood_v2(
    p_ns bigint, p_seeds bigint[], p_given bigint[], p_depth int, p_fanout int,
    p_both boolean, p_privacy int, p_as_of timestamptz, p_vector vector, p_model text
) RETURNS TABLE (
    edge_src bigint[], edge_dst bigint[], edge_id bigint[], edge_weight real[],
    edge_hebb real[], edge_inhibitory boolean[], edge_relation text[], edge_reverse boolean[],
    edge_depth int[],
    node_id bigint[], node_depth int[], node_layer smallint[], node_type text[],
    node_label text[], node_tier text[], node_importance real[], node_decay_rate real[],
    node_age float8[], node_similarity float8[],
    access_node bigint[], access_age float8[],
    given_current bigint[], given_known boolean[], given_live boolean[]
)
LANGUAGE sql STABLE AS $$
    SELECT n.edge_src, n.edge_dst, n.edge_id, n.edge_weight, n.edge_hebb, n.edge_inhibitory,
           n.edge_relation, n.edge_reverse, n.edge_depth, n.node_id, n.node_depth,
           n.node_layer, n.node_type, n.node_label, n.node_tier, n.node_importance,
           n.node_decay_rate,
           (SELECT array_agg(extract(epoch FROM n.moment - t.at)::float8 ORDER BY t.ord)
            FROM unnest(n.node_recorded) WITH ORDINALITY AS t(at, ord)),
           n.node_similarity, n.access_node,
           (SELECT array_agg(extract(epoch FROM n.moment - t.at)::float8 ORDER BY t.ord)
            FROM unnest(n.access_at) WITH ORDINALITY AS t(at, ord)),
           n.given_current, n.given_known, n.given_live
    FROM memstore.neighbourhood_v3(p_ns, p_seeds, p_given, p_depth, p_fanout, p_both,
                                   p_privacy, p_as_of, p_vector, p_model) AS n
$$;

-- The pull as revision 0013 called it (no seed report), kept for code of that
-- revision while a deploy replaces it.
CREATE OR REPLACE FUNCTION memstore.neighbourhood(
    p_ns bigint, p_seeds bigint[], p_depth int, p_fanout int, p_both boolean,
    p_privacy int, p_as_of timestamptz, p_vector vector, p_model text
) RETURNS TABLE (
    edge_src bigint[], edge_dst bigint[], edge_id bigint[], edge_weight real[],
    edge_hebb real[], edge_inhibitory boolean[], edge_relation text[], edge_reverse boolean[],
    edge_depth int[],
    node_id bigint[], node_depth int[], node_layer smallint[], node_type text[],
    node_label text[], node_tier text[], node_importance real[], node_decay_rate real[],
    node_age float8[], node_similarity float8[],
    access_node bigint[], access_age float8[]
)
LANGUAGE sql STABLE AS $$
    SELECT n.edge_src, n.edge_dst, n.edge_id, n.edge_weight, n.edge_hebb, n.edge_inhibitory,
           n.edge_relation, n.edge_reverse, n.edge_depth, n.node_id, n.node_depth,
           n.node_layer, n.node_type, n.node_label, n.node_tier, n.node_importance,
           n.node_decay_rate, n.node_age, n.node_similarity, n.access_node, n.access_age
    FROM memstore.neighbourhood_v2(p_ns, p_seeds, '{}', p_depth, p_fanout, p_both, p_privacy,
                                   p_as_of, p_vector, p_model) AS n
$$;

-- Working memory's node rows, with each node's status (memstore/graph/rows.py
-- reads the same columns). A PL/pgSQL function for its cached plan: composed
-- and planned per call, the statement cost more than the round trip.
CREATE OR REPLACE FUNCTION memstore.node_rows(p_ns bigint, p_ids bigint[])
RETURNS TABLE (
    id bigint, kind text, node_type text, tier text, layer smallint, label text,
    content text, data jsonb, importance real, confidence real, decay_rate real,
    privacy smallint, protected boolean, subject text, scope text, source text,
    actor text, run_id text, observed_at timestamptz, valid_from timestamptz,
    valid_to timestamptz, recorded_at timestamptz,
    superseded_by bigint, tombstoned boolean, redacted boolean, tags text[]
)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT n.id, n.kind, n.node_type, n.tier, n.layer, n.label, n.content, n.data,
           n.importance, n.confidence, n.decay_rate, n.privacy, n.protected, n.subject,
           n.scope, n.source, n.actor, n.run_id, n.observed_at, n.valid_from, n.valid_to,
           n.recorded_at,
           (SELECT s.new_id FROM memstore.supersessions s
            WHERE s.namespace_id = p_ns AND s.old_id = n.id),
           (SELECT t.id FROM memstore.tombstones t
            WHERE t.namespace_id = p_ns AND t.node_id = n.id) IS NOT NULL,
           (SELECT r.id FROM memstore.redactions r
            WHERE r.namespace_id = p_ns AND r.node_id = n.id) IS NOT NULL,
           n.tags
    FROM memstore.nodes n
    WHERE n.namespace_id = p_ns AND n.id = ANY (p_ids);
END;
$$;
