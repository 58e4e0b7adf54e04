"""The neighbourhood pull hop by hop: each node expanded once, at its least depth.

memstore.neighbourhood() walks with a PL/pgSQL loop instead of a recursive CTE.
The CTE expanded a node once per depth it was reached at, and read and checked
the inner hops' edges twice (once in the walk, once for the result); without a
query vector it still read every reached node's embedding; and its cached
generic plan fetched every edge's heap row for an as_of check that a call
without as_of does not make. Same results, same
signature; the helper functions are unchanged. A frozen copy of the
neighbourhood() part of sql/05_neighbourhood.sql as it was at this revision.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02

"""

from collections.abc import Sequence

from alembic import context, op
from alembic.script import ScriptDirectory

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/05_neighbourhood.sql, memstore.neighbourhood()
NEIGHBOURHOOD_SQL = r"""
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
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    moment timestamptz := coalesce(p_as_of, now());
    seeds bigint[];
    frontier bigint[];  -- the nodes expanded in this hop
    walked bigint[];    -- every node expanded so far or queued to be
    hop int := 0;
    -- this hop's edges
    h_src bigint[]; h_dst bigint[]; h_id bigint[]; h_weight real[]; h_hebb real[];
    h_inhibitory boolean[]; h_relation text[]; h_reverse boolean[];
    -- every hop's edges
    e_src bigint[] := '{}'; e_dst bigint[] := '{}'; e_id bigint[] := '{}';
    e_weight real[] := '{}'; e_hebb real[] := '{}'; e_inhibitory boolean[] := '{}';
    e_relation text[] := '{}'; e_reverse boolean[] := '{}'; e_depth int[] := '{}';
BEGIN
    SELECT coalesce(array_agg(DISTINCT c.id), '{}') INTO seeds
    FROM unnest(p_seeds) AS seed(id)
    CROSS JOIN LATERAL (SELECT memstore.resolved_version(p_ns, seed.id, p_as_of) AS id) AS c
    WHERE memstore.node_visible(p_ns, c.id, p_privacy, p_as_of);
    frontier := seeds;
    walked := seeds;
    LOOP
        hop := hop + 1;
        -- Each node's edges are read through every version it has (the cap
        -- applies per version). The same statement twice: with a literal NULL
        -- for as_of the planner drops the edges' recorded_at check even from
        -- the cached generic plan, so the edges are read by an index-only scan
        -- of ix_edges_out; with p_as_of (a parameter) every edge costs a heap
        -- fetch for recorded_at.
        IF p_as_of IS NULL THEN
            SELECT coalesce(array_agg(f.node), '{}'), coalesce(array_agg(x.dst), '{}'),
                   coalesce(array_agg(x.edge_id), '{}'), coalesce(array_agg(x.weight), '{}'),
                   coalesce(array_agg(x.hebb), '{}'), coalesce(array_agg(x.inhibitory), '{}'),
                   coalesce(array_agg(x.relation), '{}'), coalesce(array_agg(x.reverse), '{}')
            INTO h_src, h_dst, h_id, h_weight, h_hebb, h_inhibitory, h_relation, h_reverse
            FROM unnest(frontier) AS f(node)
            CROSS JOIN LATERAL memstore.own_versions(p_ns, f.node, NULL) AS v(id)
            CROSS JOIN LATERAL memstore.heaviest_edges(
                p_ns, v.id, f.node, p_fanout, p_both, p_privacy, NULL) AS x;
        ELSE
            SELECT coalesce(array_agg(f.node), '{}'), coalesce(array_agg(x.dst), '{}'),
                   coalesce(array_agg(x.edge_id), '{}'), coalesce(array_agg(x.weight), '{}'),
                   coalesce(array_agg(x.hebb), '{}'), coalesce(array_agg(x.inhibitory), '{}'),
                   coalesce(array_agg(x.relation), '{}'), coalesce(array_agg(x.reverse), '{}')
            INTO h_src, h_dst, h_id, h_weight, h_hebb, h_inhibitory, h_relation, h_reverse
            FROM unnest(frontier) AS f(node)
            CROSS JOIN LATERAL memstore.own_versions(p_ns, f.node, p_as_of) AS v(id)
            CROSS JOIN LATERAL memstore.heaviest_edges(
                p_ns, v.id, f.node, p_fanout, p_both, p_privacy, p_as_of) AS x;
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

    RETURN QUERY
    WITH reached AS MATERIALIZED (
        SELECT r.id, min(r.depth) AS depth
        FROM (SELECT s.id, 0 AS depth FROM unnest(seeds) AS s(id)
              UNION ALL
              SELECT u.id, u.depth FROM unnest(e_dst, e_depth) AS u(id, depth)) AS r
        GROUP BY r.id
    )
    SELECT e_src, e_dst, e_id, e_weight, e_hebb, e_inhibitory, e_relation, e_reverse, e_depth,
           v.*, a.*
    FROM (SELECT array_agg(n.id), array_agg(m.depth), array_agg(n.layer),
                 array_agg(n.node_type), array_agg(n.label), array_agg(n.tier),
                 array_agg(n.importance), array_agg(n.decay_rate),
                 array_agg(extract(epoch FROM moment - n.recorded_at)::float8),
                 array_agg(emb.similarity)
          FROM reached m
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
    # The functions as revision 0007 froze them (0008-0012 did not touch them);
    # the helpers it re-creates are the ones in place.
    previous = ScriptDirectory.from_config(context.config).get_revision("0007")
    assert previous is not None
    op.execute(previous.module.NEIGHBOURHOOD_SQL)
