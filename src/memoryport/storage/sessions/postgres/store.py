"""The PostgreSQL session store class (import it from :mod:`memoryport.storage.sessions.postgres`).

Behaviour matches :class:`~memoryport.storage.sessions.sqlite.store.SQLiteSessionStore`:
the same ordering, user scoping, lineage, forget, export/import format and search
semantics (the shared query parser, the same plans and fallbacks). Differences are in
the engine only: a ``tsvector`` + GIN index instead of FTS5, ``ts_rank_cd`` instead of
BM25, and an optional ``pg_trgm`` index for CJK text (see
:mod:`memoryport.storage.sessions.postgres.migrations`).

Concurrency: a thread-safe ``psycopg_pool.ConnectionPool`` of autocommit connections; every
write is one explicit transaction, a read of single statements runs without one (each
statement is its own snapshot, as in a read-committed transaction, and the row-level
security scope is a setting of the connection, not of a transaction); deadlocks,
serialization failures and dropped connections are retried a few times. Any number of
processes or machines may use one store; migrations serialize on an advisory lock.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, TypeVar
from weakref import WeakKeyDictionary

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from memoryport.errors import ConfigError, SessionNotFound, StoreError
from memoryport.storage.postgres_wire import pipelined_implicit
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.migrate import applied
from memoryport.storage.sessions.portable import Progress
from memoryport.storage.sessions.postgres import migrations
from memoryport.storage.sessions.postgres.bulk import (
    append_batch,
    export_sessions,
    import_sessions,
    index_problems,
    prune_empty,
    rebuild_indexes,
    session_insert,
    session_row,
    sync_entries,
)
from memoryport.storage.sessions.postgres.connect import CONNECT_TIMEOUT_S, check_connection
from memoryport.storage.sessions.postgres.dialect import (
    decode_text,
    encode_text,
    message_from_row,
    scope_sql,
    session_from_row,
    session_values,
)
from memoryport.storage.sessions.postgres.search import fetch_windows, run_search, snippets_for
from memoryport.storage.sessions.query import ParsedQuery
from memoryport.storage.sessions.records import (
    DEFAULT_HIDDEN_SOURCES,
    ImportReport,
    MessageInput,
    MessageRecord,
    MessageWindow,
    SearchHit,
    SearchScope,
    SessionRecord,
    SessionSummary,
    SortOrder,
    SyncReport,
)
from memoryport.storage.sessions.rows import (
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    dump_json,
)
from memoryport.types import valid_text

__all__ = ["PostgresSessionStore"]

T = TypeVar("T")
Cursor = psycopg.Cursor[Any]

_TRIES = 5
_NEVER = 2**31  # psycopg's prepare_threshold: never prepare on its own
_IDLE_CHECK_S = 5.0  # a connection idle longer than this is pinged before use
_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
_UNAVAILABLE = (psycopg.OperationalError, PoolTimeout)


class PostgresSessionStore(SessionStore):
    """Session store in a PostgreSQL schema, shared safely by many processes and machines.

    Args:
        conninfo: libpq connection string or URI (``postgresql://user@host/db``).
        user_id: bind the store to one user (search, browse and reads are scoped).
        hidden_sources: sources hidden from search/browse unless asked for.
        schema: the PostgreSQL schema holding the tables (created if missing), so
            several stores (profiles, teams) can share one database.
        pool_size: the most connections this store opens at once.
        timeout: seconds to wait for a free connection before ``StoreError``.
        connect_timeout: seconds the first, direct connection may take; a bad DSN or an
            unreachable server fails this fast with one clear ``StoreError``.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        user_id: str | None = None,
        hidden_sources: Sequence[str] = DEFAULT_HIDDEN_SOURCES,
        schema: str = "memoryport",
        pool_size: int = 4,
        timeout: float = 30.0,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        if not schema or "\x00" in schema:
            raise ConfigError(f"invalid PostgreSQL schema name {schema!r}")
        self.user_id = user_id or None
        self.hidden_sources = tuple(hidden_sources)
        self.schema = schema
        self._s = sql.Identifier(schema)
        self._used: WeakKeyDictionary[psycopg.Connection[Any], float] = WeakKeyDictionary()
        self._closed = False
        check_connection(conninfo, connect_timeout)
        try:
            self._pool: ConnectionPool[Any] = ConnectionPool(
                conninfo,
                min_size=1,
                max_size=max(1, pool_size),
                timeout=timeout,
                kwargs={"application_name": "memoryport"},
                check=self._check,
                configure=self._configure,
                open=True,
                name=f"memoryport-{schema}",
            )
            self._pool.wait(timeout)
            with self._pool.connection() as conn:
                migrations.migrate(conn, schema)  # (pooled connections autocommit)
        except (psycopg.Error, PoolTimeout) as exc:
            self.close()
            raise StoreError(f"session database unavailable (PostgreSQL): {exc}") from exc
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ plumbing
    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Scope a new pooled connection to this store's user (row-level security) and
        turn JIT compilation off: every query here reads a bounded set of rows, and JIT
        spent ~700 ms compiling plans that then ran in milliseconds. Statements are not
        prepared behind the caller's back (psycopg would after five runs): a generic
        plan cannot see how common a search word is, and chose a bitmap scan of every
        match for a word in half the messages. Appends prepare explicitly.

        The connection autocommits: writes open their own transaction (``BEGIN`` and
        ``COMMIT``, see :meth:`_run`), reads run bare (:meth:`_read`), which saves two of
        a read call's three round trips. The scope is a session setting (``false``: not
        local to a transaction), fixed for the connection's life, and the pool belongs
        to this store alone, so no call ever runs under another user's scope."""
        conn.prepare_threshold = _NEVER  # (None would refuse explicit prepares too)
        conn.autocommit = True
        scope = "*" if self.user_id is None else self.user_id
        conn.execute(
            "SELECT set_config(%s, %s, false), set_config('jit', 'off', false)",
            (migrations.SCOPE_SETTING, scope),
        )

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """Ping a pooled connection idle for a while (a busy one skips the round trip)."""
        if time.monotonic() - self._used.get(conn, 0.0) > _IDLE_CHECK_S:
            ConnectionPool.check_connection(conn)

    def _q(self, text: str) -> sql.Composed:
        """Format ``{s}`` in ``text`` with this store's schema."""
        return sql.SQL(text).format(s=self._s)

    def _run(self, fn: Callable[[Cursor], T], *, what: str = "write") -> T:
        """Run ``fn`` in one transaction, retrying deadlocks and dropped connections."""
        return self._attempts(lambda conn: _in_transaction(conn, fn), what)

    def _run_pipelined(self, fn: Callable[[Cursor], Callable[[], T]]) -> T:
        """Like :meth:`_run` in pipeline mode: ``fn`` queues its statements and returns
        a function reading their results, called after the commit: one round trip, in
        the implicit transaction the pipeline's Sync commits (no ``BEGIN``/``COMMIT``)."""
        return self._attempts(lambda conn: pipelined_implicit(conn, fn), "write")

    def _attempts(self, call: Callable[[psycopg.Connection[Any]], T], what: str) -> T:
        """``call`` on a pooled connection; retries and error mapping of :meth:`_run`."""
        if self._closed:
            raise StoreError(
                f"session database unavailable: the PostgreSQL store {self.schema!r} is closed"
            )
        for attempt in range(_TRIES):
            try:
                with self._pool.connection() as conn:
                    result = call(conn)
                    self._used[conn] = time.monotonic()
                    return result
            except (*_RETRYABLE, psycopg.OperationalError) as exc:
                if attempt == _TRIES - 1:
                    problem = "unavailable" if isinstance(exc, _UNAVAILABLE) else f"{what} failed"
                    raise StoreError(f"session database {problem}: {exc}") from exc
                time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
            except psycopg.Error as exc:
                raise StoreError(f"session database {what} failed: {exc}") from exc
            except UnicodeEncodeError as exc:
                raise StoreError(
                    f"session database {what} failed: a value is not valid Unicode text"
                    f" (it holds a lone surrogate): {exc}"
                ) from exc
            except PoolTimeout as exc:
                raise StoreError(
                    f"session database unavailable: no free connection ({exc})"
                ) from exc
        raise AssertionError("unreachable")

    def _read(self, fn: Callable[[Cursor], T]) -> T:
        """Run ``fn`` outside a transaction (autocommit: no ``BEGIN``/``COMMIT`` round
        trips), for reads whose statements need no common snapshot; retried like
        :meth:`_run`. A read that needs one snapshot uses ``_run(fn, what="read")``."""
        return self._attempts(lambda conn: _bare(conn, fn), "read")

    # ------------------------------------------------------------------ lifecycle
    def applied_migrations(self) -> list[str]:
        """Names of applied migrations, in order."""
        done = self._read(
            lambda c: {r[0] for r in c.execute(self._q("SELECT name FROM {s}._migrations"))}
        )
        return applied(migrations.MIGRATIONS, done)

    def close(self) -> None:
        """Close every pooled connection (idempotent)."""
        if self._closed:
            return
        self._closed = True
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()

    @property
    def trigram_indexed(self) -> bool:
        """True when the ``pg_trgm`` index serves CJK search (else it is a scan)."""
        return self.get_meta("trigram_index") == "present"

    # ------------------------------------------------------------------ sessions
    def _insert_session(self, draft: SessionRecord) -> SessionRecord:
        def inserted(cur: Cursor, values: list[Any]) -> SessionRecord:
            try:  # ids hidden by row-level security conflict too
                cur.execute(session_insert(cur, self._s), values)
            except pg_errors.UniqueViolation:
                raise StoreError(f"session {draft.id!r} already exists") from None
            return session_from_row(values)  # as stored: the values sent

        def do(cur: Cursor) -> SessionRecord:
            values = session_values(draft)
            row = cur.execute(
                self._q("SELECT user_id FROM {s}.sessions WHERE id = %s"),
                (draft.parent_session_id,),
            ).fetchone()
            if row is None:
                raise SessionNotFound(f"unknown parent session {draft.parent_session_id!r}")
            values[2] = values[2] or row[0]
            return inserted(cur, values)

        def alone(cur: Cursor) -> SessionRecord:
            return inserted(cur, session_row(draft))

        if draft.parent_session_id:
            return self._run(do)
        # one statement committing on its own (autocommit): one round trip, and neither
        # a pipeline nor BEGIN/COMMIT to send, parse and answer
        return self._attempts(lambda conn: _bare(conn, alone), "write")

    def _update_session(self, session_id: str, values: Mapping[str, Any]) -> SessionRecord:
        assignments = sql.SQL(", ").join(
            sql.SQL("{} = %s").format(sql.Identifier(k)) for k in values
        )
        params = [_column_value(k, v) for k, v in values.items()]

        def do(cur: Cursor) -> SessionRecord:
            row = cur.execute(
                sql.SQL("UPDATE {s}.sessions s SET {a} WHERE s.id = %s RETURNING {cols}").format(
                    s=self._s, a=assignments, cols=sql.SQL(SESSION_COLUMNS)
                ),
                [*params, session_id],
            ).fetchone()
            if row is None:
                raise SessionNotFound(f"unknown session {session_id!r}")
            return session_from_row(row)

        return self._run(do)

    def _session(self, session_id: str) -> SessionRecord | None:
        row = self._read(
            lambda c: c.execute(
                self._q(f"SELECT {SESSION_COLUMNS} FROM {{s}}.sessions s WHERE s.id = %s"),
                (session_id,),
            ).fetchone()
        )
        return None if row is None else session_from_row(row)

    def _list_sessions(
        self, scope: SearchScope, column: str, *, limit: int, offset: int
    ) -> list[SessionSummary]:
        where, params = scope_sql(scope)
        query = sql.SQL(
            "SELECT {cols}, (SELECT substr(content, 1, 200) FROM {s}.messages"
            " WHERE session_id = s.id AND role = 'user' ORDER BY id LIMIT 1)"
            " FROM {s}.sessions s WHERE true{where}"
            " ORDER BY {column} DESC, s.id DESC LIMIT %s OFFSET %s"
        ).format(
            cols=sql.SQL(SESSION_COLUMNS),
            s=self._s,
            where=where,
            column=sql.Identifier("s", column),
        )
        rows = self._read(lambda c: c.execute(query, [*params, limit, offset]).fetchall())
        return [SessionSummary(session_from_row(r[:-1]), decode_text(r[-1]) or "") for r in rows]

    def _sessions_titled(self, title: str, scope: SearchScope, limit: int) -> list[SessionRecord]:
        where, params = scope_sql(scope)
        query = sql.SQL(
            "SELECT {cols} FROM {s}.session_search s"  # title index usable under RLS (m040)
            " WHERE lower(btrim(s.title)) = lower(%s){where}"
            " ORDER BY s.last_active_at DESC, s.id DESC LIMIT %s"
        ).format(cols=sql.SQL(SESSION_COLUMNS), s=self._s, where=where)
        value = encode_text(valid_text(title))
        params = [value, *params, limit]  # prepared: an index probe whatever the title
        rows = self._read(lambda c: c.execute(query, params, prepare=True).fetchall())
        return [session_from_row(r) for r in rows]

    # ------------------------------------------------------------------ messages
    def _append(self, session_id: str, items: list[MessageInput], now: float) -> list[int]:
        ids = self._run_pipelined(lambda c: append_batch(c, self._s, session_id, items, now))
        if not ids:
            raise SessionNotFound(f"unknown session {session_id!r}")
        return ids

    def _sync(
        self, entries: list[tuple[SessionRecord, list[MessageInput]]], now: float
    ) -> SyncReport:
        """The whole batch in one transaction (all or nothing, see ``bulk.sync_entries``)."""

        def queue(cur: Cursor) -> Callable[[], SyncReport]:
            report = sync_entries(cur, self._s, entries, now, self._user)
            return lambda: report

        return self._run_pipelined(queue)

    def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]:
        """Messages of a session in id order."""
        self.get_session(session_id)
        query = self._q(
            f"SELECT {MESSAGE_COLUMNS} FROM {{s}}.messages m WHERE m.session_id = %s"
            " ORDER BY m.id LIMIT %s OFFSET %s"
        )
        rows = self._read(lambda c: c.execute(query, (session_id, limit, offset)).fetchall())
        return [message_from_row(r) for r in rows]

    def _message(self, message_id: int) -> MessageRecord | None:
        row = self._read(
            lambda c: c.execute(
                self._q(f"SELECT {MESSAGE_COLUMNS} FROM {{s}}.messages m WHERE m.id = %s"),
                (message_id,),
            ).fetchone()
        )
        return None if row is None else message_from_row(row)

    # ------------------------------------------------------------------ search
    def _run_search(
        self,
        parsed: ParsedQuery,
        scope: SearchScope,
        *,
        sort: SortOrder,
        limit: int,
        offset: int,
        snippets: bool,
    ) -> tuple[list[SearchHit], str]:
        where = scope_sql(scope)
        return self._read(
            lambda c: run_search(
                c,
                self._s,
                parsed,
                scope=where,
                sort=sort,
                limit=limit,
                offset=offset,
                snippets=snippets,
            )
        )

    def _snippets(self, parsed: ParsedQuery, message_ids: list[int]) -> dict[int, str]:
        return self._read(lambda c: snippets_for(c, self._s, parsed, message_ids))

    def _query_failed(self, error: StoreError) -> bool:
        return error.__cause__ is not None and not isinstance(error.__cause__, _UNAVAILABLE)

    def _windows(self, anchors: list[int], window: int, bookend: int) -> dict[int, MessageWindow]:
        return self._read(
            lambda c: fetch_windows(c, self._s, anchors, window=window, bookend=bookend)
        )

    # ------------------------------------------------------------------ lineage
    def _parent_map(self, session_ids: list[str]) -> dict[str, str | None]:
        if not session_ids:  # (discover asks for the roots of no title match)
            return {}
        query = self._q("""
        WITH RECURSIVE up(id, parent, depth) AS (
            SELECT id, parent_session_id, 0 FROM {s}.sessions WHERE id = ANY(%s)
            UNION SELECT s.id, s.parent_session_id, up.depth + 1
            FROM up JOIN {s}.sessions s ON s.id = up.parent WHERE up.depth < 10000)
        SELECT DISTINCT id, parent FROM up
        """)
        rows = self._read(  # prepared (discover asks twice a call): key lookups
            lambda c: c.execute(query, (session_ids,), prepare=True).fetchall()
        )
        return {row[0]: row[1] for row in rows}

    def children(self, session_id: str) -> list[SessionRecord]:
        """Direct children, oldest first."""
        query = self._q(
            f"SELECT {SESSION_COLUMNS} FROM {{s}}.sessions s WHERE s.parent_session_id = %s"
            " ORDER BY s.started_at, s.id"
        )
        rows = self._read(lambda c: c.execute(query, (session_id,)).fetchall())
        return [session_from_row(r) for r in rows]

    def lineage(self, session_id: str) -> list[str]:
        """Every id in the lineage tree, root first (breadth-first by start time)."""
        root = self.lineage_root(session_id)
        query = self._q("""
        WITH RECURSIVE down(id, depth, started) AS (
            SELECT id, 0, started_at FROM {s}.sessions WHERE id = %s
            UNION SELECT s.id, down.depth + 1, s.started_at FROM down
            JOIN {s}.sessions s ON s.parent_session_id = down.id WHERE down.depth < 10000)
        SELECT id FROM down GROUP BY id ORDER BY min(depth), min(started), id
        """)
        return [r[0] for r in self._read(lambda c: c.execute(query, (root,)).fetchall())]

    # ------------------------------------------------------------------ forget
    def forget_message(self, message_id: int) -> int:
        """Delete one message (its index entries go with the row)."""

        def do(cur: Cursor) -> int:
            row = cur.execute(
                self._q("DELETE FROM {s}.messages WHERE id = %s RETURNING session_id, tool_calls"),
                (message_id,),
            ).fetchone()
            if row is None:
                return 0
            calls = len(json.loads(row[1])) if row[1] else 0
            cur.execute(
                self._q(
                    "UPDATE {s}.sessions SET message_count = greatest(0, message_count - 1),"
                    " tool_call_count = greatest(0, tool_call_count - %s) WHERE id = %s"
                ),
                (calls, row[0]),
            )
            return 1

        return self._run(do)

    def forget_session(self, session_id: str) -> int:
        """Delete a session and its messages; children move up to its parent."""

        def do(cur: Cursor) -> int:
            row = cur.execute(
                self._q("SELECT parent_session_id FROM {s}.sessions WHERE id = %s FOR UPDATE"),
                (session_id,),
            ).fetchone()
            if row is None:
                raise SessionNotFound(f"unknown session {session_id!r}")
            cur.execute(
                self._q(
                    "UPDATE {s}.sessions SET parent_session_id = %s WHERE parent_session_id = %s"
                ),
                (row[0], session_id),
            )
            deleted = cur.execute(
                self._q("DELETE FROM {s}.messages WHERE session_id = %s"), (session_id,)
            ).rowcount
            cur.execute(self._q("DELETE FROM {s}.sessions WHERE id = %s"), (session_id,))
            return int(deleted)

        return self._run(do)

    def _forget_user(self, user_id: str) -> int:
        def do(cur: Cursor) -> int:
            ids = "SELECT id FROM {s}.sessions WHERE user_id = %s"
            deleted = cur.execute(
                self._q(f"DELETE FROM {{s}}.messages WHERE session_id IN ({ids})"), (user_id,)
            ).rowcount
            cur.execute(
                self._q(
                    "UPDATE {s}.sessions SET parent_session_id = NULL"
                    f" WHERE parent_session_id IN ({ids})"
                    " AND (user_id IS NULL OR user_id <> %s)"
                ),
                (user_id, user_id),
            )
            cur.execute(self._q("DELETE FROM {s}.sessions WHERE user_id = %s"), (user_id,))
            return int(deleted)

        return self._run(do)

    # ------------------------------------------------------------------ portability
    def _export(
        self,
        out: IO[str],
        session_ids: Sequence[str] | None,
        user_id: str | None,
        progress: Progress | None,
    ) -> int:
        return self._run(  # one snapshot (REPEATABLE READ): a transaction
            lambda c: export_sessions(c, self._s, out, session_ids, user_id, progress),
            what="read",
        )

    def _import_entries(
        self,
        entries: list[tuple[SessionRecord, list[MessageRecord]]],
        on_conflict: str,
        progress: Progress | None = None,
    ) -> ImportReport:
        return self._run(lambda c: import_sessions(c, self._s, entries, on_conflict, progress))

    def _prune_empty(
        self, user_id: str | None, cutoff: float, dry_run: bool
    ) -> list[SessionRecord]:
        return self._run(lambda c: prune_empty(c, self._s, user_id, cutoff, dry_run))

    # ------------------------------------------------------------------ maintenance
    def rebuild_index(self, progress: Progress | None = None) -> None:
        """Recompute stale ``tsv`` values, put back missing indexes and m060 triggers,
        REINDEX, and (re)create the trigram index (as the tables' owner)."""
        self._run(lambda c: rebuild_indexes(c, self._s, progress))

    def check_index(self) -> None:
        """Verify indexes are valid and every ``tsv`` matches its text; else ``StoreError``."""
        invalid, stale = self._run(lambda c: index_problems(c, self._s), what="read")
        if invalid or stale:
            raise StoreError(
                f"full-text index is inconsistent: invalid indexes {invalid}, "
                f"{stale} stale rows; run rebuild_index()"
            )

    def get_meta(self, key: str) -> str | None:
        """Read a metadata value."""
        row = self._read(
            lambda c: c.execute(
                self._q("SELECT value FROM {s}.meta WHERE key = %s"), (key,)
            ).fetchone()
        )
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Write a metadata value."""
        self._run(
            lambda c: c.execute(
                self._q(
                    "INSERT INTO {s}.meta(key, value) VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                ),
                (key, value),
            )
        )


def _in_transaction(conn: psycopg.Connection[Any], fn: Callable[[Cursor], T]) -> T:
    with conn.transaction(), conn.cursor() as cur:
        return fn(cur)


def _bare(conn: psycopg.Connection[Any], fn: Callable[[Cursor], T]) -> T:
    """``fn`` on an autocommit connection, no transaction block: each statement commits
    on its own, so a single-statement read costs one round trip."""
    if not conn.autocommit:  # every pooled connection is configured so; never trust it
        conn.autocommit = True
    with conn.cursor() as cur:
        return fn(cur)


def _column_value(key: str, value: Any) -> Any:
    if key == "metadata":
        value = dump_json(value)
    elif key == "title":
        value = encode_text(value)
    return valid_text(value) if isinstance(value, str) else value
