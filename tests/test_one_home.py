"""Knowledge written once (issue 11, "no copied knowledge in src/").

Each rule below used to be written in two or more places: the text-validity rule (four
copies, one of which did not join surrogate pairs), the chat-API message keys, the curated
budgets and ``agent_notes`` modes (config and the curated store), the ``memory:`` settings
to ``CuratedMemory`` mapping (admin, wiring, the provider) and the curated argument checks.
Static checks keep the copies from coming back; behaviour checks pin what the one home does.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoryport.admin.curated import open_curated, usage_summary
from memoryport.cli import main
from memoryport.config import (
    AGENT_NOTES_MODES,
    DEFAULT_MEMORY_CHAR_LIMIT,
    DEFAULT_USER_CHAR_LIMIT,
    MemorySettings,
)
from memoryport.errors import MemoryStoreError, ToolArgumentError
from memoryport.providers.curated import CuratedMemory, create_builtin_provider, curated_options
from memoryport.providers.curated.editor import clean_content, clean_old_text
from memoryport.storage.sessions.portable import export_line, parse_export_line
from memoryport.storage.sessions.records import MessageRecord, SessionRecord
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.types import valid_text, valid_utf8

SRC = Path(__file__).resolve().parents[1] / "src" / "memoryport"


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(SRC.rglob("*.py"))]


def _defines(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


@pytest.mark.parametrize(
    ("name", "home"),
    [
        ("valid_text", "types.py"),
        ("valid_utf8", "types.py"),
        ("API_KEYS", "turn.py"),
        ("DEFAULT_MEMORY_CHAR_LIMIT", "config/__init__.py"),
        ("DEFAULT_USER_CHAR_LIMIT", "config/__init__.py"),
        ("AGENT_NOTES_MODES", "config/limits.py"),
        ("curated_options", "providers/curated/store.py"),
    ],
)
def test_a_rule_is_defined_in_one_module(name: str, home: str) -> None:
    homes = [str(p.relative_to(SRC)) for p, tree in _modules() if _defines(tree, name)]
    assert homes == [home]


def test_no_module_but_types_spells_the_surrogate_range() -> None:
    """The regex (or any literal holding a surrogate) was copied into records/portable."""
    holders = [
        str(p.relative_to(SRC))
        for p, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and any(0xD800 <= ord(c) <= 0xDFFF for c in node.value)
    ]
    assert sorted(set(holders)) == ["types.py"]


def test_no_module_but_config_spells_the_curated_budgets() -> None:
    holders = {
        str(p.relative_to(SRC))
        for p, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in (2200, 1375)
    }
    assert holders == {"config/__init__.py"}


def test_valid_text_and_valid_utf8() -> None:
    assert valid_text("x \ud800 y") == "x \ufffd y"
    assert valid_text("\ud83d\ude00 ok") == "\U0001f600 ok"  # a split pair is joined
    assert valid_text("\udc00\ud800") == "\ufffd\ufffd"
    plain = "plain ünïcödé 東京"
    assert valid_text(plain) is plain
    assert valid_utf8({"k\udc00": ["\ud800", ("\ud83d\ude00",), 3, None]}) == {
        "k\ufffd": ["\ufffd", ["\U0001f600"], 3, None]
    }


def test_import_makes_text_valid_the_way_the_store_does() -> None:
    """``portable`` had its own rule: a surrogate pair written as two code points became
    two U+FFFD on import, while every other path joined it into its character."""
    session = SessionRecord(id="s1", source="cli", title="t \ud800")
    message = MessageRecord(1, "s1", "user", "\ud83d\ude00 hi", 1.0)
    line = export_line(session, message)  # ensure_ascii=False: the code points as they are
    assert "\ud83d\ude00" in line
    record, read = parse_export_line(line)
    assert read is not None
    messages = [read]
    assert record.title == "t \ufffd"
    assert messages[0].content == "\U0001f600 hi"


def test_config_defaults_are_the_curated_defaults(tmp_path: Path) -> None:
    store = CuratedMemory(tmp_path)
    from_config = CuratedMemory(tmp_path, **curated_options(MemorySettings()))
    for target, limit in (("memory", DEFAULT_MEMORY_CHAR_LIMIT), ("user", DEFAULT_USER_CHAR_LIMIT)):
        assert store.usage(target).limit == from_config.usage(target).limit == limit
    assert MemorySettings().agent_notes == AGENT_NOTES_MODES[0] == "shared"
    schema = {f["key"]: f for f in create_builtin_provider(tmp_path).get_config_schema()}
    assert schema["memory_char_limit"]["default"] == DEFAULT_MEMORY_CHAR_LIMIT
    assert schema["agent_notes"]["choices"] == list(AGENT_NOTES_MODES)


def test_every_reader_of_the_memory_settings_applies_all_of_them(tmp_path: Path) -> None:
    """``usage_summary`` used to drop ``agent_notes``; all readers now share one mapping."""
    settings = MemorySettings(memory_char_limit=50, user_char_limit=40, agent_notes="per_user",
                              user_profile_enabled=False)  # fmt: skip
    provider = create_builtin_provider(tmp_path, user_id="ann", **curated_options(settings))
    stores = [open_curated(tmp_path, "ann", settings), provider.store]
    for store in stores:
        assert store is not None
        assert store.agent_notes == "per_user"
        assert (store.usage("memory").limit, store.usage("user").limit) == (50, 40)
        assert store.path("memory") == tmp_path / "memories" / "users" / "ann" / "MEMORY.md"
        assert not store.is_enabled("user")
    summary = usage_summary(tmp_path, settings)["targets"]
    assert summary["memory"]["limit"] == 50 and summary["user"]["enabled"] is False


def test_curated_argument_checks_share_one_wording() -> None:
    for check, what in ((clean_content, "content"), (lambda v: clean_old_text(v), "old_text")):
        with pytest.raises(MemoryStoreError, match=f"^{what} is required: "):
            check(None)
        with pytest.raises(MemoryStoreError, match=f"^{what} must be a string, got int 7"):
            check(7)
        with pytest.raises(MemoryStoreError, match=f"^{what} cannot be empty "):
            check("   ")
        assert check(" a \ud800 ") == "a \ufffd"


def test_sessions_list_and_search_read_the_source_options_alike(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    for source in ("cli", "tool"):
        session = store.create_session(source=source)
        store.append_messages(session.id, [{"role": "user", "content": f"walrus {source}"}])
    store.close()
    runner = CliRunner()

    def sources(*args: str) -> list[str]:
        result = runner.invoke(main, ["sessions", *args, "--home", str(tmp_path), "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        return sorted(r["source"] for r in data.get("sessions", data.get("results", [])))

    assert sources("list") == sources("search", "walrus") == ["cli"]
    assert sources("list", "--all-sources") == sources("search", "walrus", "--all-sources")
    assert sources("list", "--all-sources") == ["cli", "tool"]
    assert sources("list", "--source", "tool") == sources("search", "walrus", "--source", "tool")


def test_sort_orders_are_spelled_once() -> None:
    """The three sort orders were listed in the store, the tool (check and schema enum)
    and the CLI; all now read ``records.SORT_ORDERS`` and the one check."""
    from memoryport.providers.sessions.tool import SESSION_SEARCH_SCHEMA
    from memoryport.storage.sessions.records import SORT_ORDERS, check_sort

    assert SORT_ORDERS == ("relevance", "newest", "oldest")
    sort = SESSION_SEARCH_SCHEMA["parameters"]["properties"]["sort"]
    assert sort["enum"] == list(SORT_ORDERS)
    with pytest.raises(ToolArgumentError, match="sort must be relevance, newest or oldest"):
        check_sort("best")
    literal = "relevance"
    holders = {
        str(p.relative_to(SRC))
        for p, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.List | ast.Tuple)
        and any(isinstance(e, ast.Constant) and e.value == literal for e in node.elts)
    }
    assert holders == {"storage/sessions/records.py"}  # the SortOrder Literal only


def test_the_cli_offers_the_sort_orders(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["sessions", "search", "x", "--sort", "best", "--home", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "'relevance', 'newest', 'oldest'" in result.output


def _holders(text: str) -> set[str]:
    return {
        str(p.relative_to(SRC)) for p in sorted(SRC.rglob("*.py")) if text in p.read_text("utf-8")
    }


def test_sqlite_storage_setup_is_written_once(tmp_path: Path) -> None:
    """The SQLite migration ledger (sessions, facts, turns), the month-name table (the
    time resolver and the session re-ranker) and private database-file creation (the
    session store and the fact store) each had copies; one home each now."""
    import sqlite3

    from memoryport.storage import timeexpr
    from memoryport.storage.facts import migrations as fact_migrations
    from memoryport.storage.facts.store import FactStore
    from memoryport.storage.sessions import temporal
    from memoryport.storage.turns import schema as turn_schema

    assert _holders("applied_at REAL NOT NULL") == {"storage/sqlite_ledger.py"}
    assert _holders('"september"') == {"storage/timeexpr.py"}
    assert _holders("os.O_EXCL, 0o600") == {
        "storage/sessions/sqlite/connect.py",
        "storage/markdown.py",  # a unique temp file, not a database
    }
    assert temporal.MONTHS is timeexpr.MONTHS
    assert temporal.has_temporal_expression("back in sept") is True
    store = FactStore(tmp_path / "h" / "holographic.db")
    store.close()
    assert (tmp_path / "h" / "holographic.db").stat().st_mode & 0o777 == 0o600
    conn = sqlite3.connect(tmp_path / "h" / "holographic.db", isolation_level=None)
    assert turn_schema.migrate(conn) == [name for name, _ in turn_schema.MIGRATIONS]
    assert fact_migrations.applied(conn) == [name for name, _ in fact_migrations.MIGRATIONS]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"_migrations_facts", "_turns_migrations"} <= tables
    conn.close()
