"""Tamper evidence: the database is what sql/, the metadata and roles.py say, and nothing more.

A superuser (or the tables' owner) can disable a trigger, replace a function,
grant a table to PUBLIC, give the service role BYPASSRLS or plant a SECURITY
DEFINER function that reads every tenant. None of that is prevented;
:func:`findings` notices it. Each finding has a stable short code (``CODES``;
docs/security.md says what each means and what to do) and a message naming
the object. What is expected always comes from one source, never from a copy
(:mod:`.definitions` reads it), and each kind of object has its own module,
whose docstring says exactly what is compared:

- :mod:`.guards` — triggers, ``session_replication_role``, row-level security
  and policies, views, from sql/;
- :mod:`.functions` — every function is exactly sql/'s (body, SECURITY
  DEFINER, ``SET`` options …), and no other is in schema memstore;
- :mod:`.structure` — columns, constraints, indexes, identity sequences,
  logging and inheritance, from the metadata (memstore/db/schema.py);
- :mod:`.strangers` — no object or rule in schema memstore that sql/ or the
  metadata do not define, and no extension member there but vector's own
  (when vector was created in schema memstore);
- :mod:`.owners` — everything is owned by the role that ran the migrations,
  except what sql/ hands to another role;
- :mod:`.privileges` — the grants of sql/ and roles.py, replayed over the live
  objects (:mod:`.acl`), are exactly what PUBLIC and every other role hold; no
  default privileges hand the next migration's objects to others;
- :mod:`.roles` — role attributes, memberships and settings, from roles.py.

Where a comparison needs the server's own rendering of what is expected, the
expected object is built in ``pg_temp`` in a savepoint that is always rolled
back (:func:`.catalog.scratch`). An expected object that cannot be built there
(a table it needs was dropped) is named in a finding, never a crash
(:func:`.catalog.attempt`).

Roles that do not exist are not checked: a deployment that never ran
``memstore db roles`` (the embedded default, a superuser deploy) has no
``memstore_app`` to misconfigure, and no privilege can name a missing role.
"""

from __future__ import annotations

from psycopg import sql
from sqlalchemy.engine import Connection

from memstore.db.integrity.codes import CODES, Finding
from memstore.db.integrity.definitions import (
    Definitions,
    RoleDefinitions,
    parse_sql,
    role_definitions,
)
from memstore.db.integrity.functions import expected_functions, function_problems, live_signatures
from memstore.db.integrity.guards import (
    normalised_trigger,
    policy_problems,
    trigger_problems,
    view_problems,
)
from memstore.db.integrity.owners import migrating_owner, owner_problems
from memstore.db.integrity.privileges import default_privilege_problems, privilege_problems
from memstore.db.integrity.roles import existing_roles, role_problems, search_path_problems
from memstore.db.integrity.strangers import stranger_problems
from memstore.db.integrity.structure import structure_problems
from memstore.db.sqlfiles import sql_files


def definitions() -> Definitions:
    """Parse the guards out of every file in sql/."""
    return parse_sql(sql_files())


def findings(conn: Connection) -> list[Finding]:
    """Every way the live database differs from sql/, the metadata and roles.py.

    Runs in ``conn``'s transaction, whose ``search_path`` it first sets (``SET LOCAL``)
    to search ``pg_catalog`` before anything else: a path that put another schema
    first would make the copies built from sql/ call what was planted there, and
    every policy would then look changed (that path is a finding of its own).
    """
    shadowed = search_path_problems(conn, migrating_owner(conn))
    pin_catalog_first(conn)
    expected = definitions()
    role_defs = role_definitions()
    owner = migrating_owner(conn)
    existing = existing_roles(conn)
    functions, unbuilt = expected_functions(conn, expected)
    signatures = live_signatures(conn, functions)
    return [
        *trigger_problems(conn, expected),
        *function_problems(conn, expected, functions, unbuilt),
        *policy_problems(conn, expected),
        *view_problems(conn, expected),
        *structure_problems(conn),
        *stranger_problems(conn, expected),
        *owner_problems(conn, expected, owner),
        *privilege_problems(conn, expected, role_defs, signatures, owner, existing),
        *default_privilege_problems(conn, owner),
        *role_problems(conn, role_defs, existing),
        *shadowed,
    ]


def pin_catalog_first(conn: Connection) -> None:
    """``SET LOCAL search_path`` to ``pg_catalog``, then the schemas the session's path
    reaches now (``current_schemas``: existing ones, ``$user`` resolved, without the
    temporary schema), each quoted as an identifier."""
    raw = conn.connection.driver_connection
    assert raw is not None
    found = raw.execute("SELECT current_schemas(false)").fetchone()
    schemas = [name for name in (found[0] if found else []) if name != "pg_catalog"]
    path = sql.SQL(", ").join(sql.Identifier(name) for name in ["pg_catalog", *schemas])
    raw.execute(sql.SQL("SET LOCAL search_path = {}").format(path))


def problems(conn: Connection) -> list[str]:
    """The messages of :func:`findings` (empty when all is well)."""
    return [f.message for f in findings(conn)]


__all__ = [
    "CODES",
    "Definitions",
    "Finding",
    "RoleDefinitions",
    "definitions",
    "findings",
    "migrating_owner",
    "normalised_trigger",
    "problems",
    "role_definitions",
]
