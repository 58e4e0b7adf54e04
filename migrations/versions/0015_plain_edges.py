"""The pull: plain edges for plain nodes, inlined seed resolution, reached nodes by one scan.

Three changes to memstore.neighbourhood_v2() (same signature, same results):

- Each hop first finds, with one index scan per table, the frontier's nodes
  that have earlier versions or learned edges; only those take
  heaviest_edges() (its learned rows merged, grouped and re-sorted per node).
  The others take the new plain_edges(): their heaviest live edges in index
  order, which is effective-weight order when nothing was learned; a hop
  without such nodes runs plain_edges() alone. 0.85x the time of a 3-hop
  pull's last hop at 100k nodes, 0.7x the seeds' hop.
- The seeds resolve through the new current_of(), an inlined set-returning
  form of resolved_version(), and their visibility is checked inline: no
  function execution per seed (0.66 -> 0.44 ms for 10 given seeds).
- The reached nodes' rows and vectors are each read by one index scan over
  the sorted ids (= ANY) instead of one probe per node; the arrays line up
  with the reached ids whenever every row and vector was found, and the
  per-node probes of revision 0014 remain for the other cases (a row the
  caller may not see, a node without a vector). 0.8x the final read.

A frozen copy of the changed parts of sql/05_neighbourhood.sql as they are at
this revision.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02

"""

from collections.abc import Sequence

from alembic import context, op
from alembic.script import ScriptDirectory

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/05_neighbourhood.sql: current_of(), plain_edges(), neighbourhood_v2()
NEIGHBOURHOOD_SQL = r"""
-- resolved_version() as a set-returning function of one row: PostgreSQL
-- inlines it into the calling query (a scalar SQL function with a subquery is
-- a separate function execution per call instead).
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
-- Always the cached generic plans: left to choose, the plan cache sometimes
-- kept planning the hop statements afresh on every call (custom plans; the
-- pull then cost 2.4x the CPU at 10k nodes, 2 hops). The statements are
-- written for the generic plan (see the as_of note in the loop).
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    moment timestamptz := coalesce(p_as_of, now());
    seeds bigint[];
    frontier bigint[];  -- the nodes expanded in this hop
    walked bigint[];    -- every node expanded so far or queued to be
    special bigint[];   -- the frontier's nodes with earlier versions or learned edges
    -- every reached node, and what is read about it
    r_id bigint[]; r_depth int[];
    n_id bigint[]; n_layer smallint[]; n_type text[]; n_label text[]; n_tier text[];
    n_importance real[]; n_decay_rate real[]; n_age float8[]; n_similarity float8[];
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
            -- The usual hop: no node needs heaviest_edges().
            SELECT coalesce(array_agg(f.node), '{}'), coalesce(array_agg(x.dst), '{}'),
                   coalesce(array_agg(x.edge_id), '{}'), coalesce(array_agg(x.weight), '{}'),
                   coalesce(array_agg(x.hebb), '{}'), coalesce(array_agg(x.inhibitory), '{}'),
                   coalesce(array_agg(x.relation), '{}'), coalesce(array_agg(x.reverse), '{}')
            INTO h_src, h_dst, h_id, h_weight, h_hebb, h_inhibitory, h_relation, h_reverse
            FROM unnest(frontier) AS f(node)
            CROSS JOIN LATERAL memstore.plain_edges(
                p_ns, f.node, p_fanout, p_both, p_privacy, NULL) AS x;
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

    -- Every reached node once, at its least depth, in id order.
    SELECT array_agg(r.id ORDER BY r.id), array_agg(r.depth ORDER BY r.id)
    INTO r_id, r_depth
    FROM (SELECT u.id, min(u.depth) AS depth
          FROM (SELECT s.id, 0 FROM unnest(seeds) AS s(id)
                UNION ALL
                SELECT d.id, d.depth FROM unnest(e_dst, e_depth) AS d(id, depth)) AS u(id, depth)
          GROUP BY u.id) AS r;
    -- Their rows, and their vectors' similarities, each read by one index
    -- scan over the sorted ids (= ANY) rather than one probe per node: 0.75x
    -- the time for the rows of 2.7k nodes, 0.9x for their vectors, most of
    -- them not in shared buffers. The arrays line up with r_id when every
    -- reached node's row and vector were found (a row the caller may not see,
    -- a node without a vector: the probes below instead).
    SELECT array_agg(n.id), array_agg(n.layer), array_agg(n.node_type), array_agg(n.label),
           array_agg(n.tier), array_agg(n.importance), array_agg(n.decay_rate),
           array_agg(extract(epoch FROM moment - n.recorded_at)::float8)
    INTO n_id, n_layer, n_type, n_label, n_tier, n_importance, n_decay_rate, n_age
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
               n_decay_rate, n_age, n_similarity, a.*, g_current, g_known, g_live
        FROM (SELECT array_agg(st.node_id),
                     array_agg(extract(epoch FROM moment - t.at)::float8)
              FROM memstore.node_state st
              CROSS JOIN LATERAL unnest(st.access_ring) AS t(at)
              WHERE st.namespace_id = p_ns AND st.node_id = ANY (r_id)
                AND t.at <= moment) AS a;
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
           v.*, a.*, g_current, g_known, g_live
    FROM (SELECT array_agg(n.id), array_agg(m.depth), array_agg(n.layer),
                 array_agg(n.node_type), array_agg(n.label), array_agg(n.tier),
                 array_agg(n.importance), array_agg(n.decay_rate),
                 array_agg(extract(epoch FROM moment - n.recorded_at)::float8),
                 array_agg(emb.similarity)
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
         (SELECT array_agg(st.node_id), array_agg(extract(epoch FROM moment - t.at)::float8)
          FROM memstore.node_state st
          CROSS JOIN LATERAL unnest(st.access_ring) AS t(at)
          WHERE st.namespace_id = p_ns AND st.node_id IN (SELECT r.id FROM reached r)
            AND t.at <= moment) AS a;
END;
$$;
"""


def upgrade() -> None:
    op.execute(NEIGHBOURHOOD_SQL)


def downgrade() -> None:
    # neighbourhood_v2() as revision 0014 froze it, then the new helpers go.
    scripts = ScriptDirectory.from_config(context.config)
    previous = scripts.get_revision("0014")
    assert previous is not None
    op.execute(previous.module.NEIGHBOURHOOD_SQL)
    op.execute("DROP FUNCTION memstore.plain_edges(bigint, bigint, int, boolean, int, timestamptz)")
    op.execute("DROP FUNCTION memstore.current_of(bigint, bigint, timestamptz)")
