"""Hermes general plugins for shells: list them, enable and disable them.

A general plugin (``hermes_agent.plugins`` entry point, or ``<home>/plugins/<name>/``
with tools and hooks instead of a memory provider) runs only when its name is in
``plugins.enabled`` in ``config.yaml``; see ``memoryport.plugins.general``.
"""

from __future__ import annotations

from memoryport.plugins.general import (
    discover_general,
    enabled_plugins,
    general_report,
    set_enabled,
)

__all__ = ["discover_general", "enabled_plugins", "general_report", "set_enabled"]
