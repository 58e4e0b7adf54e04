-- Recall runs as one statement, one round trip: the semantic candidates
-- (nearest vectors), the lexical candidates (BM25 over full text), both
-- signals for every candidate, and the candidates' rows with their status.
-- Python fuses the two rankings. memstore/recall/__init__.py composes the
-- statement from the fragments below for the mode asked for, so a semantic or
-- lexical recall does not pay for planning the other signal:
--
--   WITH filtered AS NOT MATERIALIZED (<filtered>), <semantic>, <lexical>
--   <select>
--
-- Placeholders: {distance} is the cosine distance, over embedding::vector(dims)
-- to use the model's HNSW index or over the plain column for an exact scan;
-- {model} the model name as a SQL literal, so the partial index matches;
-- {bm25} the BM25 score of row n over query_arrays (BM25 in __init__.py);
-- {document_count} and {matched_nodes} the lexical match, inline or through
-- the row-security-aware functions (fragments at the end);
-- in <select>, {candidates}, {rank_joins}, {semantic_rank}, {lexical_rank},
-- {similarity}, {lexical} and {term_counts} name the signals the mode computed
-- (NULL for the other). A signal a candidate's own search computed is reused
-- (semantic_ranked.distance, lexical_ranked.score); only the other signal is
-- computed for it (similarity_of, bm25).
-- Optional filters arrive as NULL and fold away in the custom plan.

-- filtered --
-- The nodes a recall may return. Inlined into each signal (a CTE used twice
-- would otherwise be materialised for the whole namespace before any index is
-- used).
    SELECT n.namespace_id, n.id
    FROM memstore.nodes n
    WHERE n.namespace_id = %(ns)s
      AND (%(kinds)s::text[] IS NULL OR n.kind = ANY(%(kinds)s::text[]))
      AND (%(node_types)s::text[] IS NULL OR n.node_type = ANY(%(node_types)s::text[]))
      AND (%(tiers)s::text[] IS NULL OR n.tier = ANY(%(tiers)s::text[]))
      -- Every tag asked for (the GIN index ix_nodes_tags serves @>).
      AND (%(tags)s::text[] IS NULL OR n.tags @> %(tags)s::text[])
      AND (%(privacy)s::int IS NULL OR n.privacy <= %(privacy)s::int)
      AND (%(valid_at)s::timestamptz IS NULL
           OR ((n.valid_from IS NULL OR n.valid_from <= %(valid_at)s::timestamptz)
               AND (n.valid_to IS NULL OR n.valid_to > %(valid_at)s::timestamptz)))
      AND (%(as_of)s::timestamptz IS NULL OR n.recorded_at <= %(as_of)s::timestamptz)
      AND (%(include_superseded)s OR NOT EXISTS (
            SELECT 1 FROM memstore.supersessions s
            WHERE s.namespace_id = %(ns)s AND s.old_id = n.id
              AND (%(as_of)s::timestamptz IS NULL OR s.at <= %(as_of)s::timestamptz)))
      AND (%(include_tombstoned)s OR NOT EXISTS (
            SELECT 1 FROM memstore.tombstones t
            WHERE t.namespace_id = %(ns)s AND t.node_id = n.id
              AND (%(as_of)s::timestamptz IS NULL OR t.at <= %(as_of)s::timestamptz)))

-- semantic --
semantic AS MATERIALIZED (
    SELECT e.node_id AS id, {distance} AS distance
    FROM memstore.embeddings e
    -- Both key columns, so the join is a primary-key lookup whatever the statistics.
    JOIN filtered f ON f.namespace_id = e.namespace_id AND f.id = e.node_id
    WHERE e.namespace_id = %(ns)s AND e.model = {model}
    ORDER BY {distance}
    LIMIT %(semantic_limit)s
)

-- semantic_exact --
-- The semantic candidates of an exact search (a small namespace, statement.py
-- EXACT_SEARCH_MAX): the namespace's vectors read through their primary key
-- and sorted, then checked against the filters in distance order until the
-- limit is met. Joined first, every vector paid a node lookup (681 for 50
-- kept), or the planner scanned the whole table's vectors in parallel
-- (docs/benchmark-notes.md, stop 28). Equal distances (the same text, or the
-- hashing embedder's short turns) are ordered by id: they came in whatever
-- order the plan produced, so a plan change could reorder the candidates.
semantic AS MATERIALIZED (
    SELECT c.id, c.distance
    FROM (SELECT e.node_id AS id, {distance} AS distance
          FROM memstore.embeddings e
          WHERE e.namespace_id = %(ns)s AND e.model = {model}
          ORDER BY distance, id
          OFFSET 0) AS c
    JOIN filtered f ON f.namespace_id = %(ns)s AND f.id = c.id
    ORDER BY c.distance, c.id
    LIMIT %(semantic_limit)s
)

-- semantic_ranked --
semantic_ranked AS (
    -- relaxed_order iterative scans may return rows slightly out of order;
    -- equal distances rank by id.
    SELECT id, distance, row_number() OVER (ORDER BY distance, id) AS rank FROM semantic
)

-- lexical --
query_terms AS MATERIALIZED (
    -- The query's lexemes (English stemming, stop words dropped) and their BM25
    -- inverse document frequency in this namespace. A common term's document
    -- count comes from an earlier recall when the client offers it (known_*:
    -- memstore/recall/terms.py); any other term's documents are counted through
    -- the GIN index (document_count_*, below). coalesce() evaluates the count
    -- only when no known count matched.
    SELECT t.term, d.df, k.df IS NULL AS counted,
           -- greatest(): the cached document count may lag behind new documents.
           ln(1 + (greatest(%(doc_count)s, d.df) - d.df + 0.5) / (d.df + 0.5)) AS idf
    FROM (SELECT DISTINCT u.lexeme AS term
          FROM unnest(to_tsvector('english', %(text)s)) AS u) AS t
    LEFT JOIN unnest(%(known_terms)s::text[], %(known_counts)s::bigint[]) AS k (term, df)
           ON k.term = t.term
    -- OFFSET 0 keeps the count a subquery of its own, evaluated once per term:
    -- pulled up, it was inlined into each of df's four uses and counted four
    -- times (EXPLAIN: four SubPlans per term; docs/benchmark-notes.md, stop 28).
    CROSS JOIN LATERAL (SELECT coalesce(k.df, ({document_count})) AS df OFFSET 0) AS d
), query_arrays AS MATERIALIZED (
    -- The same terms and idf as two aligned arrays, for BM25 (BM25 in __init__.py).
    SELECT array_agg(q.term) AS terms, array_agg(q.idf) AS idfs FROM query_terms q
), match_terms AS MATERIALIZED (
    -- The terms a document must share to be scored. A term in many documents
    -- adds little to BM25 (low idf) but makes every one of them a candidate:
    -- one common word once selected 42 percent of a 100k namespace. So candidates
    -- come from the rarer terms only: those in at most match_share of the
    -- documents (MATCH_SHARE in __init__.py), plus, in order of document
    -- frequency, as many more as it takes for the candidates to number at least
    -- the limit (a term in >= limit documents guarantees it) - that one only
    -- up to match_cap documents (hybrid recall: the semantic candidates fill
    -- the rest). Terms join rarest first while the rarer ones' documents number
    -- fewer than match_budget (MATCH_BUDGET in __init__.py), which bounds the
    -- candidates BM25 must score. Every query term still counts in the score.
    SELECT string_agg(quote_literal(q.term), ' | ')::tsquery AS query
    FROM (SELECT r.term, r.df,
                 sum(r.df) OVER (ORDER BY r.df, r.term
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS rarer
          FROM query_terms r) AS q
    WHERE coalesce(q.rarer, 0) < %(match_budget)s
      AND (q.df <= %(match_share)s * %(doc_count)s
           OR (q.df <= %(match_cap)s
               AND q.df <= coalesce(
                   (SELECT min(r.df) FROM query_terms r WHERE r.df >= %(lexical_limit)s),
                   'Infinity'::numeric)))
), lexical AS MATERIALIZED (
    -- Documents sharing a matching term (matched_nodes_*, below: the GIN index),
    -- ranked by Okapi BM25.
    SELECT n.id, {bm25} AS score
    FROM {matched_nodes}
    JOIN filtered f ON f.namespace_id = n.namespace_id AND f.id = n.id
    WHERE n.namespace_id = %(ns)s
    ORDER BY score DESC, n.id
    LIMIT %(lexical_limit)s
), lexical_ranked AS (
    SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rank FROM lexical
)

-- Counting a term's documents and finding the matching nodes: inline for a
-- role that row-level security does not confine (the owner), through the
-- SECURITY DEFINER functions of sql/08_lexical.sql for one it does
-- (memstore_app): under a policy the full-text match, not being leakproof,
-- cannot use the GIN index, and the functions apply the policy themselves.
-- Inline costs the owner half as much as the functions would
-- (benchmarks/lexical.py).

-- document_count_direct --
SELECT count(*) AS df FROM memstore.nodes m
WHERE m.namespace_id = %(ns)s AND m.search @@ quote_literal(t.term)::tsquery

-- document_count_confined --
SELECT memstore.term_documents(%(ns)s, t.term) AS df

-- matched_nodes_direct --
memstore.nodes n JOIN (SELECT query FROM match_terms) AS mt ON n.search @@ mt.query

-- matched_nodes_confined --
memstore.lexical_matches(%(ns)s, (SELECT query FROM match_terms)) AS m
JOIN memstore.nodes n ON n.namespace_id = %(ns)s AND n.id = m.id

-- neighbours --
-- Graph evidence (hybrid recall; ranking.py adds it): the candidates both
-- signals found are the seeds; each of the best seeds' heaviest edges, at most
-- neighbour_fanout each way (index order of ix_edges_out / ix_edges_in), lead
-- to its neighbours. An edge counts if it is not inhibitory, was recorded
-- and not tombstoned (as of), and its far end passes the recall's own
-- filters (current, within the ceiling, the kinds and tiers asked for) and
-- was not redacted. An edge into an older version of a node does not lead to
-- the current one here (spreading activation's walk does): a neighbour is
-- evidence, not a route. The neighbours become candidates too, so a memory
-- neither signal found can be lifted by the ones linked to it. The checks are
-- scalar subqueries and plain joins, not memstore.live_end(): inlining that
-- function twice cost 15 ms of planning per recall.
seeds AS MATERIALIZED (
    SELECT id FROM semantic_ranked UNION SELECT id FROM lexical_ranked
), expanded AS MATERIALIZED (
    -- Only the top neighbour_seeds of each signal are expanded: every
    -- neighbour is one more row to score and read, and an edge between two
    -- low-ranked candidates rarely moves the top k.
    SELECT id FROM semantic_ranked WHERE rank <= %(neighbour_seeds)s
    UNION SELECT id FROM lexical_ranked WHERE rank <= %(neighbour_seeds)s
), edges_out AS MATERIALIZED (
    SELECT o.* FROM expanded s CROSS JOIN LATERAL (
        SELECT e.id AS edge_id, s.id AS a, e.dst AS b, e.weight
        FROM memstore.edges e
        WHERE e.namespace_id = %(ns)s AND e.src = s.id AND NOT e.inhibitory
        ORDER BY e.weight DESC, e.id
        LIMIT %(neighbour_fanout)s) AS o
), edges_in AS MATERIALIZED (
    SELECT i.* FROM expanded s CROSS JOIN LATERAL (
        SELECT e.id AS edge_id, s.id AS a, e.src AS b, e.weight
        FROM memstore.edges e
        WHERE e.namespace_id = %(ns)s AND e.dst = s.id AND NOT e.inhibitory
        ORDER BY e.weight DESC, e.id
        LIMIT %(neighbour_fanout)s) AS i
), near AS MATERIALIZED (
    SELECT DISTINCT ON (w.edge_id) w.edge_id, w.a, w.b, w.weight
    FROM (SELECT * FROM edges_out UNION ALL SELECT * FROM edges_in) AS w
    JOIN memstore.edges e ON e.namespace_id = %(ns)s AND e.id = w.edge_id
    JOIN filtered f ON f.namespace_id = %(ns)s AND f.id = w.b
    WHERE (%(as_of)s::timestamptz IS NULL OR e.recorded_at <= %(as_of)s::timestamptz)
      AND (SELECT t.id FROM memstore.tombstones t
           WHERE t.namespace_id = %(ns)s AND t.edge_id = w.edge_id
             AND (%(as_of)s::timestamptz IS NULL OR t.at <= %(as_of)s::timestamptz)) IS NULL
      AND (SELECT r.id FROM memstore.redactions r
           WHERE r.namespace_id = %(ns)s AND r.node_id = w.b LIMIT 1) IS NULL
    -- An edge between two expanded seeds comes both ways: the lower end first
    -- (any other choice would be the plan's).
    ORDER BY w.edge_id, w.a
)

-- neighbour_edges --
-- The edges graph evidence follows, as [[a, b, weight], ...]: computed once,
-- repeated on every row as text that the client parses once (like term_counts).
(SELECT json_agg(json_build_array(ne.a, ne.b, ne.weight) ORDER BY ne.edge_id)::text FROM near ne)

-- similarity_of --
-- The cosine similarity of node n's vector to the query, for a candidate the
-- semantic search did not find (a scalar subquery: only evaluated where needed).
(SELECT 1 - (e.embedding <=> %(vector)s) FROM memstore.embeddings e
 WHERE e.namespace_id = %(ns)s AND e.node_id = n.id AND e.model = {model})

-- term_counts --
-- The common terms this recall counted, for the client to offer next time:
-- computed once, but repeated on every row, so as text that the client
-- parses once (as json, every row would be parsed).
(SELECT json_object_agg(q.term, q.df)::text FROM query_terms q
 WHERE q.counted AND q.df >= %(cache_df_min)s)

-- select --
-- data as text: the client parses it only for the candidates it returns.
SELECT n.id, n.kind, n.node_type, n.tier, n.layer, n.label, n.content, n.data::text AS data,
       n.importance, n.confidence, n.decay_rate, n.privacy, n.protected, n.subject, n.scope,
       n.source, n.actor, n.run_id, n.observed_at, n.valid_from, n.valid_to, n.recorded_at,
       n.tags,
       -- The newer version's id only if it is within the ceiling (its id must
       -- not tell that it exists); "superseded" says the status either way.
       (SELECT s.new_id FROM memstore.supersessions s
        JOIN memstore.nodes v ON v.namespace_id = %(ns)s AND v.id = s.new_id
        WHERE s.namespace_id = %(ns)s AND s.old_id = n.id
          AND (%(privacy)s::int IS NULL OR v.privacy <= %(privacy)s::int)) AS superseded_by,
       EXISTS (SELECT 1 FROM memstore.supersessions s
               WHERE s.namespace_id = %(ns)s AND s.old_id = n.id) AS superseded,
       EXISTS (SELECT 1 FROM memstore.tombstones t
               WHERE t.namespace_id = %(ns)s AND t.node_id = n.id) AS tombstoned,
       EXISTS (SELECT 1 FROM memstore.redactions r
               WHERE r.namespace_id = %(ns)s AND r.node_id = n.id) AS redacted,
       (SELECT f.at FROM memstore.confirmations f
        WHERE f.namespace_id = %(ns)s AND f.node_id = n.id
        ORDER BY f.at DESC LIMIT 1) AS last_confirmed_at,
       {similarity} AS similarity,
       {lexical} AS lexical,
       {semantic_rank} AS semantic_rank,
       {lexical_rank} AS lexical_rank,
       {term_counts} AS term_counts,
       {neighbour_edges} AS neighbour_edges
FROM ({candidates}) AS c
JOIN memstore.nodes n ON n.namespace_id = %(ns)s AND n.id = c.id
{rank_joins}

-- term_sample --
-- Document counts of the namespace's common terms, estimated from a sample of
-- its documents when its statistics are read (memstore/recall/terms.py): the
-- documents in windows evenly spaced over its id range (ids grow with time,
-- so every period is sampled), at most per_window from each, read as one
-- key-ordered index scan per window. One window takes a small namespace
-- whole: its counts are exact. Each row is a term in at least min_hits of the
-- sampled documents, with how many documents were sampled.
WITH bounds AS (
    SELECT min(n.id) AS lo, max(n.id) + 1 AS hi
    FROM memstore.nodes n WHERE n.namespace_id = %(ns)s
), sample AS MATERIALIZED (
    SELECT d.search
    FROM bounds b
    CROSS JOIN generate_series(0, %(windows)s - 1) AS g
    CROSS JOIN LATERAL (
        SELECT n.search FROM memstore.nodes n
        WHERE n.namespace_id = %(ns)s
          AND n.id >= b.lo + (b.hi - b.lo) * g / %(windows)s
          AND n.id < b.lo + (b.hi - b.lo) * (g + 1) / %(windows)s
        ORDER BY n.id
        LIMIT %(per_window)s) AS d
)
SELECT u.lexeme AS term, count(*) AS hits, (SELECT count(*) FROM sample) AS sampled
FROM sample s, unnest(s.search) AS u
GROUP BY u.lexeme
HAVING count(*) >= %(min_hits)s
