"""Row-level security on the curated-memory and audit tables in PostgreSQL.

The suite's server user is a superuser, which row-level security never binds, so these
tests connect as an ordinary role that owns the tables (the policies are ``FORCE``d, so
they bind the owner too). A connection scoped to alice gets none of bob's rows through
every query the code has and through a hand-written ``SELECT *``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.admin.doctor_postgres import postgres_checks
from memoryport.errors import DriftError, MemoryStoreError
from memoryport.providers.curated import CuratedMemory
from memoryport.storage.curated_targets import TargetPlace
from memoryport.storage.postgres_audit import PostgresAuditLog
from memoryport.storage.postgres_curated import PostgresCuratedBackend
from memoryport.storage.postgres_curated_schema import POLICIES, close_databases
from memoryport.storage.sessions.postgres.migrations import SCOPE_SETTING

pytestmark = pytest.mark.postgres


@pytest.fixture
def owner(pg_server: pgserver.PgServer) -> Iterator[tuple[str, str]]:
    """``(dsn, schema)``: a fresh login role allowed to create schemas, and a schema name."""
    name = f"mp_cur_{uuid.uuid4().hex[:8]}"
    schema = pgserver.fresh_schema("currls")
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                sql.Identifier(conn.info.dbname), sql.Identifier(name)
            )
        )
    yield make_conninfo(pg_server.uri, user=name), schema
    close_databases(schema)
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _raw_rows(dsn: str, schema: str, scope: str | None) -> dict[str, list[tuple[object, ...]]]:
    """``SELECT *`` of every policed table on a fresh connection with ``scope``."""
    with psycopg.connect(dsn) as conn:
        if scope is not None:
            conn.execute("SELECT set_config(%s, %s, false)", (SCOPE_SETTING, scope))
        return {
            table: conn.execute(
                sql.SQL("SELECT * FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(table))
            ).fetchall()
            for table in POLICIES
        }


def _fill(dsn: str, schema: str, home: Path, superuser: str) -> PostgresAuditLog:
    """Curated rows (targets, history, a drift backup) and audit rows of alice and bob."""
    backend = PostgresCuratedBackend(dsn, schema=schema)
    for who in ("alice", "bob"):
        store = CuratedMemory(home, user_id=who, agent_notes="per_user", backend=backend,
                              memory_char_limit=100)  # fmt: skip
        store.add("memory", f"{who} notes zebra.")
        store.add("user", f"{who} profile zebra.")
    with psycopg.connect(superuser, autocommit=True) as conn:  # bob's row drifts
        conn.execute(
            sql.SQL("UPDATE {}.curated_targets SET content = %s WHERE user_id = 'bob' "
                    "AND target = 'memory'").format(sql.Identifier(schema)),
            ("bob notes zebra.\n§\n" + "b" * 150,),
        )  # fmt: skip
    bob = CuratedMemory(home, user_id="bob", agent_notes="per_user", backend=backend,
                        memory_char_limit=100)  # fmt: skip
    with pytest.raises(DriftError):
        bob.add("memory", "bob again.")
    admin = PostgresAuditLog(dsn, schema=schema)
    for who in ("alice", "bob"):
        admin.append(shell="cli", kind="write", action="add", user_id=who, detail=f"{who} zebra")
        admin.hold(who, f"{who}-session", {"text": f"{who} zebra"})
    return admin


def test_alice_gets_none_of_bobs_rows(
    owner: tuple[str, str], pg_server: pgserver.PgServer, tmp_path: Path
) -> None:
    dsn, schema = owner
    admin = _fill(dsn, schema, tmp_path, pg_server.uri)
    backend = PostgresCuratedBackend(dsn, schema=schema)
    alice = CuratedMemory(tmp_path, user_id="alice", agent_notes="per_user", backend=backend)
    assert alice.entries("memory") == ["alice notes zebra."]
    assert all("bob" not in r.after for t in alice.targets for r in alice.history(t))
    # bob's targets opened on alice's connection: every query finds nothing
    for target in ("memory", "user"):
        place = TargetPlace(tmp_path / f"{target}.md", target, owner="bob", scope="alice",
                            char_limit=100)  # fmt: skip
        file, log = backend.open_target(place)
        assert file.read_raw() == ""
        assert log.revisions() == [] and log.latest_rev() is None
        with pytest.raises(MemoryStoreError, match="No revision 1"):
            log.get(1)
        with pytest.raises(MemoryStoreError, match=r"row-level security|not visible"):
            file.mutate(lambda state: (["alice writes into bob"], None))
    audit = PostgresAuditLog(dsn, schema=schema, user_id="alice")
    assert [e.user_id for e in audit.events()] == ["alice"]
    assert audit.count() == 1 and audit.held_count() == 1
    assert not audit.has_held("bob") and audit.claim_held("bob") == []
    assert admin.has_held("bob")  # untouched by alice's claim
    scoped = _raw_rows(dsn, schema, "alice")
    assert all(scoped[t] for t in ("curated_targets", "curated_history", "audit_events"))
    assert "bob" not in json.dumps(scoped, default=str)
    assert _raw_rows(dsn, schema, None) == {t: [] for t in POLICIES}
    everyone = _raw_rows(dsn, schema, "*")
    assert "bob" in json.dumps(everyone["curated_backups"], default=str)
    assert len(everyone["audit_events"]) == 2


def test_shared_notes_are_visible_to_every_user(owner: tuple[str, str], tmp_path: Path) -> None:
    dsn, schema = owner
    backend = PostgresCuratedBackend(dsn, schema=schema)
    CuratedMemory(tmp_path, user_id="alice", backend=backend).add("memory", "Team note.")
    bob = CuratedMemory(tmp_path, user_id="bob", backend=backend)
    assert bob.entries("memory") == ["Team note."]
    assert bob.entries("user") == []


def test_doctor_checks_the_curated_and_audit_policies(owner: tuple[str, str]) -> None:
    dsn, schema = owner

    def check() -> tuple[str, str]:
        found = {c.name: c for c in postgres_checks(dsn, schema)}["postgres curated/audit"]
        return found.status, found.detail

    assert check()[0] == "warn"
    PostgresAuditLog(dsn, schema=schema)  # creates the tables
    status, detail = check()
    assert status == "ok" and "audit_events" in detail and "curated_targets" in detail
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER TABLE {}.curated_history NO FORCE ROW LEVEL SECURITY").format(
                sql.Identifier(schema)
            )
        )
    status, detail = check()
    assert status == "fail" and "curated_history" in detail
