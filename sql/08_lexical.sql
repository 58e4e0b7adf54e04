-- Full-text matching for lexical recall, usable under row-level security.
--
-- Under a policy, PostgreSQL evaluates a condition that is not leakproof only
-- after the policy's own, and the full-text match (tsvector @@ tsquery) is not
-- leakproof: for memstore_app it could not use the GIN index on nodes.search
-- and scanned the whole namespace, for every query term's document count and
-- again for the candidates (3-4x slower lexical recall at 20k nodes, growing
-- with the namespace). These two functions run the match with the owner's
-- rights, so the index is used, and apply the policy themselves: only the
-- namespace the transaction declared (SET LOCAL memstore.namespace_id, which
-- must equal p_namespace_id) and only nodes within its privacy ceiling. Unset
-- settings match nothing, exactly like the policy. They return ids and counts,
-- never content; recall then reads the rows through the policy as usual.

-- Documents of the declared namespace holding one lexeme (BM25's document frequency).
CREATE OR REPLACE FUNCTION memstore.term_documents(p_namespace_id bigint, p_term text)
RETURNS bigint
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*)
    FROM memstore.nodes m
    WHERE m.namespace_id = p_namespace_id
      AND p_namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint
      AND m.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
      AND m.search @@ quote_literal(p_term)::tsquery
$$;

-- Ids of the declared namespace's documents matching a full-text query.
CREATE OR REPLACE FUNCTION memstore.lexical_matches(p_namespace_id bigint, p_query tsquery)
RETURNS TABLE (id bigint)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT m.id
    FROM memstore.nodes m
    WHERE m.namespace_id = p_namespace_id
      AND p_namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint
      AND m.privacy <= nullif(current_setting('memstore.privacy_ceiling', true), '')::smallint
      AND m.search @@ p_query
$$;

REVOKE ALL ON FUNCTION memstore.term_documents(bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION memstore.lexical_matches(bigint, tsquery) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.term_documents(bigint, text) TO CURRENT_USER;
GRANT EXECUTE ON FUNCTION memstore.lexical_matches(bigint, tsquery) TO CURRENT_USER;
