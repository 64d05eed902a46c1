"""Session store: conversation history with full-text search (SQLite by default).

Every name has one home; this package re-exports nothing.

Backend-neutral modules:

* :mod:`.base` -- the :class:`~.base.SessionStore` interface and the logic every backend
  shares (scoping, search fallbacks, lineage walking);
* :mod:`.records` -- the frozen records, type aliases and input checks;
* :mod:`.rows` -- column lists and row conversions every SQL backend selects with;
* :mod:`.query` -- the query parser and its compilers; :mod:`.temporal` -- time hints;
* :mod:`.portable` -- the JSONL export format; :mod:`.render` -- messages for people;
* :mod:`.migrate` -- the one schema-migration runner.

Backends, each a package with the same module names (``store``, ``dialect``, ``search``,
``bulk``, ``connect``, ``migrations``), and the store class exported by the package:

* :mod:`.sqlite` -- ``SQLiteSessionStore`` (the default, embedded);
* :mod:`.postgres` -- ``PostgresSessionStore`` (needs ``memoryport[postgres]``).
"""
