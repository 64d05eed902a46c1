"""``memoryport export`` / ``memoryport import``: one archive of a whole home (curated
memory with history, sessions, the holographic facts and turns through the provider's
export hook), an exact round trip, idempotent re-import and merge rules."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memoryport.admin.archive import export_home, import_archive
from memoryport.admin.sessions import open_store
from memoryport.cli import main
from memoryport.provider import PortableProvider
from memoryport.providers.curated import CuratedMemory
from memoryport.providers.curated.store import Provenance
from memoryport.providers.holographic import DB_NAME, create_holographic_provider
from memoryport.storage.facts.records import FactInput
from memoryport.storage.facts.records import Provenance as FactProvenance
from memoryport.storage.facts.store import FactStore
from memoryport.storage.turns import TurnIndex, TurnInput


def populate(home: Path) -> None:
    """A home with curated memory (shared and per-user, several revisions), sessions with
    lineage and tool calls, facts with a supersession, and stored turns."""
    store = CuratedMemory(home)
    store.add("memory", "Project uses pytest.")
    store.add("memory", "CI runs on every push.", provenance=Provenance(source="cli"))
    store.replace("memory", "every push", "CI runs on every push to main.")
    store.add("user", "Prefers short answers.")
    CuratedMemory(home, user_id="bob").add("user", "Bob writes Go.")
    with open_store(home) as sessions:
        sessions.create_session("s1", source="telegram", title="Trip", started_at=100.0,
                                metadata={"k": [1, 2]})  # fmt: skip
        sessions.append_messages("s1", [
            {"role": "user", "content": "Book Lisbon", "timestamp": 101.0},
            {"role": "assistant", "content": "", "timestamp": 102.0, "tool_calls": [
                {"id": "c1", "function": {"name": "book", "arguments": "{}"}}]},
            {"role": "tool", "content": "ok", "tool_call_id": "c1", "tool_name": "book",
             "timestamp": 103.0},
        ])  # fmt: skip
        sessions.create_session("s2", source="cli", parent_session_id="s1", started_at=200.0)
        sessions.append_messages("s2", [{"role": "user", "content": "Hotel?", "timestamp": 201}])
    facts = FactStore(home / DB_NAME)
    origin = FactProvenance("s1", "3", "tool", "model")
    facts.add(FactInput("Ana lives in Lisbon.", "user_pref", provenance=origin))
    facts.add(FactInput("Ana lives in Porto.", "user_pref", provenance=origin))
    facts.add(FactInput("The Tidepool repo uses Rust.", "project"))
    facts.close()
    with TurnIndex(home / DB_NAME, dense=False) as turns:
        turns.add_turns([TurnInput("s1", "user", "Book Lisbon", 101.0, "m1"),
                         TurnInput("s1", "assistant", "Done.", 102.0, "m2"),
                         TurnInput("s9", "user", "Hi", 300.0, "", "bob")])  # fmt: skip


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def jsonl(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def without_imports(data: bytes) -> list[dict[str, Any]]:
    """Fact rows minus the ``import`` revisions an import adds."""
    return [r for r in jsonl(data)
            if not (r["table"] == "fact_revisions" and r["row"]["action"] == "import")]


def test_holographic_provider_has_the_export_hook() -> None:
    assert isinstance(create_holographic_provider(), PortableProvider)


def test_export_import_round_trip_is_exact(tmp_path: Path) -> None:
    home, copy = tmp_path / "a", tmp_path / "b"
    populate(home)
    first = tmp_path / "a.zip"
    manifest = export_home(home, first)
    assert manifest["sessions"] == {"sessions": 2, "messages": 4}
    assert manifest["curated"]["files"] == 3 and manifest["curated"]["entries"] == 4
    assert manifest["providers"]["holographic"]["counts"]["facts"] == 3
    report = import_archive(copy, first)
    assert report.counts["messages"] == 4
    second = tmp_path / "b.zip"
    export_home(copy, second)
    a, b = members(first), members(second)
    assert sorted(a) == sorted(b)
    for name in a:
        if name.endswith(".md") or name == "sessions.jsonl":
            assert a[name] == b[name], name
    for name in (n for n in a if n.endswith(".md.jsonl")):  # history: plus one import record
        old, new = jsonl(a[name]), jsonl(b[name])
        assert new[:-1] == old
        assert (new[-1]["action"], new[-1]["source"]) == ("import", "import:a.zip")
        assert new[-1]["before"] == new[-1]["after"] == old[-1]["after"]
    facts_name = "providers/holographic/facts.jsonl"
    facts_a, facts_b = a[facts_name], b[facts_name]
    assert without_imports(facts_b) == jsonl(facts_a)
    imports = [r["row"] for r in jsonl(facts_b) if r["row"].get("action") == "import"]
    assert len(imports) == 3 and {r["actor"] for r in imports} == {"import:a.zip"}
    strip = [{k: v for k, v in t.items() if k != "recorded_at"}
             for t in jsonl(a["providers/holographic/turns.jsonl"])]  # fmt: skip
    assert [{k: v for k, v in t.items() if k != "recorded_at"}
            for t in jsonl(b["providers/holographic/turns.jsonl"])] == strip  # fmt: skip


def test_importing_twice_adds_nothing(tmp_path: Path) -> None:
    home, copy = tmp_path / "a", tmp_path / "b"
    populate(home)
    archive = tmp_path / "a.zip"
    export_home(home, archive)
    import_archive(copy, archive)
    snapshot = tmp_path / "once.zip"
    export_home(copy, snapshot)
    again = import_archive(copy, archive)
    assert again.counts["sessions"] == 0 and again.counts["sessions_skipped"] == 2
    assert not [r for r in again.rows if r.action == "add"]
    twice = tmp_path / "twice.zip"
    export_home(copy, twice)
    once, after = members(snapshot), members(twice)
    for name in once:
        if name != "manifest.json" and not name.endswith(".md.jsonl"):
            assert once[name] == after[name], name


def test_merge_into_a_home_with_data(tmp_path: Path) -> None:
    home, other = tmp_path / "a", tmp_path / "b"
    populate(home)
    archive = tmp_path / "a.zip"
    export_home(home, archive)
    CuratedMemory(other).add("memory", "Uses uv for packaging.")
    CuratedMemory(other).add("memory", "project uses pytest")
    with open_store(other) as sessions:
        sessions.create_session("s1", source="cli", title="Mine")
    facts = FactStore(other / DB_NAME)
    facts.add(FactInput("The Tidepool repo uses Rust.", "project"))
    facts.close()
    report = import_archive(other, archive)
    store = CuratedMemory(other)
    assert store.entries("memory") == ["Uses uv for packaging.", "project uses pytest",
                                       "CI runs on every push to main."]  # fmt: skip
    assert store.history("memory")[-1].provenance.source == "import:a.zip"
    with open_store(other) as sessions:
        assert sessions.get_session("s1").title == "Mine"  # an existing id is skipped
        assert sessions.get_session("s2").parent_session_id == "s1"
    facts = FactStore(other / DB_NAME)
    try:
        contents = [f.content for f in facts.list_facts(limit=20, include_retired=True)]
        for fact in ("Ana lives in Lisbon.", "Ana lives in Porto.", "The Tidepool repo uses Rust."):
            assert contents.count(fact) == 1, fact  # the Rust fact was there: skipped
        porto = next(f for f in facts.list_facts(limit=20) if "Porto" in f.content)
        assert [r.action for r in facts.revisions(porto.id)][-1] == "import"
    finally:
        facts.close()
    detail = {r.kind: r.detail for r in report.rows if r.action == "import"}
    assert "facts_imported 2" in detail["provider"] and "facts_skipped 1" in detail["provider"]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_cli_export_and_import(tmp_path: Path) -> None:
    home, copy = tmp_path / "a", tmp_path / "b"
    populate(home)
    out = tmp_path / "out" / "backup.zip"
    result = run("--home", str(home), "export", "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["manifest"]["sessions"]["messages"] == 4
    text = run("--home", str(home), "export", "--out", str(out))
    assert "sessions: 2 sessions, 4 messages" in text.output
    imported = run("--home", str(copy), "import", str(out), "--json")
    report = json.loads(imported.output)
    assert imported.exit_code == 0 and report["counts"]["messages"] == 4


def test_bad_archives_are_refused_and_change_nothing(tmp_path: Path) -> None:
    home = tmp_path / "h"
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"no zip here")
    result = run("--home", str(home), "import", str(junk))
    assert result.exit_code == 1 and "memoryport archive" in result.output
    newer = tmp_path / "newer.zip"
    with zipfile.ZipFile(newer, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"format": "memoryport.archive",
                                                      "version": 99}))  # fmt: skip
    result = run("--home", str(home), "import", str(newer))
    assert result.exit_code == 1 and "upgrade memoryport" in result.output
    assert not home.exists()
    missing = run("--home", str(tmp_path / "none"), "export", "--out", str(tmp_path / "x.zip"))
    assert missing.exit_code == 1 and "no memoryport home" in missing.output
    assert not (tmp_path / "x.zip").exists()


@pytest.mark.parametrize("empty", [True, False])
def test_export_of_a_home_without_sessions_or_facts(tmp_path: Path, empty: bool) -> None:
    home = tmp_path / "h"
    home.mkdir()
    if not empty:
        CuratedMemory(home).add("user", "Likes tea.")
    manifest = export_home(home, tmp_path / "x.zip")
    assert manifest["sessions"] == {"sessions": 0, "messages": 0}
    assert not (home / "state.db").exists() and not (home / DB_NAME).exists()
    for part in manifest["providers"].values():  # the configured provider, empty
        assert not any(part["counts"].values())
    report = import_archive(tmp_path / "copy", tmp_path / "x.zip")
    assert CuratedMemory(tmp_path / "copy").entries("user") == ([] if empty else ["Likes tea."])
    assert report.applied


JOTTER = '''"""A user plugin with the PortableProvider hook: notes in <home>/jotter.jsonl."""

import json
from pathlib import Path

from memoryport.provider import MemoryProvider


class Jotter(MemoryProvider):
    name = "jotter"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        pass

    def get_tool_schemas(self):
        return []

    def export(self, directory, *, home):
        notes = Path(home) / "jotter.jsonl"
        text = notes.read_text() if notes.exists() else ""
        (Path(directory) / "notes.jsonl").write_text(text)
        return {"format": "jotter", "version": 1, "counts": {"notes": text.count("\\n")}}

    def import_(self, directory, *, home, source):
        notes = Path(home) / "jotter.jsonl"
        have = notes.read_text().splitlines() if notes.exists() else []
        new = [line for line in (Path(directory) / "notes.jsonl").read_text().splitlines()
               if line not in have]
        lines = have + [json.dumps({**json.loads(line), "source": source}) for line in new]
        notes.write_text("".join(line + "\\n" for line in lines))
        return {"notes_imported": len(new)}


def register(ctx):
    ctx.register_memory_provider(Jotter())
'''


def with_jotter(home: Path) -> Path:
    """A home whose configured provider is the user plugin above."""
    plugin = home / "plugins" / "jotter"
    plugin.mkdir(parents=True)
    (plugin / "plugin.yaml").write_text("name: jotter\nversion: 1.0.0\n")
    (plugin / "__init__.py").write_text(JOTTER)
    (home / "config.yaml").write_text("memory:\n  provider: jotter\n")
    return home


def test_a_plugin_with_the_hook_travels_in_the_archive(tmp_path: Path) -> None:
    home = with_jotter(tmp_path / "a")
    (home / "jotter.jsonl").write_text('{"note": "buy milk"}\n')
    archive = tmp_path / "a.zip"
    manifest = export_home(home, archive)
    assert manifest["providers"]["jotter"]["counts"] == {"notes": 1}
    assert members(archive)["providers/jotter/notes.jsonl"] == b'{"note": "buy milk"}\n'
    target = with_jotter(tmp_path / "b")
    report = import_archive(target, archive)
    assert json.loads((target / "jotter.jsonl").read_text()) == {
        "note": "buy milk", "source": "import:a.zip"}
    assert any(r.kind == "provider" and r.action == "import" for r in report.rows)
    elsewhere = import_archive(tmp_path / "c", archive)  # jotter not active there
    skipped = [r for r in elsewhere.rows if r.kind == "provider"]
    assert [r.action for r in skipped] == ["skip"] and "not active" in skipped[0].detail


def test_a_session_longer_than_one_write_exports_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sessions export writes a long session a few lines at a time (bounded memory):
    the same lines, and the archive round trip is exact."""
    import io

    from memoryport.storage.sessions import portable
    from memoryport.storage.sessions.records import MessageInput

    home = tmp_path / "home"
    with open_store(home) as store:
        store.create_session("long", source="cli", started_at=1.0)
        store.append_messages("long", [MessageInput("user", f"line {k}", timestamp=2.0 + k)
                                       for k in range(11)])  # fmt: skip
        whole = io.StringIO()
        store.export_jsonl(whole)
        monkeypatch.setattr(portable, "WRITE_LINES", 3)
        seen: list[tuple[str, int, int]] = []
        sliced = io.StringIO()
        store.export_jsonl(sliced, progress=lambda *a: seen.append(a))
    assert sliced.getvalue() == whole.getvalue()
    assert seen[-1] == ("exporting", 11, 11)
    export_home(home, tmp_path / "a.zip")
    import_archive(tmp_path / "copy", tmp_path / "a.zip")
    with open_store(tmp_path / "copy") as copy:
        assert [(m.id, m.content) for m in copy.get_messages("long")] == [
            (k + 1, f"line {k}") for k in range(11)]  # fmt: skip
