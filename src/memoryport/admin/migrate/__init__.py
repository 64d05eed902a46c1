"""Migrations into a memoryport home, for shells (``memoryport migrate ...``) and code.

- :mod:`.openclaw`: ``plan_openclaw`` (the preview; writes nothing), ``apply_openclaw``,
  ``cleanup_openclaw``; discovery and reading in :mod:`.openclaw_source`.
- :mod:`.hermes`: ``migrate_hermes`` (curated files and ``state.db``, idempotent);
  the read-only ``state.db`` reader in :mod:`.hermes_db`.
- :mod:`.curated_merge`: how outside entries enter curated memory (dedupe, safety scan,
  budget, archive), shared by migrations and ``memoryport import``.
- :mod:`.backup`: ``backup_home`` / ``restore_backup``.
- :mod:`.stream`: sessions streamed through the store's bulk import in bounded memory.
- :mod:`.report`: the report every migration returns.

The archive of a whole home (``memoryport export`` / ``import``) is
:mod:`memoryport.admin.archive`.
"""

from memoryport.admin.migrate.backup import backup_home, restore_backup
from memoryport.admin.migrate.hermes import HermesOptions, migrate_hermes
from memoryport.admin.migrate.openclaw import (
    OpenClawOptions,
    OpenClawPlan,
    SourceNotFound,
    apply_openclaw,
    cleanup_openclaw,
    plan_openclaw,
)
from memoryport.admin.migrate.report import Report, Row

__all__ = [
    "HermesOptions",
    "OpenClawOptions",
    "OpenClawPlan",
    "Report",
    "Row",
    "SourceNotFound",
    "apply_openclaw",
    "backup_home",
    "cleanup_openclaw",
    "migrate_hermes",
    "plan_openclaw",
    "restore_backup",
]
