"""Session store: conversation history with full-text search (SQLite by default).

``open_session_store(path)`` opens the SQLite store; the PostgreSQL backend lives in
``memoryport.storage.sessions.postgres``.
"""

from memoryport.storage.sessions.base import (
    DEFAULT_HIDDEN_SOURCES,
    ImportReport,
    MessageInput,
    MessageRecord,
    MessageWindow,
    SearchHit,
    SearchResult,
    SessionRecord,
    SessionStore,
    SessionSummary,
)

__all__ = [
    "DEFAULT_HIDDEN_SOURCES",
    "ImportReport",
    "MessageInput",
    "MessageRecord",
    "MessageWindow",
    "SearchHit",
    "SearchResult",
    "SessionRecord",
    "SessionStore",
    "SessionSummary",
]
