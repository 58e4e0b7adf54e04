"""Functions from sql/: every function is exactly sql/'s, and none other is in schema memstore.

Compared *as the server stores them*: each function of sql/ is created from
its own statement in ``pg_temp`` in a rolled-back savepoint and its catalog
entry compared with the live one — body, SECURITY DEFINER, ``SET`` options (a
reset ``search_path``), arguments, result, language, volatility, strictness,
LEAKPROOF, parallel safety, cost.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from psycopg import sql
from sqlalchemy.engine import Connection

from memstore.db.integrity.catalog import LIVE, SCRATCH, attempt, rows, scratch
from memstore.db.integrity.codes import Finding, differences
from memstore.db.integrity.definitions import FUNCTION_HEAD, Definitions
from memstore.db.sqlfiles import mask_quoted

_FUNCTION_COLUMNS = (
    "p.proname, pg_get_function_identity_arguments(p.oid),"
    " regexp_replace(p.oid::regprocedure::text, '^[^(]*\\(', '('),"
    " p.prosrc, p.prosecdef, coalesce(array_to_string(p.proconfig, '; '), ''),"
    " pg_get_function_arguments(p.oid), coalesce(pg_get_function_result(p.oid), ''),"
    " p.prokind::text, l.lanname::text, p.provolatile::text, p.proisstrict, p.proleakproof,"
    " p.proparallel::text, p.procost, p.prorows"
)
_FUNCTION_DETAILS = (
    "arguments",
    "result",
    "kind",
    "language",
    "volatility",
    "strict",
    "leakproof",
    "parallel",
    "cost",
    "rows",
)
Signature = tuple[str, str]
"""(name, identity arguments) of a function."""
Functions = dict[Signature, tuple[Any, ...]]
"""Signature → (argument types, body, SECURITY DEFINER, SET options, then the details)."""


def _functions_in(conn: Connection, namespace: str) -> Functions:
    found = rows(
        conn,
        (
            "SELECT {columns} FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
            " WHERE p.pronamespace = {ns} AND NOT EXISTS (SELECT 1 FROM pg_depend e"
            "   JOIN pg_extension x ON x.oid = e.refobjid"
            "   WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.deptype = 'e'"
            "   AND x.extname = 'vector' AND x.extnamespace = p.pronamespace)"
        )
        .replace("{columns}", _FUNCTION_COLUMNS)
        .replace("{ns}", namespace),
    )
    return {(str(r[0]), str(r[1])): r[2:] for r in found}


def expected_functions(conn: Connection, expected: Definitions) -> tuple[Functions, dict[str, str]]:
    """Each function of sql/ as the server stores it: created in pg_temp, rolled back.

    Also, by name, the functions sql/ defines that cannot be built (an argument
    type or, for SQL functions, a table they read is gone) and the server's reason.
    """
    unbuilt: dict[str, str] = {}
    with scratch(conn) as raw:
        for statement in expected.routines:
            head = FUNCTION_HEAD.match(mask_quoted(statement))
            assert head is not None
            kind, name = head.group(1).upper(), head.group(2)
            reason = attempt(
                raw,
                sql.SQL("CREATE OR REPLACE {} pg_temp.{}(").format(
                    sql.SQL(kind), sql.Identifier(name)
                )
                + sql.SQL(statement[head.end() :]),  # our own file from sql/, never input
            )
            if reason is not None:
                unbuilt[name] = reason
        return _functions_in(conn, SCRATCH), unbuilt


def live_signatures(conn: Connection, functions: Iterable[Signature]) -> list[str]:
    """The live ``regprocedure`` text of each of these functions that exists."""
    keys = list(functions)
    return [
        str(s)
        for (s,) in rows(
            conn,
            "SELECT p.oid::regprocedure::text FROM pg_proc p"
            " WHERE p.pronamespace = 'memstore'::regnamespace"
            " AND (p.proname, pg_get_function_identity_arguments(p.oid))"
            "     IN (SELECT * FROM unnest(CAST(:names AS text[]), CAST(:args AS text[])))",
            names=[name for name, _ in keys],
            args=[args for _, args in keys],
        )
    ]


def function_problems(
    conn: Connection,
    expected: Definitions,
    reference: Functions,
    unbuilt: dict[str, str] | None = None,
) -> list[Finding]:
    """Functions missing or differing from ``reference`` (:func:`expected_functions`); strangers.

    A function sql/ defines that could not be built (``unbuilt``) is reported
    as missing with the reason, and a live one of that name is not a stranger.
    """
    unbuilt = unbuilt or {}
    problems = [
        Finding(
            "function-missing",
            f"function memstore.{name} cannot be compared: sql/'s definition cannot be built"
            f" ({reason})",
        )
        for name, reason in sorted(unbuilt.items())
    ]
    live = _functions_in(conn, LIVE)
    for key, want in sorted(reference.items()):
        name = f"function memstore.{key[0]}{want[0]}"
        have = live.get(key)
        if have is None:
            problems.append(Finding("function-missing", f"{name} is missing"))
            continue
        if have[1] != want[1]:
            problems.append(Finding("function-body", f"{name} has a body that differs from sql/"))
        if have[2] != want[2]:
            problems.append(
                Finding(
                    "function-security", f"{name} is{'' if have[2] else ' not'} SECURITY DEFINER"
                )
            )
        if have[3] != want[3]:
            problems.append(
                Finding(
                    "function-config",
                    f"{name} runs with SET {have[3] or '(nothing)'}; sql/ gives it"
                    f" SET {want[3] or '(nothing)'}",
                )
            )
        changed = differences(have, want, _FUNCTION_DETAILS, start=4, source="sql/")
        if changed:
            problems.append(
                Finding("function-changed", f"{name} differs from sql/: {'; '.join(changed)}")
            )
    for key in sorted(set(live) - set(reference)):
        if ("AGGREGATE", key[0]) in expected.objects or key[0] in unbuilt:
            continue
        have = live[key]
        definer = " (SECURITY DEFINER: it runs with its owner's rights)" if have[2] else ""
        problems.append(
            Finding(
                "function-unknown",
                f"function memstore.{key[0]}{have[0]} is not defined in sql/{definer}",
            )
        )
    return problems


__all__ = [
    "Functions",
    "Signature",
    "expected_functions",
    "function_problems",
    "live_signatures",
]
