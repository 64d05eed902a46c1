"""The shared store suite's isolation cases with row-level security in effect.

``conftest.BACKENDS`` runs the contract as the server's superuser, which policies never
bind; here the same test functions run against stores opened by an ordinary role that
owns the schema (the policies are forced, so they bind it), and by an application role
the owner granted the store to (``grant_app_role``: the policies bind it as a non-owner,
and its word searches read the search view with the owner's rights).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
import test_sessions_store as store_suite
import test_sessions_tool as tool_suite
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations

pytestmark = pytest.mark.postgres

CASES: dict[str, Callable[..., None]] = {
    "per_user_scoping": store_suite.test_per_user_scoping,
    "bound_store": store_suite.test_store_bound_to_user_never_serves_another,
    "titled": store_suite.test_sessions_titled_scopes_and_ignores_case_and_blanks,
    "forget": store_suite.test_forget_message_session_user_leave_no_trace,
    "tool_scoping": tool_suite.test_user_scoping_through_initialize,
}


@pytest.fixture(scope="module")
def role_dsns(pg_server: pgserver.PgServer) -> Iterator[dict[str, str]]:
    """DSNs of two ordinary roles: ``owner`` (creates the schemas) and ``app``."""
    names = {kind: f"mp_suite_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("owner", "app")}
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE postgres TO {}").format(
                sql.Identifier(names["owner"])
            )
        )
    yield {**{k: make_conninfo(pg_server.uri, user=n) for k, n in names.items()}, **{
        "app_role": names["app"]}}  # fmt: skip
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


OWNER_ONLY = {"forget"}
"""Cases that end in ``rebuild_index`` (``REINDEX`` needs the tables' owner)."""


@pytest.mark.parametrize(
    ("case", "mode"),
    [
        (c, m)
        for c in sorted(CASES)
        for m in ("owner", "app")
        if m == "owner" or c not in OWNER_ONLY
    ],
)
def test_isolation_case_with_policies_on(
    case: str, mode: str, role_dsns: dict[str, str], tmp_path: Path
) -> None:
    """``owner``: the role owning the schema runs the store (forced policies bind it);
    ``app``: an application role granted by the owner (``grant_app_role``) runs it, and
    word searches go through the search view the owner's rights read."""
    schemas: dict[str, str] = {}
    made: list[SessionStore] = []

    def make_store(**kwargs: Any) -> SessionStore:
        key = str(kwargs.pop("path", None) or kwargs.pop("schema", None) or len(schemas))
        schema = schemas.setdefault(key, pgserver.fresh_schema("rs"))
        if mode == "app":
            PostgresSessionStore(role_dsns["owner"], schema=schema, pool_size=1).close()
            with psycopg.connect(role_dsns["owner"], autocommit=True) as conn:
                migrations.grant_app_role(conn, schema, role_dsns["app_role"])
        store = PostgresSessionStore(role_dsns[mode], schema=schema, pool_size=1, **kwargs)
        store.reopen_kwargs = {"schema": key}  # type: ignore[attr-defined]
        made.append(store)
        return store

    fn = CASES[case]
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    given = {"make_store": make_store, "tmp_path": tmp_path}
    try:
        fn(**{n: make_store() if n == "store" else given[n] for n in names})
    finally:
        for store in made:
            store.close()
        for schema in schemas.values():
            pgserver.drop_schema(role_dsns["owner"], schema)
