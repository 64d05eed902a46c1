"""``memoryport ui``: a local web inspector for everything the agent remembers.

A thin shell like the CLI: every page is a call into ``memoryport.admin`` (curated memory,
sessions, facts, status, pause, audit) or ``memoryport.open()`` (writes go through the
``memory`` tool's own path). Nothing here touches storage. Needs the ``ui`` extra
(``pip install 'memoryport[ui]'``). See ``docs/ui.md``.
"""

from __future__ import annotations

from memoryport.ui.app import UiSettings, check_bind, is_loopback
from memoryport.ui.server import create_app

__all__ = ["UiSettings", "check_bind", "create_app", "is_loopback"]
