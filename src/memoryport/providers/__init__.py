"""Bundled memory providers, one package each (with its own ``README.md`` and ``plugin.yaml``)."""
