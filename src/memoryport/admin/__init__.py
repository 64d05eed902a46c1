"""What shells need beyond the turn lifecycle: administration of a memoryport home.

``memoryport.Memory`` is the API for an agent's turns. The command line (and later the
MCP server and a UI) also lists and edits curated memory, browses and moves session
history, inspects provider plugins and diagnoses a home. Those needs are met here, one
module per concern, so no shell imports storage, concrete providers, the manager or the
plugin machinery:

- :mod:`memoryport.admin.sessions`: open a home's session store, record types, export,
  rebuild.
- :mod:`memoryport.admin.curated`: read curated memory; the checked whole-file edit, saved
  through the ``memory`` tool's path (providers' ``on_memory_write`` see it).
- :mod:`memoryport.admin.providers`: discovery, loading and probing a provider, its
  config schema, its command group.
- :mod:`memoryport.admin.status`: everything ``memoryport status`` reports.
- :mod:`memoryport.admin.doctor`: ``diagnose(home)``, typed findings with a fix each.

Nothing is imported by this package itself; import the module you need.
"""
