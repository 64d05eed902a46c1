"""The ``§`` entry format, atomic writes, locking and the drift guard of ``MarkdownFile``."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import filelock
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryport.errors import DriftError, MemoryStoreError
from memoryport.storage.markdown import (
    ENTRY_DELIMITER,
    MarkdownFile,
    entry_problem,
    parse_entries,
    render_entries,
)

# The round-trip domain: distinct, non-empty, stripped entries that neither contain the
# delimiter line nor end with a line holding only "§" (see entry_problem). The alphabet
# is biased towards the characters that make the format hard: "§", newlines, spaces.
_entry = st.text(
    alphabet=st.sampled_from(["§", "\n", " ", "a", "b", "\t", "é", "\r", "—"]) | st.characters(),
    min_size=1,
    max_size=40,
).filter(lambda text: entry_problem(text) is None)
_entries = st.lists(_entry, max_size=12, unique=True)


@given(_entries)
def test_parse_render_round_trip(entries: list[str]) -> None:
    assert parse_entries(render_entries(entries)) == entries


@given(_entries)
def test_rendered_entries_never_drift(entries: list[str]) -> None:
    file = MarkdownFile(Path("unused"), char_limit=10**9)
    assert file.drift_reason(render_entries(entries)) is None


@given(st.text(alphabet=st.sampled_from(["§", "\n", " ", "a", "b"]), max_size=60))
def test_parse_output_is_stable_or_flagged_as_drift(raw: str) -> None:
    """Any text either round-trips exactly or is reported as drift (never silently lost)."""
    file = MarkdownFile(Path("unused"), char_limit=10**9)
    if file.drift_reason(raw) is None:
        assert render_entries(parse_entries(raw)) == raw.strip()


def test_entry_containing_section_sign_is_not_split() -> None:
    entries = ["Uses § 12 of the handbook", "line one\n§ not a separator\nline three", "§"]
    raw = render_entries(entries)
    assert parse_entries(raw) == entries
    assert raw.count(ENTRY_DELIMITER) == 2  # the "§" entry shares its separators' newlines
    assert parse_entries("a\n§\nb\n§\nc") == ["a", "b", "c"]


def test_entry_problem_describes_each_invalid_shape() -> None:
    assert entry_problem("") is not None
    assert entry_problem(" padded") is not None
    assert entry_problem("a\n§\nb") is not None
    assert entry_problem("ends with\n§") is not None
    assert entry_problem("§\nstarts with a section line") is None
    assert entry_problem("multi\nline") is None


def test_missing_file_reads_as_no_entries(tmp_path: Path) -> None:
    file = MarkdownFile(tmp_path / "nowhere" / "MEMORY.md", char_limit=100)
    assert file.read_entries() == []
    assert not (tmp_path / "nowhere").exists()


def test_first_write_creates_directory_and_file(tmp_path: Path) -> None:
    file = MarkdownFile(tmp_path / "a" / "b" / "MEMORY.md", char_limit=100)
    file.mutate(lambda state: ([*state.entries, "fact"], None))
    assert (tmp_path / "a" / "b" / "MEMORY.md").read_text(encoding="utf-8") == "fact"


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    file = MarkdownFile(tmp_path / "MEMORY.md", char_limit=1000)
    for i in range(5):
        file.mutate(lambda state, i=i: ([*state.entries, f"entry {i}"], None))
    assert file.read_entries() == [f"entry {i}" for i in range(5)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MEMORY.md", "MEMORY.md.lock"]


def test_temp_files_of_a_killed_writer_are_swept(tmp_path: Path) -> None:
    leftover = tmp_path / ".MEMORY.md.abc123.tmp"
    leftover.write_text("half written", encoding="utf-8")
    file = MarkdownFile(tmp_path / "MEMORY.md", char_limit=1000)
    file.mutate(lambda state: (["fact"], None))
    assert not leftover.exists()


def test_symlinked_file_keeps_its_link(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "MEMORY.md"
    link.symlink_to(real)
    MarkdownFile(link, char_limit=100).mutate(lambda state: ([*state.entries, "new"], None))
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == "old\n§\nnew"


def test_atomic_write_failure_raises_clear_error_and_keeps_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "MEMORY.md"
    file = MarkdownFile(target, char_limit=100)
    file.mutate(lambda state: (["kept"], None))

    def failing_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(MemoryStoreError, match=r"Failed to write memory file .*No space left"):
        file.mutate(lambda state: ([*state.entries, "new"], None))
    monkeypatch.undo()
    assert target.read_text(encoding="utf-8") == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MEMORY.md", "MEMORY.md.lock"]


def test_lock_that_cannot_be_created_fails_clearly(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    (tmp_path / "MEMORY.md.lock").mkdir()  # the lock path is unusable
    file = MarkdownFile(target, char_limit=100)
    with pytest.raises(MemoryStoreError, match="Cannot take the write lock"):
        file.mutate(lambda state: (["x"], None))
    assert not target.exists()


def test_lock_held_elsewhere_times_out_with_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    holder = filelock.FileLock(str(tmp_path / "MEMORY.md.lock"))
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder:
            held.set()
            release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        held.wait()
        file = MarkdownFile(target, char_limit=100, lock_timeout=0.05)
        with pytest.raises(MemoryStoreError, match="another writer holds it"):
            file.mutate(lambda state: (["x"], None))
    finally:
        release.set()
        thread.join()
    assert not target.exists()


def test_exception_in_change_writes_nothing(tmp_path: Path) -> None:
    file = MarkdownFile(tmp_path / "MEMORY.md", char_limit=100)
    file.mutate(lambda state: (["a"], None))

    def boom(state: object) -> tuple[list[str], None]:
        raise MemoryStoreError("refused")

    with pytest.raises(MemoryStoreError):
        file.mutate(boom)
    assert file.read_entries() == ["a"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("fact one\n§\nfact two\nappended by a shell script without a separator " + "x" * 120,
         "larger than the whole budget"),
        ("fact one\n§\nfact two\n§\nfact one", "round-trip"),
        ("fact one\n§\n\n§\nfact two", "round-trip"),
        ("fact one\n§ \n§\nfact two", "round-trip"),
    ],
)  # fmt: skip
def test_drift_is_backed_up_and_refused(tmp_path: Path, raw: str, reason: str) -> None:
    target = tmp_path / "MEMORY.md"
    target.write_text(raw, encoding="utf-8")
    file = MarkdownFile(target, char_limit=60)
    with pytest.raises(DriftError) as info:
        file.mutate(lambda state: ([*state.entries, "new"], None))
    assert reason in str(info.value)
    assert target.read_text(encoding="utf-8") == raw
    backup = Path(info.value.details["drift_backup"])
    assert backup.name.startswith("MEMORY.md.bak.")
    assert backup.read_text(encoding="utf-8") == raw
    assert "Removing an entry always works" in info.value.details["remediation"]
    assert info.value.to_dict()["success"] is False


def test_one_backup_per_drift_event(tmp_path: Path) -> None:
    """Retrying a refused write reuses the backup; a new drifted content gets a new one."""
    target = tmp_path / "USER.md"
    target.write_text("a\n§\na", encoding="utf-8")
    file = MarkdownFile(target, char_limit=60)
    backups = set()
    for _ in range(5):
        with pytest.raises(DriftError) as info:
            file.mutate(lambda state: (["x"], None))
        backups.add(info.value.details["drift_backup"])
    assert len(backups) == 1
    assert len(list(tmp_path.glob("USER.md.bak.*"))) == 1
    assert Path(backups.pop()).read_text(encoding="utf-8") == "a\n§\na"
    target.write_text("b\n§\nb", encoding="utf-8")
    with pytest.raises(DriftError):
        file.mutate(lambda state: (["x"], None))
    assert len(list(tmp_path.glob("USER.md.bak.*"))) == 2


def test_allow_drift_backs_up_once_then_writes(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    raw = "keep\n§\n" + "z" * 100
    target.write_text(raw, encoding="utf-8")
    file = MarkdownFile(target, char_limit=60)
    seen = file.mutate(lambda state: (["keep"], state.drift_backup), allow_drift=True)
    assert seen is not None and seen.read_text(encoding="utf-8") == raw
    assert file.read_entries() == ["keep"]
    assert list(tmp_path.glob("MEMORY.md.bak.*")) == [seen]


def test_trailing_newline_from_an_editor_is_not_drift(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    target.write_text("fact one\n§\nfact two\n", encoding="utf-8")
    file = MarkdownFile(target, char_limit=100)
    file.mutate(lambda state: ([*state.entries, "fact three"], None))
    assert file.read_entries() == ["fact one", "fact two", "fact three"]


def test_new_file_is_private_and_mode_is_preserved(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    file = MarkdownFile(target, char_limit=100)
    file.mutate(lambda state: (["a"], None))
    assert target.stat().st_mode & 0o777 == 0o600
    os.chmod(target, 0o644)
    file.mutate(lambda state: ([*state.entries, "b"], None))
    assert target.stat().st_mode & 0o777 == 0o644
