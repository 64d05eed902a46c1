"""``memoryport.admin.providers`` and ``.status``: real plugins from tests/fixtures/plugins."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.helpers import install_plugin, isolate
from memoryport.admin import providers, status
from memoryport.config import Config, set_value
from memoryport.errors import PluginError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolate(tmp_path, monkeypatch)
    home.mkdir(parents=True)
    return home


def test_describe_lists_metadata_and_checks_by_loading(home: Path) -> None:
    install_plugin(home, "hermes_style")
    plain = providers.describe("hermes_style", home)
    assert plain["name"] == "hermes_style" and "loaded" not in plain
    checked = providers.describe("hermes_style", home, check=True)
    assert checked["loaded"] is True and checked["available"] is False  # no API key yet
    assert [f["key"] for f in checked["config_schema"]][:2] == ["api_key", "region"]
    with pytest.raises(PluginError, match=r"'ghost' is not installed \(installed: .*hermes_st"):
        providers.describe("ghost", home)


def test_describe_reports_an_import_failure(home: Path) -> None:
    install_plugin(home, "broken")
    data = providers.describe("broken", home, check=True)
    assert data["loaded"] is False and "exploded at import" in data["error"]


def test_secret_fields_and_config_schema_come_from_the_manifest(home: Path) -> None:
    install_plugin(home, "hermes_style")
    assert list(providers.secret_fields(home)["hermes_style"]) == ["api_key"]
    info = providers.discover(home).get("hermes_style")
    assert info is not None
    no_schema = object()  # a provider without get_config_schema: the manifest's fields
    assert [f["key"] for f in providers.config_schema(no_schema, info)][:1] == ["api_key"]


def test_probe_health_initializes_and_prefetches_once(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(home, "hermes_style")
    monkeypatch.setenv("HERMES_STYLE_API_KEY", "sk-test")
    loaded = providers.load("hermes_style", home)
    assert loaded.provider is not None
    health = providers.probe_health(loaded.provider, home, Config())
    hooks = health["hermes_style"]["hooks"]
    assert hooks["initialize"]["calls"] == 1 and hooks["prefetch"]["calls"] == 1


def test_gather_status_and_problems(home: Path) -> None:
    install_plugin(home, "hermes_style")
    set_value(home, "memory.provider", "")  # no external provider (the default is holographic)
    data = status.gather_status(home, probe=False)
    assert data["provider"] is None and status.problems(data) == []
    assert "hermes_style" in [p["name"] for p in data["providers"]]
    assert data["builtin"]["targets"]["memory"]["entries"] == 0
    set_value(home, "memory.provider", "ghost")
    missing = status.gather_status(home, probe=False)
    assert status.problems(missing) == ["provider 'ghost' is selected but not installed"]


def test_gather_status_masks_secrets(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(home, "hermes_style")
    set_value(home, "memory.provider", "hermes_style")
    monkeypatch.setenv("HERMES_STYLE_API_KEY", "sk-very-secret")
    provider = status.gather_status(home, probe=False)["provider"]
    assert provider["config"]["api_key"] == "set" and provider["available"] is True
    assert "sk-very-secret" not in repr(provider)
    assert status.mask("") == "missing" and status.mask("x") == "set"
