"""``memoryport doctor`` checks of a PostgreSQL store: version, extensions, indexes,
m060's session-key triggers, row-level security policies (session store, curated memory,
facts and turns), whether word searches can use their indexes under the policies, and
round-trip latency.

Run after the connection check succeeded (``doctor._check_sessions``). Read-only: one
connection, catalog queries and ``SELECT 1`` pings; nothing is created.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import psycopg
from psycopg import sql

from memoryport.storage.facts.postgres_schema import TABLES as FACT_TABLES
from memoryport.storage.postgres_curated_schema import POLICIES as CURATED_POLICIES
from memoryport.storage.postgres_repair import INDEXES, TRIGGERS, trigger_problems
from memoryport.storage.sessions.postgres.migrations import (
    POLICIES,
    SEARCH_VIEW,
    SESSION_VIEW,
)
from memoryport.storage.turns.postgres_schema import TABLES as TURN_TABLES

__all__ = [
    "EXPECTED_INDEXES",
    "LATENCY_WARN_MS",
    "MIN_VERSION",
    "SEARCH_OPERATORS",
    "Check",
    "postgres_checks",
]

MIN_VERSION = 14
"""The oldest PostgreSQL major version the store supports."""
LATENCY_WARN_MS = 20.0
"""A median round trip slower than this gets a warning (every query pays it)."""
EXPECTED_INDEXES = tuple(sorted(INDEXES))
"""Indexes the session store's queries rely on (``messages_content_trgm`` is optional;
``messages_cjk_time`` serves short CJK queries' walk, newest first)."""
SEARCH_OPERATORS = (
    "pg_catalog.ts_match_vq(tsvector, tsquery)",
    "pg_catalog.texticlike(text, text)",
    "pg_catalog.textregexeq(text, text)",
)
"""The functions behind ``@@``, ``ILIKE`` and ``~``: not ``LEAKPROOF`` unless a superuser
marked them, so the policies keep an index from serving them for a role they bind."""

Conn = psycopg.Connection[Any]


class Check(NamedTuple):
    """One finding, in the field order of :class:`memoryport.admin.doctor.Check` (which
    ``doctor`` builds from it; importing that class here would make an import cycle)."""

    name: str
    status: str
    detail: str
    fix: str = ""


def postgres_checks(dsn: str, schema: str = "memoryport") -> Iterator[Check]:
    """Every PostgreSQL check against ``dsn`` (the store's ``schema``)."""
    with psycopg.connect(dsn, autocommit=True, application_name="memoryport-doctor") as conn:
        yield _version(conn)
        yield _extensions(conn)
        present = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".messages',)).fetchone()
        if present is None or present[0] is None:
            yield Check(
                "postgres schema",
                "warn",
                f"schema {schema!r} has no session store yet",
                "it is created when a memoryport process first opens the store",
            )
        else:
            yield _indexes(conn, schema)
            yield _triggers(conn, schema)
            yield _policies(conn, schema)
            yield _search(conn, schema)
        yield _curated_tables(conn, schema)
        yield _holographic_tables(conn, schema)
        yield _latency(conn)


def _version(conn: Conn) -> Check:
    number = conn.info.server_version
    shown = f"{number // 10000}.{number % 10000}"
    if number // 10000 < MIN_VERSION:
        return Check(
            "postgres version",
            "fail",
            f"PostgreSQL {shown} is older than {MIN_VERSION}",
            f"upgrade the server to PostgreSQL {MIN_VERSION} or newer",
        )
    return Check("postgres version", "ok", f"PostgreSQL {shown}")


def _extensions(conn: Conn) -> Check:
    rows = conn.execute(
        "SELECT name, installed_version FROM pg_available_extensions"
        " WHERE name IN ('pg_trgm', 'vector')"
    ).fetchall()
    state = {name: installed for name, installed in rows}
    shown = ", ".join(
        f"{name} {'installed' if state.get(name) else 'available' if name in state else 'missing'}"
        for name in ("pg_trgm", "vector")
    )
    if "pg_trgm" not in state:
        return Check(
            "postgres extensions",
            "warn",
            f"{shown}: CJK search scans the messages table without pg_trgm",
            "install the server's contrib package (postgresql-contrib), then run "
            "memoryport sessions rebuild-index",
        )
    return Check("postgres extensions", "ok", shown)


def _indexes(conn: Conn, schema: str) -> Check:
    rows = conn.execute(
        "SELECT c.relname, i.indisvalid AND i.indisready FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indexrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (schema,),
    ).fetchall()
    valid = {name for name, ok in rows if ok}
    missing = [name for name in EXPECTED_INDEXES if name not in valid]
    invalid = sorted(name for name, ok in rows if not ok)
    if missing or invalid:
        return Check(
            "postgres indexes",
            "fail",
            f"missing: {', '.join(missing) or 'none'}; invalid: {', '.join(invalid) or 'none'}",
            f"run memoryport sessions rebuild-index {_AS_OWNER} (it creates missing indexes"
            " and rebuilds invalid ones)",
        )
    trigram = "messages_content_trgm" in valid
    extra = "with the CJK trigram index" if trigram else "no CJK trigram index"
    return Check("postgres indexes", "ok", f"{len(EXPECTED_INDEXES)} indexes valid, {extra}")


_AS_OWNER = "with storage.dsn naming the role that owns the schema (the one that migrates)"
_M060 = "m060_session_key_per_statement"


def _triggers(conn: Conn, schema: str) -> Check:
    """m060's triggers (``messages.session_id``'s rules since its foreign key was dropped)
    exist on their tables and are enabled."""
    name = "postgres triggers"
    ledger = sql.SQL("SELECT 1 FROM {s}._migrations WHERE name = %s").format(
        s=sql.Identifier(schema)
    )
    if conn.execute(ledger, (_M060,)).fetchone() is None:
        return Check(name, "warn", "the store predates m060: messages.session_id is still a"
                     " foreign key", "open the store once with a current memoryport")  # fmt: skip
    with conn.cursor() as cur:
        problems = trigger_problems(cur, sql.Identifier(schema))
    if problems:
        shown = ", ".join(f"{t} {why}" for t, why in sorted(problems.items()))
        return Check(
            name,
            "fail",
            f"{shown}: messages may be written for missing sessions, or outlive them",
            f"run memoryport sessions rebuild-index {_AS_OWNER}: it runs m060's statements again",
        )
    return Check(name, "ok", f"{len(TRIGGERS)} session-key triggers enabled (m060)")


def _policies(conn: Conn, schema: str) -> Check:
    """The ``user_scope`` policies are on, and they bind the connecting role: it is not
    a superuser or ``BYPASSRLS``, and when it owns the tables they are ``FORCE``d."""
    rows = conn.execute(
        "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
        " pg_has_role(current_user, c.relowner, 'USAGE'),"
        " EXISTS (SELECT 1 FROM pg_policies p WHERE p.schemaname = n.nspname"
        " AND p.tablename = c.relname AND p.policyname = 'user_scope')"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = ANY(%s)",
        (schema, sorted(POLICIES)),
    ).fetchall()
    enforced = sorted(name for name, on, force, owns, policy in rows if on and policy)
    missing = sorted(set(POLICIES) - set(enforced))
    unforced = sorted(name for name, _, force, owns, _ in rows if owns and not force)
    if missing or unforced:
        why = f"on {', '.join(missing)}" if missing else ""
        if unforced:
            why += f"{'; ' if why else ''}for this role, the owner of {', '.join(unforced)}"
        return Check(
            "postgres policies",
            "fail",
            f"row-level security is not enforced {why}",
            "open the store once with a current memoryport (migration m009 adds the policies);"
            " connect agents as the application role the owner granted (grant_app_role)",
        )
    role = conn.execute(
        "SELECT rolname, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if role is not None and role[1]:
        return Check(
            "postgres policies",
            "warn",
            f"policies on {', '.join(enforced)}, but role {role[0]!r} bypasses them "
            "(superuser or BYPASSRLS)",
            "connect agents as an ordinary role (see docs/postgres.md, 'Isolation')",
        )
    kind = "owner, policies forced" if any(r[3] for r in rows) else "application role"
    return Check(
        "postgres policies", "ok", f"user_scope enforced on {', '.join(enforced)} ({kind})"
    )


def _search(conn: Conn, schema: str) -> Check:
    """Whether word searches can use the word and trigram indexes: the search view's
    owner must not be bound by the policies (or the operators must be ``LEAKPROOF``);
    and whether the view the exact-title lookup reads is there (m040)."""
    name = "postgres search"
    row = conn.execute(
        "SELECT v.relowner::regrole::text, r.rolsuper OR r.rolbypassrls, t.relforcerowsecurity,"
        " (SELECT bool_and(proleakproof) FROM pg_proc WHERE oid = ANY(%s::regprocedure[])),"
        " to_regclass(%s) IS NOT NULL"
        " FROM pg_class v JOIN pg_roles r ON r.oid = v.relowner, pg_class t"
        " WHERE v.oid = to_regclass(%s) AND t.oid = to_regclass(%s)",
        (
            list(SEARCH_OPERATORS),
            f'"{schema}".{SESSION_VIEW}',
            f'"{schema}".{SEARCH_VIEW}',
            f'"{schema}".messages',
        ),
    ).fetchone()
    if row is None or not row[4]:
        view, migration = (SEARCH_VIEW, "m020") if row is None else (SESSION_VIEW, "m040")
        return Check(
            name,
            "fail",
            f"the search view {view} is missing",
            f"open the store once with a current memoryport (migration {migration} adds it)",
        )
    owner, exempt, forced, leakproof, _ = row
    if forced and not exempt and not leakproof:
        return Check(
            name,
            "warn",
            f"word searches read the whole messages table: the policies bind {owner}, which"
            f" owns {SEARCH_VIEW} (one role owns and uses the store), and hold @@ and ILIKE"
            " back from the indexes",
            "keep that role for migrations and connect agents as an application role it"
            " grants with grant_app_role (docs/postgres.md, 'Isolation')",
        )
    how = "LEAKPROOF search operators" if forced and leakproof else f"{owner} owns {SEARCH_VIEW}"
    return Check(
        name, "ok", f"word and title searches use the indexes ({how}, not bound by the policies)"
    )


def _curated_tables(conn: Conn, schema: str) -> Check:
    """Curated memory and audit tables (``storage.backend: postgres``): present, with
    their ``user_scope`` policies enforced."""
    name = "postgres curated/audit"
    present = conn.execute(
        "SELECT to_regclass(%s)", (f'"{schema}".curated_targets',)
    ).fetchone()
    if present is None or present[0] is None:
        return Check(name, "warn", f"schema {schema!r} has no curated-memory tables yet",
                     "they are created when curated memory or the audit log first opens "
                     "with storage.backend: postgres")  # fmt: skip
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = ANY(%s) AND c.relrowsecurity"
        " AND c.relforcerowsecurity AND EXISTS (SELECT 1 FROM pg_policies p"
        " WHERE p.schemaname = n.nspname AND p.tablename = c.relname"
        " AND p.policyname = 'user_scope')",
        (schema, sorted(CURATED_POLICIES)),
    ).fetchall()
    missing = sorted(set(CURATED_POLICIES) - {row[0] for row in rows})
    if missing:
        return Check(name, "fail", f"row-level security is not enforced on {', '.join(missing)}",
                     "open curated memory once with a current memoryport (its migrations "
                     "add the tables and policies)")  # fmt: skip
    return Check(name, "ok", f"user_scope enforced on {', '.join(sorted(CURATED_POLICIES))}")


def _holographic_tables(conn: Conn, schema: str) -> Check:
    """The holographic fact store and turn index (``storage.backend: postgres``): tables
    present with ``user_scope`` enforced, and whether vectors use pgvector."""
    name = "postgres facts/turns"
    present = conn.execute("SELECT to_regclass(%s), to_regclass(%s)",
                           (f'"{schema}".turns', f'"{schema}".facts')).fetchone()
    if present is None or None in present:
        return Check(name, "warn", f"schema {schema!r} has no fact store or turn index yet",
                     "they are created when the holographic provider first opens "
                     "with storage.backend: postgres")  # fmt: skip
    tables = sorted(TURN_TABLES + FACT_TABLES)
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = ANY(%s) AND c.relrowsecurity"
        " AND c.relforcerowsecurity AND EXISTS (SELECT 1 FROM pg_policies p"
        " WHERE p.schemaname = n.nspname AND p.tablename = c.relname"
        " AND p.policyname = 'user_scope')", (schema, tables)).fetchall()
    missing = sorted(set(tables) - {row[0] for row in rows})
    if missing:
        return Check(name, "fail", f"row-level security is not enforced on {', '.join(missing)}",
                     "open the holographic provider once with a current memoryport")
    vec = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE"
                       " attrelid = to_regclass(%s) AND attname = 'vec'",
                       (f'"{schema}".turn_vectors',)).fetchone()
    kind = "pgvector" if vec and str(vec[0]).startswith("vector") else "bytea (no pgvector)"
    return Check(name, "ok", f"user_scope enforced on {len(tables)} tables; vectors: {kind}")


def _latency(conn: Conn, rounds: int = 5) -> Check:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        conn.execute("SELECT 1").fetchone()
        times.append((time.perf_counter() - start) * 1000)
    median = statistics.median(times)
    detail = f"median round trip {median:.2f} ms over {rounds} queries"
    if median > LATENCY_WARN_MS:
        return Check(
            "postgres latency",
            "warn",
            detail,
            "run agents close to the server (same region/network); every query pays this",
        )
    return Check("postgres latency", "ok", detail)
