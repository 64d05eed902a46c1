"""``memoryport doctor`` on the search path under row-level security: whether the
policies bind the store's role and whether word searches can use their indexes.

One role owning and using the store is bound by the forced policies, so its word
searches cannot use the indexes (a warning); an application role granted by the owner
(``grant_app_role``) is bound as a non-owner and searches through the owner's view (ok);
the owner itself, no longer forced after that grant, fails the policy check.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgserver
from memoryport.cli import main
from memoryport.storage.sessions.postgres import PostgresSessionStore, migrations

pytestmark = pytest.mark.postgres


@pytest.fixture
def dsns(pg_server: pgserver.PgServer) -> Iterator[dict[str, str]]:
    """``owner`` (may create schemas) and ``app`` login roles; the store's schema."""
    names = {kind: f"mp_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("owner", "app")}
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("GRANT CREATE ON DATABASE postgres TO {}").format(
                sql.Identifier(names["owner"])
            )
        )
    schema = "memoryport"  # the schema doctor checks
    pgserver.drop_schema(pg_server.uri, schema)  # another test's, owned by another role
    yield {
        **{kind: make_conninfo(pg_server.uri, user=name) for kind, name in names.items()},
        "app_role": names["app"],
        "schema": schema,
    }
    pgserver.drop_schema(pg_server.uri, schema)
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        for name in names.values():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _doctor(home: Path, dsn: str) -> dict[str, dict[str, Any]]:
    home.mkdir(parents=True, exist_ok=True)
    config = {"storage": {"backend": "postgres", "dsn": dsn}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["--home", str(home), "doctor", "--json"])
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_doctor_tells_whether_word_searches_can_use_their_indexes(
    tmp_path: Path, dsns: dict[str, str]
) -> None:
    schema = dsns["schema"]
    PostgresSessionStore(dsns["owner"], schema=schema, pool_size=1).close()
    checks = _doctor(tmp_path / "one", dsns["owner"])
    assert checks["postgres policies"]["status"] == "ok"
    assert "owner, policies forced" in checks["postgres policies"]["detail"]
    search = checks["postgres search"]
    assert search["status"] == "warn" and "whole messages table" in search["detail"]
    assert "grant_app_role" in search["fix"]
    with psycopg.connect(dsns["owner"], autocommit=True) as conn:
        migrations.grant_app_role(conn, schema, dsns["app_role"])
        migrations.grant_app_role(conn, schema, dsns["app_role"])  # idempotent
    checks = _doctor(tmp_path / "app", dsns["app"])
    assert checks["postgres policies"]["status"] == "ok"
    assert "(application role)" in checks["postgres policies"]["detail"]
    assert checks["postgres search"]["status"] == "ok"
    assert "use the indexes" in checks["postgres search"]["detail"]
    owner = _doctor(tmp_path / "owner", dsns["owner"])["postgres policies"]
    assert owner["status"] == "fail" and "the owner of message_events, messages" in owner["detail"]
    assert "grant_app_role" in owner["fix"]
    with psycopg.connect(dsns["owner"], autocommit=True) as conn:
        conn.execute(sql.SQL("DROP VIEW {}.session_search").format(sql.Identifier(schema)))
    checks = _doctor(tmp_path / "app", dsns["app"])
    assert checks["postgres search"]["status"] == "fail"
    assert "session_search" in checks["postgres search"]["detail"]
    assert "m040" in checks["postgres search"]["fix"]
    with psycopg.connect(dsns["owner"], autocommit=True) as conn:
        conn.execute(sql.SQL("DROP VIEW {}.message_search").format(sql.Identifier(schema)))
    checks = _doctor(tmp_path / "app", dsns["app"])
    assert checks["postgres search"]["status"] == "fail"
    assert "m020" in checks["postgres search"]["fix"]
