"""Provider plugins: discovery (no imports), loading (only the active one), Hermes compatibility.

See ``docs/plugins.md``. The pieces:

* ``discover(home)`` lists providers from plugin.yaml / entry-point metadata only;
* ``load(name, home)`` / ``load_provider(name, home)`` import one plugin and build its
  provider, recording failures instead of raising;
* ``hermes_compat`` provides the Hermes modules that providers written for Hermes import;
* ``general`` finds Hermes *general* plugins (``hermes_agent.plugins``: tools and hooks)
  and loads the ones in ``plugins.enabled``, each as one ``hermes_general`` adapter.
"""

from __future__ import annotations

from memoryport.plugins.discovery import (
    ENTRY_POINT_GROUP,
    HERMES_ENTRY_POINT_GROUP,
    Discovery,
    ProviderInfo,
    discover,
)
from memoryport.plugins.general import (
    GENERAL_ENTRY_POINT_GROUP,
    GeneralLoadResult,
    discover_general,
    load_general,
)
from memoryport.plugins.loader import LoadResult, load, load_errors, load_provider
from memoryport.plugins.manifest import PluginManifest, validate_plugin_name

__all__ = [
    "ENTRY_POINT_GROUP",
    "GENERAL_ENTRY_POINT_GROUP",
    "HERMES_ENTRY_POINT_GROUP",
    "Discovery",
    "GeneralLoadResult",
    "LoadResult",
    "PluginManifest",
    "ProviderInfo",
    "discover",
    "discover_general",
    "load",
    "load_errors",
    "load_general",
    "load_provider",
    "validate_plugin_name",
]
