"""The SQLite session store (the default; embedded, one file at ``<home>/state.db``).

Import the store from here: ``from memoryport.storage.sessions.sqlite import
SQLiteSessionStore``. Modules: ``store`` (the class), ``dialect`` (filter SQL),
``search`` (FTS5 search and windows), ``bulk`` (export, import, pruning, index
rebuilds), ``connect`` (opening the file), ``migrations`` (the schema).
"""

from memoryport.storage.sessions.sqlite.store import SQLiteSessionStore

__all__ = ["SQLiteSessionStore"]
