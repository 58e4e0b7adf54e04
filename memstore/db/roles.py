"""The three roles a production deployment runs memstore as, as reviewable SQL.

- ``memstore_owner`` runs the migrations and so owns schema ``memstore`` and
  everything in it. Row-level security does not confine the owner.
- ``memstore_app`` is the service: SELECT and INSERT on the truth tables,
  UPDATE only where the law allows one (learned state, proposal decisions),
  DELETE only on the embeddings cache; never TRUNCATE, never DDL, never
  BYPASSRLS. It finds namespaces through ``memstore.open_namespace``, erases
  through ``memstore.redact_lineage`` (``memstore.redact_node`` for code of
  revision 0016) and writes the audit log only through
  ``memstore.record_operations``. It cannot read ``erasure_keys``.
- ``memstore_reader`` reads the operator views (docs/operators.md). The views
  are ``security_invoker`` so that row-level security confines the reader,
  which is why PostgreSQL also needs SELECT on the tables they read: the
  reader gets SELECT on those and nothing else. It is an operator's role: it
  may declare any namespace, so it reads every tenant, one per transaction
  (docs/security.md).

Both confined roles see one namespace per transaction, the one it declares
with ``SET LOCAL memstore.namespace_id`` (docs/security.md).

The SQL comes in two parts, because the roles must exist before the owner can
migrate and the tables must exist before anyone can grant on them:
:func:`admin_sql` (the roles, the extension, the owner's rights; before the
first ``memstore db upgrade``) and :func:`grants_sql` (exactly these
privileges on what the migrations created; after each upgrade). This module
is the one statement of the privileges each role is expected to hold.
"""

from __future__ import annotations

from memstore.db.schema import APPEND_ONLY_TABLES, MUTABLE_STATE_TABLES, metadata

OWNER = "memstore_owner"
APP = "memstore_app"
READER = "memstore_reader"
ROLES = (OWNER, APP, READER)

# What the service may do to each table; the triggers of sql/01-02 refuse
# the rest even to a role that had it.
APP_PRIVILEGES: dict[str, tuple[str, ...]] = {
    **{table: ("SELECT", "INSERT") for table in APPEND_ONLY_TABLES},
    **{table: ("SELECT", "INSERT", "UPDATE") for table in MUTABLE_STATE_TABLES},
    # Namespaces are created by memstore.open_namespace, erasures recorded by
    # memstore.redact_node, the audit log written by memstore.record_operations:
    # all SECURITY DEFINER, so no direct INSERT.
    "namespaces": ("SELECT",),
    "redactions": ("SELECT",),
    "operations": ("SELECT",),
    # The erasure keys are secret: only memstore_redactor (sql/03) and the owner.
    "erasure_keys": (),
    "proposals": ("SELECT", "INSERT", "UPDATE"),
    "embeddings": ("SELECT", "INSERT", "UPDATE", "DELETE"),
    # API keys are the owner's (memstore keys create/revoke); the service checks
    # a presented key through memstore.authenticate_key and reads nothing else.
    "api_keys": (),
    "api_key_revocations": (),
    # Summaries are written only by memstore.summarise_activations (SECURITY
    # DEFINER, owned by memstore_maintainer, sql/12_maintenance.sql).
    "activation_summaries": ("SELECT",),
}

# The views and the tables beneath them (security_invoker needs both).
VIEWS = (
    "v_node_status",
    "v_current_nodes",
    "v_node_lineage",
    "v_namespace_stats",
    "v_tier_stats",
    "v_activation_daily",
    "v_strongest_edges",
    "v_embedding_freshness",
    "v_review_queue",
    "v_operations_daily",
    "v_tag_counts",
)
READER_TABLES = (
    "namespaces",
    "nodes",
    "edges",
    "tombstones",
    "supersessions",
    "operations",
    "proposals",
    "activations",
    "edge_state",
    "embeddings",
    "redactions",
    "confirmations",
)
APP_FUNCTIONS = (
    "memstore.open_namespace(text, jsonb)",
    "memstore.find_namespace(text)",
    "memstore.redact_node(bigint, bigint, text, text)",
    "memstore.redact_lineage(bigint, bigint, text, text, boolean)",
    "memstore.term_documents(bigint, text)",
    "memstore.lexical_matches(bigint, tsquery)",
    "memstore.record_operations(bigint, jsonb)",
    "memstore.authenticate_key(text, bytea)",
    "memstore.summarise_activations(bigint, timestamptz)",
)

_CREATE = """\
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN
        CREATE ROLE {role} {options};
    END IF;
END;
$$;
ALTER ROLE {role} {options};"""

_ROLE_OPTIONS = {
    OWNER: "LOGIN NOSUPERUSER NOBYPASSRLS",
    APP: "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION",
    READER: "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION",
}


def admin_sql() -> str:
    """What an administrator runs before the first ``memstore db upgrade``.

    The roles (created if missing, their options set), the pgvector extension,
    and the owner's rights to migrate: CREATE on the database (so it creates
    and owns schema ``memstore``) and membership in ``memstore_redactor`` (to
    hand ``redact_node`` over). Needs a superuser, or a role with CREATEROLE
    that may create the extension (docs/security.md). Idempotent.
    """
    parts = [
        "-- memstore roles, part 1 (docs/security.md): as an administrator, before the",
        "-- first `memstore db upgrade`. Set passwords yourself:",
        "-- ALTER ROLE memstore_owner PASSWORD '...', and the same for memstore_app.",
        "",
        "-- The erasure role the migrations expect (sql/03_redaction.sql creates it too).",
        _CREATE.format(role="memstore_redactor", options="NOLOGIN"),
        "",
        "-- The telemetry-retention role (sql/12_maintenance.sql creates it too).",
        _CREATE.format(role="memstore_maintainer", options="NOLOGIN"),
        "",
    ]
    for role in ROLES:
        parts += [_CREATE.format(role=role, options=_ROLE_OPTIONS[role]), ""]
    parts += [
        "-- pgvector: creating an extension needs more than memstore_owner has.",
        "CREATE EXTENSION IF NOT EXISTS vector;",
        "",
        "-- memstore_owner: runs the migrations, so creates and owns schema memstore.",
        "DO $$",
        "BEGIN",
        "    EXECUTE format('GRANT CREATE ON DATABASE %I TO memstore_owner', current_database());",
        "END;",
        "$$;",
        "-- memstore.redact_node is owned by memstore_redactor; the migrating role",
        "-- hands it over, which PostgreSQL allows only to a member.",
        "GRANT memstore_redactor TO memstore_owner;",
        "-- memstore.summarise_activations is owned by memstore_maintainer, likewise.",
        "GRANT memstore_maintainer TO memstore_owner;",
    ]
    return "\n".join(parts) + "\n"


def grants_sql() -> str:
    """Exactly the confined roles' privileges on what the migrations created.

    Run after ``memstore db upgrade`` (the tables must exist), and again after
    each upgrade: it revokes the confined roles' table privileges before
    granting exactly these, so it converges. Run it as a superuser or as
    ``memstore_owner`` (which owns the objects), or a member of it.
    """
    parts = [
        "-- memstore roles, part 2: after `memstore db upgrade`, and again after each upgrade.",
        "-- Start from nothing, then grant exactly what each role needs.",
        "GRANT USAGE ON SCHEMA memstore TO memstore_app, memstore_reader;",
        "REVOKE ALL ON ALL TABLES IN SCHEMA memstore FROM memstore_app, memstore_reader;",
        "REVOKE ALL ON ALL SEQUENCES IN SCHEMA memstore FROM memstore_app, memstore_reader;",
        "",
        "-- memstore_app: no DELETE or TRUNCATE on truth tables, no DDL.",
    ]
    for table in sorted(t.name for t in metadata.sorted_tables):
        if APP_PRIVILEGES[table]:
            privileges = ", ".join(APP_PRIVILEGES[table])
            parts.append(f"GRANT {privileges} ON memstore.{table} TO memstore_app;")
    parts.append("GRANT SELECT ON memstore.alembic_version TO memstore_app;")
    for function in APP_FUNCTIONS:
        parts.append(f"GRANT EXECUTE ON FUNCTION {function} TO memstore_app;")
    parts += ["", "-- memstore_reader: the views (and, for security_invoker, what they read)."]
    for view in VIEWS:
        parts.append(f"GRANT SELECT ON memstore.{view} TO memstore_app, memstore_reader;")
    for table in READER_TABLES:
        parts.append(f"GRANT SELECT ON memstore.{table} TO memstore_reader;")
    return "\n".join(parts) + "\n"


def roles_sql() -> str:
    """Both parts, in the order of a first deploy: :func:`admin_sql`, then :func:`grants_sql`.

    What ``memstore db roles`` prints. The second part names the tables, so
    run as one script it needs a migrated database; ``memstore db roles
    --apply`` runs the first part always and the second once the schema is
    at the package's revision (docs/operations.md gives the order).
    """
    return admin_sql() + "\n" + grants_sql()


__all__ = [
    "APP",
    "APP_FUNCTIONS",
    "APP_PRIVILEGES",
    "OWNER",
    "READER",
    "READER_TABLES",
    "ROLES",
    "VIEWS",
    "admin_sql",
    "grants_sql",
    "roles_sql",
]
