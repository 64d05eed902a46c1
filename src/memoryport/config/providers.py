"""A provider's section of ``config.yaml`` checked against its config schema."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryport.config.envfile import get_secret
from memoryport.config.schema import validate_config

if TYPE_CHECKING:
    from memoryport.config import Config

__all__ = ["missing_env_vars", "provider_env_var", "validate_provider_config"]


def provider_env_var(provider: str, fieldspec: Mapping[str, Any]) -> str:
    """Environment variable of a schema field: its ``env_var``, else ``<PROVIDER>_<KEY>``."""
    explicit = fieldspec.get("env_var")
    if isinstance(explicit, str) and explicit:
        return explicit
    return re.sub(r"[^A-Z0-9_]", "_", f"{provider}_{fieldspec.get('key', '')}".upper())


def validate_provider_config(
    provider: str,
    schema: Sequence[Mapping[str, Any]],
    config: Config,
    home: Path,
) -> list[str]:
    """Check a provider's config section (plus secrets from env/.env) against its schema.

    Returns every problem at once (empty when valid). Secret and ``env_var`` fields count
    as present when their environment variable is set in the environment or ``.env``.
    Only the top-level section is checked: a Hermes-style ``memory.<name>`` section
    belongs to the provider, which reads and validates it itself.
    """
    values = dict(config.providers.get(provider, {}))
    for spec in schema:
        key = spec.get("key")
        if not isinstance(key, str) or key in values:
            continue
        if spec.get("secret") or spec.get("env_var"):
            secret = get_secret(home, provider_env_var(provider, spec))
            if secret is not None:
                values[key] = secret
    return validate_config(schema, values)


def missing_env_vars(
    provider: str, schema: Sequence[Mapping[str, Any]], config: Config, home: Path
) -> list[str]:
    """Names of environment variables a provider requires that are set nowhere."""
    section = config.provider_section(provider)
    missing: list[str] = []
    for spec in schema:
        if not (spec.get("secret") or spec.get("env_var")) or not spec.get("required"):
            continue
        if spec.get("key") in section or spec.get("default") not in (None, ""):
            continue
        name = provider_env_var(provider, spec)
        if get_secret(home, name) is None:
            missing.append(name)
    return missing
