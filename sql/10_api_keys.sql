-- API keys of `memstore serve` (docs/server.md, "Keys").
--
-- A key is a random 256-bit secret shown once, at creation; the store keeps
-- only a lookup prefix of it and its sha256 (a secret of 256 random bits needs
-- no slow hash: nobody can guess it from the digest). A key is bound to one
-- namespace or to an explicit namespace prefix, with a set of scopes.
--
-- Both tables are the owner's: `memstore keys create / revoke` run as the
-- migrating role. They are append-only like the truth tables: a revocation is
-- a row of api_key_revocations, an expiry a column given at creation; a key is
-- never changed or removed, so what a key could do at any time stays on record.
--
-- The service (memstore_app) reads neither table. It checks a presented key
-- with memstore.authenticate_key, which answers only for a secret the caller
-- already holds (the lookup prefix and the digest must both match), as
-- memstore.find_namespace answers only for a name the caller knows.
--
-- Row-level security is on, as for every table, with a policy that admits no
-- confined role: only the owner (who is not confined) sees the rows.

ALTER TABLE memstore.api_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_only ON memstore.api_keys USING (false);

ALTER TABLE memstore.api_key_revocations ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_only ON memstore.api_key_revocations USING (false);

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.api_keys
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'api keys are append-only: revoke a key with a new api_key_revocations row; create a new key');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.api_keys
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'api keys are append-only: revoke a key with a new api_key_revocations row; create a new key');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'api keys are append-only: revoke a key with a new api_key_revocations row; create a new key');

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.api_key_revocations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'api key revocations are append-only: a revoked key stays revoked; create a new key');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.api_key_revocations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'api key revocations are append-only: a revoked key stays revoked; create a new key');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.api_key_revocations
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'api key revocations are append-only: a revoked key stays revoked; create a new key');

-- The key whose lookup prefix and secret digest are both p_lookup and
-- p_secret_hash, with whether it is revoked or expired now (the database's
-- clock decides, not the caller's); no row for any other secret.
CREATE OR REPLACE FUNCTION memstore.authenticate_key(p_lookup text, p_secret_hash bytea)
RETURNS TABLE (
    id bigint,
    name text,
    namespace text,
    namespace_prefix text,
    scopes text[],
    expires_at timestamptz,
    revoked boolean,
    expired boolean
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT k.id, k.name, k.namespace, k.namespace_prefix, k.scopes, k.expires_at,
           EXISTS (SELECT 1 FROM memstore.api_key_revocations r WHERE r.key_id = k.id),
           k.expires_at IS NOT NULL AND k.expires_at <= now()
    FROM memstore.api_keys k
    WHERE k.lookup = p_lookup AND k.secret_hash = p_secret_hash;
$$;

REVOKE ALL ON FUNCTION memstore.authenticate_key(text, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.authenticate_key(text, bytea) TO CURRENT_USER;
