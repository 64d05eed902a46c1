"""The PostgreSQL ingest client's shortcuts store exactly what the per-message path stores.

The batched append and ``sync_sessions`` split each message once for its lexemes and the
time-word precheck (``search_lexemes.documents_of_rows``, ``timeexpr.may_hold``), format
the ``tsvector`` literal from a cached template and build plain dict messages without
``MessageInput.__init__`` (``records.coerce_messages``). The reference is the import path,
which still stamps every message on its own (``document_of_row``, ``event_rows``,
``coerce_message``): a corpus with time expressions, CJK, punctuation, NUL, lone
surrogates, tool calls, empty and huge messages is appended (and synced) to one schema,
exported and imported into another, and the rows, ``tsvector`` values, event rows and
search results of both must be identical (tool calls and metadata are written with their
keys in sorted order: the export sorts them).
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

import pgserver
from memoryport.storage.search_lexemes import document_of_row, documents_of_rows
from memoryport.storage.sessions.postgres import PostgresSessionStore
from memoryport.storage.sessions.postgres.dialect import message_values
from memoryport.storage.sessions.records import (
    MessageInput,
    SessionRecord,
    coerce_message,
    coerce_messages,
)
from memoryport.storage.sessions.temporal import event_rows

pytestmark = pytest.mark.postgres

TEXTS = [
    "Yesterday I took the dogs to the beach",
    "we shipped it on 16 Nov 2023, the week before 16 Nov 2023 was calm",
    "deploy 2023-11-16 and again 2024-02-30",
    "it may be late; May 7 works, or last week, or 3 days ago",
    "see you tomorrow morning, the day after tomorrow at the latest",
    "since March the build is green; in 2022 it was not",
    "我们明天去东京塔看看",
    "東京タワーに行きました yesterday",
    "서울에서 만나요 내일",
    "the user's favourite: what? an a/b test filed as #tag, ping @name now",
    "file_name_yesterday and may_be and week_end",
    "",
    " ",
    "nul\x00inside last week",
    "lone \ud800 surrogate today",
    "caf\u00e9 cr\u00e8me br\u00fbl\u00e9e last Friday",
    "x" * 600 + " yesterday",
    ("long running text about the weekend " * 30).strip(),
    "İstanbul last year, ٢٠٢٢ too",
    "nothing temporal here at all, really zq00042x",
]


def _corpus(seed: int) -> list[Any]:
    rng = random.Random(seed)
    out: list[Any] = []
    for i in range(150):
        text = rng.choice(TEXTS)
        if rng.random() < 0.3:
            text = f"{text} {rng.choice(TEXTS)}"
        stamp = None if i % 7 == 0 else 1.6e9 + 3600.0 * i
        kind = i % 10
        if kind == 0:
            out.append(MessageInput(role="user", content=text, timestamp=stamp))
        elif kind == 1:
            out.append({"role": "assistant", "content": text, "tool_name": "search",
                        "tool_calls": [{"arguments": {"q": text[:20]}, "name": "search"}],
                        "timestamp": stamp})  # fmt: skip
        elif kind == 2:
            out.append({"role": "user", "content": text, "z_extra": i, "metadata": {"a": "v"}})
        elif kind == 3:
            out.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        elif kind == 4:
            out.append({"role": "tool", "content": text, "tool_call_id": f"c{i}",
                        "reasoning": "because yesterday", "timestamp": stamp})  # fmt: skip
        else:
            out.append({"role": "user" if i % 2 else "assistant", "content": text,
                        "timestamp": stamp})  # fmt: skip
    huge = "lorem ipsum dolor " * 12_000 + "yesterday"  # over 200,000 characters: merged
    out.append({"role": "user", "content": huge, "timestamp": 1.7e9})
    return out


@pytest.fixture
def schemas(pg_server: pgserver.PgServer) -> Iterator[tuple[str, str]]:
    names = (pgserver.fresh_schema(), pgserver.fresh_schema())
    yield names
    for name in names:
        pgserver.drop_schema(pg_server.uri, name)


def _rows(uri: str, schema: str) -> dict[str, list[tuple[Any, ...]]]:
    queries = {
        "sessions": "SELECT * FROM {s}.sessions ORDER BY id",
        "messages": "SELECT id, session_id, role, content, timestamp, tool_name, tool_calls,"
        " tool_call_id, reasoning, metadata, tsv::text FROM {s}.messages ORDER BY id",
        "events": "SELECT * FROM {s}.message_events ORDER BY message_id, start_at, end_at,"
        " precision, words",
    }
    with psycopg.connect(uri, autocommit=True) as conn:
        return {
            key: conn.execute(sql.SQL(q).format(s=sql.Identifier(schema))).fetchall()
            for key, q in queries.items()
        }


def test_appended_and_synced_rows_equal_the_per_message_path(
    pg_server: pgserver.PgServer, schemas: tuple[str, str]
) -> None:
    fast = PostgresSessionStore(pg_server.uri, schema=schemas[0], pool_size=2)
    slow = PostgresSessionStore(pg_server.uri, schema=schemas[1], pool_size=2)
    try:
        sid = fast.create_session("appended", source="cli", started_at=1.5e9).id
        fast.append_messages(sid, _corpus(1))  # chunks of 32, 48, 48, ...
        fast.append_messages(sid, _corpus(2)[:5])
        record = SessionRecord(id="synced", source="api", started_at=1.5e9, last_active_at=1.5e9)
        fast.sync_sessions([(record, _corpus(3))])
        out = io.StringIO()
        fast.export_jsonl(out)
        slow.import_jsonl(out.getvalue().splitlines())
        written, reference = _rows(pg_server.uri, schemas[0]), _rows(pg_server.uri, schemas[1])
        assert len(written["messages"]) == 2 * 151 + 5
        assert len(written["events"]) > 50
        assert written == reference
        for query in ("yesterday", "beach", "东京", "user's", '"last week"', "week*", "may"):
            got = fast.search_messages(query, limit=50)
            want = slow.search_messages(query, limit=50)
            assert got.hits, query
            assert [(h.message, h.snippet, h.score) for h in got.hits] == [
                (h.message, h.snippet, h.score) for h in want.hits
            ], query
    finally:
        fast.close()
        slow.close()


def test_literals_and_time_flags_equal_the_per_row_functions() -> None:
    items = [coerce_message(m) for seed in (1, 2, 3) for m in _corpus(seed)]
    rows = [message_values("s", m, 1.65e9) for m in items]
    literals, timed = documents_of_rows(rows)
    assert literals == [document_of_row(r) for r in rows]
    skipped = [r for r, t in zip(rows, timed, strict=True) if not t]
    assert skipped and all(event_rows(1, r[2], r[3]) == [] for r in skipped)
    assert any(event_rows(1, r[2], r[3]) for r in rows)


def test_coerce_messages_equals_coerce_message_on_every_shape() -> None:
    class Sub(dict[str, Any]):
        pass

    shapes: list[Any] = [
        *_corpus(5),
        {"role": "user"},
        {"role": "user", "content": None},
        {"role": "user", "content": "x", "metadata": None},
        {"role": "user", "content": "x", "tool_calls": []},
        Sub(role="user", content="sub"),
        MessageInput(role="system", content="as is"),
    ]
    fast, slow = coerce_messages(shapes), [coerce_message(m) for m in shapes]
    assert fast == slow
    assert [vars(m) for m in fast] == [vars(m) for m in slow]  # same fields, same order
    a, b = coerce_messages([{"role": "u", "content": "x"}] * 2)
    assert a.metadata is not b.metadata  # each message its own metadata dict
    for bad in ({"content": "no role"}, {"role": "", "content": "x"}, {"role": 3}):
        with pytest.raises(Exception) as fast_error:
            coerce_messages([bad])
        with pytest.raises(Exception) as slow_error:
            coerce_message(bad)
        assert type(fast_error.value) is type(slow_error.value)
        assert str(fast_error.value) == str(slow_error.value)
