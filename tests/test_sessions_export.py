"""Export format v2, v1 compatibility, strict all-or-nothing import, progress and prune,
on both backends (the ``store``/``make_store`` fixtures run on SQLite and PostgreSQL)."""

from __future__ import annotations

import io
import json
import time

import pytest

from conftest import StoreMaker
from memoryport.errors import StoreError, ToolArgumentError
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.portable import EXPORT_FORMAT, EXPORT_VERSION, export_line


def _seed(store: SessionStore) -> None:
    store.create_session("a", source="cli", title="Trip", started_at=1.0, metadata={"k": 1})
    store.append_messages(
        "a",
        [
            {"role": "user", "content": "book Lisbon", "timestamp": 2.0},
            {
                "role": "assistant",
                "content": "",
                "timestamp": 3.0,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "m"}}],
            },
        ],
    )
    store.create_session("b", source="api", started_at=4.0)  # no messages


def _export(store: SessionStore) -> list[str]:
    out = io.StringIO()
    store.export_jsonl(out)
    return out.getvalue().splitlines()


def _v1(store: SessionStore) -> list[str]:
    """The same store in the old format: the session repeated on every message line."""
    lines = []
    for summary in store.list_sessions(exclude_sources=(), limit=100, order="started")[::-1]:
        messages = store.get_messages(summary.session.id)
        session = store.get_session(summary.session.id)
        lines.extend(export_line(session, m) for m in messages or [None])
    return lines


def _snapshot(store: SessionStore) -> str:
    return "\n".join(_export(store))


def test_v2_writes_each_session_once_then_its_messages(store: SessionStore) -> None:
    _seed(store)
    lines = [json.loads(x) for x in _export(store)]
    assert lines[0] == {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "sessions": 2,
        "messages": 2,
    }
    assert [next(iter(x)) for x in lines[1:]] == ["session", "message", "message", "session"]
    assert lines[1]["session"]["id"] == "a" and lines[4]["session"]["id"] == "b"


def test_v1_and_v2_import_to_the_same_store(make_store: StoreMaker) -> None:
    source = make_store()
    _seed(source)
    from_v2, from_v1 = make_store(), make_store()
    assert from_v2.import_jsonl(_export(source)).messages_imported == 2
    report = from_v1.import_jsonl(_v1(source))
    assert (report.sessions_imported, report.messages_imported) == (2, 2)
    assert _snapshot(from_v1) == _snapshot(from_v2) == _snapshot(source)


def test_an_empty_export_is_a_header_that_imports_as_nothing(make_store: StoreMaker) -> None:
    lines = _export(make_store())
    assert len(lines) == 1 and json.loads(lines[0])["sessions"] == 0
    report = make_store().import_jsonl(lines)
    assert (report.sessions_imported, report.messages_imported) == (0, 0)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda ls: [*ls[:-1], ls[-1].encode()[:-3]], "line 5: not valid JSON"),
        (lambda ls: [*ls, b"\xff\xfe bad"], "line 6: not valid UTF-8 (byte 0xff at column 1)"),
        (lambda ls: ls[:-2], "the header promises 2 sessions and 2 messages"),
        (lambda ls: [ls[0].replace('"version": 2', '"version": 9'), *ls[1:]], "newer memoryport"),
        (lambda ls: [*ls, ls[0]], "line 6: a header line is only allowed as the first line"),
        (lambda ls: [ls[0], ls[2], *ls[1:]], "line 2: message 1 belongs to session 'a'"),
        (
            lambda ls: [*ls[:2], ls[2].replace('"timestamp": 2.0', '"timestamp": "x"'), *ls[3:]],
            "line 3: field 'message.timestamp' must be",
        ),
        (
            lambda ls: [*ls[:2], ls[2].replace('"id": 1', '"id": 99999999999999999999'), *ls[3:]],
            "out of range",
        ),
        (lambda ls: [*ls[:2], ls[2].replace("2.0", "NaN"), *ls[3:]], "line 3: not valid JSON"),
    ],
)
def test_a_bad_file_is_refused_whole_and_names_the_line(
    make_store: StoreMaker, edit: object, expected: str
) -> None:
    source = make_store()
    _seed(source)
    lines = _export(source)
    assert '"id": 1,' in lines[2]  # the edits above rely on the first message's id
    target = make_store()
    target.create_session("existing", source="cli")
    before = _snapshot(target)
    with pytest.raises(ToolArgumentError) as info:
        target.import_jsonl(edit(lines))  # type: ignore[operator]
    assert expected in str(info.value)
    assert _snapshot(target) == before


def test_lone_surrogates_are_replaced_not_fatal(make_store: StoreMaker) -> None:
    session = {"id": "s", "source": "cli", "title": "t \\ud800"}
    message = {"id": 1, "session_id": "s", "role": "user", "content": "x \\udfff", "timestamp": 1}
    header = json.dumps({"format": EXPORT_FORMAT, "version": 2, "sessions": 1, "messages": 1})
    unescape = {"session": session, "message": message}
    lines = [header] + [
        json.dumps({key: value}).replace("\\\\", "\\") for key, value in unescape.items()
    ]
    target = make_store()
    assert target.import_jsonl(lines).messages_imported == 1
    assert target.get_session("s").title == "t \ufffd"
    assert target.get_messages("s")[0].content == "x \ufffd"


def test_a_refused_conflict_stores_nothing(make_store: StoreMaker) -> None:
    source = make_store()
    _seed(source)
    target = make_store()
    target.create_session("b", source="cli")
    before = _snapshot(target)
    with pytest.raises(StoreError):
        target.import_jsonl(_export(source), on_conflict="error")
    assert _snapshot(target) == before


def test_progress_is_reported_for_export_import_and_rebuild(make_store: StoreMaker) -> None:
    source = make_store()
    _seed(source)
    seen: list[tuple[str, int, int]] = []
    out = io.StringIO()
    source.export_jsonl(out, progress=lambda *a: seen.append(a))
    assert seen[0] == ("exporting", 0, 2) and seen[-1] == ("exporting", 2, 2)
    seen.clear()
    make_store().import_jsonl(out.getvalue().splitlines(), progress=lambda *a: seen.append(a))
    assert seen[-1] == ("importing", 2, 2)
    seen.clear()
    source.rebuild_index(progress=lambda *a: seen.append(a))
    source.check_index()
    assert seen and all(done <= total for _, done, total in seen)
    assert seen[-1][1] == seen[-1][2]
    assert source.search_messages("lisbon").hits


def test_prune_removes_only_old_empty_childless_sessions(store: SessionStore) -> None:
    old = time.time() - 3 * 86400
    store.create_session("empty-old", source="cli", started_at=old)
    store.create_session("empty-new", source="cli")
    store.create_session("parent", source="cli", started_at=old)
    store.create_session("child", source="cli", parent_session_id="parent", started_at=old + 1)
    store.append_message("child", {"role": "user", "content": "hi"})
    store.create_session("full-old", source="cli", started_at=old)
    store.append_message("full-old", {"role": "user", "content": "hi", "timestamp": old})
    dry = store.prune_empty_sessions(older_than=86400, dry_run=True)
    assert [s.id for s in dry] == ["empty-old"]
    assert store.get_session("empty-old")  # a dry run removes nothing
    assert [s.id for s in store.prune_empty_sessions(older_than=86400)] == ["empty-old"]
    ids = {s.session.id for s in store.list_sessions(exclude_sources=(), limit=50)}
    assert ids == {"empty-new", "parent", "child", "full-old"}
    assert [s.id for s in store.prune_empty_sessions(older_than=0)] == ["empty-new"]
    with pytest.raises(ToolArgumentError):
        store.prune_empty_sessions(older_than=-1)


def test_session_search_snippets_show_tool_calls_readably(store: SessionStore) -> None:
    from memoryport.providers.sessions import create_sessions_provider

    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "memory", "arguments": '{"action": "add", "content": "quokka"}'},
    }
    store.create_session("old", source="cli")
    store.append_messages(
        "old",
        [
            {"role": "user", "content": "remember this"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ],
    )
    provider = create_sessions_provider(store)
    provider.initialize("live", user_id="")
    result = json.loads(provider.handle_tool_call("session_search", {"query": "quokka"}))
    snippets = [r["snippet"] for r in result["results"]]
    assert snippets and all('"type"' not in s and "call_1" not in s for s in snippets)
    assert any('memory(add, content: ">>>quokka<<<")' in s for s in snippets), snippets
