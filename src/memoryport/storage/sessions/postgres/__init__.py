"""The PostgreSQL session store, for teams whose agents on several machines share one history.

Install with ``pip install 'memoryport[postgres]'`` (psycopg 3 and psycopg-pool). This
package is the only code that imports them, and this module is where that is checked:
importing any part of it without the extra raises ``ConfigError`` naming the extra, so
the core install stays light.

Import the store from here: ``from memoryport.storage.sessions.postgres import
PostgresSessionStore``. Modules mirror the SQLite backend: ``store``, ``dialect``,
``search``, ``bulk``, ``connect`` (a fast first-connection check), ``migrations``.
"""

from memoryport.errors import ConfigError

try:
    import psycopg  # noqa: F401  (the driver guard: every module below imports it)
    import psycopg_pool  # noqa: F401
    import Stemmer  # noqa: F401  (search lexemes: memoryport.storage.search_lexemes)
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError(
        "the PostgreSQL session store needs psycopg 3, psycopg-pool and pystemmer: "
        "install memoryport[postgres]"
    ) from exc

from memoryport.storage.sessions.postgres.store import PostgresSessionStore

__all__ = ["PostgresSessionStore"]
