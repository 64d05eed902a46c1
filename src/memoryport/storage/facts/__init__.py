"""The fact store: durable facts with an entity index, trust, contradictions and history.

SQLite, in ``<home>/holographic.db`` (shared with the turn index, each with its own
migration ledger), scoped per user. Modules:

* :mod:`.store` -- :class:`~.store.FactStore`, the one entry point (writes are one
  transaction each: fact + entities + retirements + revisions);
* :mod:`.records` -- the records in and out; :mod:`.migrations` -- the schema;
* :mod:`.read` / :mod:`.write` -- the queries and write steps the store runs;
* :mod:`.triples` -- the deterministic subject/relation/value reader and the
  contradiction rule; :mod:`.entities` -- rule-based entity extraction;
  :mod:`.text` -- normalisation, hashes, tokens, safe FTS5 queries.

Every name has one home; this package re-exports nothing.
"""
