"""``memoryport migrate hermes`` against real Hermes-layout ``state.db`` files built here
with Hermes' table shapes (July schema 21, the newest schema 30 and an older, smaller
column set; see ../shared/spec/hermes-reference.md section (e))."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memoryport.admin.sessions import open_store
from memoryport.cli import main
from memoryport.providers.curated import CuratedMemory
from test_migrate_openclaw import tree_digest

TOKENS = ("input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0, "
          "cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0, "
          "reasoning_tokens INTEGER DEFAULT 0")  # fmt: skip
V21_SESSIONS = f"""CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, session_key TEXT, chat_id TEXT,
    chat_type TEXT, thread_id TEXT, display_name TEXT, origin_json TEXT,
    expiry_finalized INTEGER DEFAULT 0, model TEXT, model_config TEXT, system_prompt TEXT,
    parent_session_id TEXT REFERENCES sessions(id), started_at REAL NOT NULL, ended_at REAL,
    end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
    {TOKENS}, cwd TEXT, git_branch TEXT, git_repo_root TEXT, billing_provider TEXT,
    billing_base_url TEXT, billing_mode TEXT, estimated_cost_usd REAL, actual_cost_usd REAL,
    cost_status TEXT, cost_source TEXT, pricing_version TEXT, title TEXT,
    api_call_count INTEGER DEFAULT 0, handoff_state TEXT, handoff_platform TEXT,
    handoff_error TEXT, compression_failure_cooldown_until REAL,
    compression_failure_error TEXT, compression_fallback_streak INTEGER DEFAULT 0,
    rewind_count INTEGER DEFAULT 0, archived INTEGER DEFAULT 0{{extra}})"""
V21_MESSAGES = """CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    effect_disposition TEXT, timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT,
    reasoning TEXT, reasoning_content TEXT, reasoning_details TEXT,
    codex_reasoning_items TEXT, codex_message_items TEXT, platform_message_id TEXT,
    observed INTEGER, active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0{extra})"""
COMMON = """
CREATE TABLE schema_version (version INTEGER);
CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE INDEX idx_sessions_source ON sessions(source);
CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
CREATE VIRTUAL TABLE messages_fts USING fts5(content);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, content) VALUES (new.id, COALESCE(new.content, '') || ' '
    || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, ''));
END;
"""
SCHEMAS = {
    "v21": (V21_SESSIONS.format(extra=""), V21_MESSAGES.format(extra="")),
    "v30": (
        V21_SESSIONS.format(extra=", title_source TEXT, last_activity_at REAL, profile_name "
                            "TEXT, pinned INTEGER DEFAULT 0, hidden INTEGER DEFAULT 0, "
                            "tool_names TEXT"),
        V21_MESSAGES.format(extra=", api_content TEXT, display_kind TEXT, display_order "
                            "INTEGER, display_identity TEXT, _compressed_summary TEXT"),
    ),
    "older": (
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, "
        "model TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, "
        "message_count INTEGER DEFAULT 0, title TEXT)",
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT "
        "NULL, role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, "
        "tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER)",
    ),
}


def build_state_db(path: Path, schema: str = "v21") -> None:
    """A Hermes state.db: a root session, its compression child, a cron session, with a
    tool call, reasoning and a multi-line message."""
    sessions_sql, messages_sql = SCHEMAS[schema]
    conn = sqlite3.connect(path)
    conn.executescript(f"{sessions_sql};\n{messages_sql};\n{COMMON}")
    conn.execute("INSERT INTO schema_version VALUES (21)")
    columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    sessions: list[dict[str, Any]] = [
        {"id": "20260105_root", "source": "telegram", "user_id": "ana", "model": "m1",
         "title": "Trip planning", "started_at": 1767600000.0, "ended_at": 1767600500.0,
         "cwd": "projects/ana", "input_tokens": 120},
        {"id": "20260105_child", "source": "telegram", "user_id": "ana", "model": "m1",
         "parent_session_id": "20260105_root", "title": "Trip planning (2)",
         "started_at": 1767600600.0, "last_activity_at": 1767609999.0},
        {"id": "cron_1", "source": "cron", "started_at": 1767500000.0, "title": None},
    ]  # fmt: skip
    for row in sessions:
        row = {k: v for k, v in row.items() if k in columns}
        conn.execute(f"INSERT INTO sessions ({', '.join(row)}) VALUES "
                     f"({', '.join('?' for _ in row)})", list(row.values()))  # fmt: skip
    messages = [
        ("20260105_root", "user", "Book me a flight to Lisbon\nnext Friday", 1767600001.0),
        ("20260105_root", "assistant", "", 1767600002.0),
        ("20260105_root", "tool", '{"ok": true}', 1767600003.0),
        ("20260105_child", "user", "And a hotel near Alfama?", 1767600601.0),
        ("cron_1", "assistant", "Daily digest done.", 1767500001.0),
    ]
    mcols = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    for sid, role, content, ts in messages:
        row = {"session_id": sid, "role": role, "content": content, "timestamp": ts}
        if role == "assistant" and sid == "20260105_root":
            row["tool_calls"] = json.dumps([{"id": "c1", "type": "function", "function": {
                "name": "book_flight", "arguments": '{"to": "LIS"}'}}])  # fmt: skip
            row["reasoning"] = "User wants LIS."
            row["finish_reason"] = "tool_calls"
        if role == "tool":
            row.update(tool_call_id="c1", tool_name="book_flight")
        row = {k: v for k, v in row.items() if k in mcols}
        conn.execute(f"INSERT INTO messages ({', '.join(row)}) VALUES "
                     f"({', '.join('?' for _ in row)})", list(row.values()))  # fmt: skip
    conn.commit()
    conn.close()


def make_hermes(root: Path, schema: str = "v21") -> Path:
    (root / "memories").mkdir(parents=True)
    (root / "memories" / "MEMORY.md").write_text("Project uses pytest.\n§\nCI runs on push.")
    (root / "memories" / "USER.md").write_text("Ana prefers short answers.")
    build_state_db(root / "state.db", schema)
    return root


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--home", str(home), "migrate", "hermes", *args])


def report_of(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


@pytest.mark.parametrize("schema", ["v21", "v30", "older"])
def test_every_session_and_message_is_imported(tmp_path: Path, schema: str) -> None:
    source, home = make_hermes(tmp_path / "hermes", schema), tmp_path / "home"
    report = report_of(run(home, "--source", str(source), "--json"))
    assert report["counts"]["sessions"] == 3 and report["counts"]["messages"] == 5
    with open_store(home) as store:
        child = store.get_session("20260105_child")
        assert child.parent_session_id == "20260105_root"
        assert store.lineage_root("20260105_child") == "20260105_root"
        assert (child.source, child.user_id, child.title) == ("telegram", "ana",
                                                              "Trip planning (2)")
        root = store.get_session("20260105_root")
        assert root.started_at == 1767600000.0 and root.ended_at == 1767600500.0
        assert root.message_count == 3 and root.last_active_at == 1767600003.0
        assert store.get_session("cron_1").source == "cron"
        msgs = store.get_messages("20260105_root")
        assert [m.metadata["hermes"]["id"] for m in msgs] == [1, 2, 3]
        assert msgs[0].content == "Book me a flight to Lisbon\nnext Friday"
        assert msgs[0].timestamp == 1767600001.0
        assert msgs[2].tool_name == "book_flight" and msgs[2].tool_call_id == "c1"
        if schema != "older":
            assert msgs[1].tool_calls and msgs[1].tool_calls[0]["id"] == "c1"
            assert msgs[1].reasoning == "User wants LIS."
            assert msgs[1].metadata["hermes"]["finish_reason"] == "tool_calls"
            assert root.metadata["hermes"]["cwd"] == "projects/ana" and root.input_tokens == 120
        assert child.last_active_at == 1767600601.0  # its newest message
        if schema == "v30":
            assert child.metadata["hermes"]["last_activity_at"] == 1767609999.0
        hits = store.search_messages("Alfama").hits
        assert [h.message.session_id for h in hits] == ["20260105_child"]


def test_import_is_idempotent_and_appends_what_grew(tmp_path: Path) -> None:
    source, home = make_hermes(tmp_path / "hermes"), tmp_path / "home"
    report_of(run(home, "--source", str(source), "--json"))
    again = report_of(run(home, "--source", str(source), "--json"))
    assert again["counts"]["sessions"] == 0 and again["counts"]["messages"] == 0
    assert again["counts"]["sessions_unchanged"] == 3
    assert CuratedMemory(home).entries("memory") == ["Project uses pytest.", "CI runs on push."]
    conn = sqlite3.connect(source / "state.db")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                 "('20260105_root', 'user', 'Window seat please', 1767600400.0)")
    conn.commit()
    conn.close()
    grown = report_of(run(home, "--source", str(source), "--json"))
    assert grown["counts"]["messages"] == 1 and grown["counts"]["sessions_unchanged"] == 2
    with open_store(home) as store:
        assert store.get_messages("20260105_root")[-1].content == "Window seat please"
        assert store.get_session("20260105_child").parent_session_id == "20260105_root"


def test_source_is_read_only_and_curated_history_has_provenance(tmp_path: Path) -> None:
    source, home = make_hermes(tmp_path / "hermes"), tmp_path / "home"
    before = tree_digest(source)
    report_of(run(home, "--source", str(source), "--json"))
    assert tree_digest(source) == before
    store = CuratedMemory(home)
    assert store.entries("user") == ["Ana prefers short answers."]
    assert {r.provenance.source for r in store.history("user")} == {"migration:hermes"}


def test_profiles_go_to_the_same_profile(tmp_path: Path) -> None:
    source, home = make_hermes(tmp_path / "hermes"), tmp_path / "home"
    make_hermes(source / "profiles" / "work")
    (source / "profiles" / "Not A Name").mkdir()
    report = report_of(run(home, "--source", str(source), "--json"))
    assert any("Not A Name" in w and "skipped" in w for w in report["warnings"])
    with open_store(home / "profiles" / "work") as store:
        assert store.get_session("cron_1").source == "cron"
    assert CuratedMemory(home / "profiles" / "work").entries("user")
    skipped = tmp_path / "home2"
    report_of(run(skipped, "--source", str(source), "--json", "--no-profiles"))
    assert not (skipped / "profiles").exists()


def test_orphan_parent_is_kept_in_metadata(tmp_path: Path) -> None:
    source, home = make_hermes(tmp_path / "hermes"), tmp_path / "home"
    conn = sqlite3.connect(source / "state.db")
    conn.execute("INSERT INTO sessions (id, source, parent_session_id, started_at) VALUES "
                 "('lost_child', 'cli', 'gone', 1767700000.0)")
    conn.commit()
    conn.close()
    report_of(run(home, "--source", str(source), "--json"))
    with open_store(home) as store:
        lost = store.get_session("lost_child")
        assert lost.parent_session_id is None
        assert lost.metadata["hermes"]["parent_session_id"] == "gone"


def test_dry_run_and_missing_source_write_nothing(tmp_path: Path) -> None:
    source, home = make_hermes(tmp_path / "hermes"), tmp_path / "home"
    dry = report_of(run(home, "--source", str(source), "--json", "--dry-run"))
    assert dry["applied"] is False and "5 messages" in json.dumps(dry["items"])
    assert not home.exists()
    missing = run(home, "--source", str(tmp_path / "nope"))
    assert missing.exit_code == 1 and str(tmp_path / "nope") in missing.output
    assert not home.exists()


def test_text_that_is_not_utf8_is_kept_readable(tmp_path: Path) -> None:
    source, home = make_hermes(tmp_path / "hermes"), tmp_path / "home"
    conn = sqlite3.connect(source / "state.db")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                 "('cron_1', 'user', CAST(x'6361666580' AS TEXT), 1767500002.0)")
    conn.commit()
    conn.close()
    report_of(run(home, "--source", str(source), "--json"))
    with open_store(home) as store:
        assert store.get_messages("cron_1")[-1].content == "cafe\ufffd"


def test_not_a_hermes_database_is_a_clear_error(tmp_path: Path) -> None:
    source, home = tmp_path / "hermes", tmp_path / "home"
    source.mkdir()
    sqlite3.connect(source / "state.db").executescript("CREATE TABLE other (x);")
    result = run(home, "--source", str(source))
    assert result.exit_code == 1 and "Hermes" in result.output
