"""End to end: pip-install a provider package from a local directory (offline), find it
through the ``memoryport.providers`` entry point, use it from the CLI, uninstall it."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fixtures.helpers import FIXTURES, isolate
from memoryport.cli import main
from memoryport.plugins import discover, load
from memoryport.types import InitContext

DIST = "mp-demo-provider"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[None]:
    source = tmp_path / "src-copy"  # build outside the repository (no build/ dirs there)
    shutil.copytree(FIXTURES / "mp_demo_provider", source)
    done = _pip("install", "--no-index", "--no-deps", "--no-build-isolation", str(source))
    assert done.returncode == 0, done.stderr
    importlib.invalidate_caches()
    try:
        yield
    finally:
        _pip("uninstall", "-y", DIST)
        for name in [m for m in sys.modules if m.startswith("mp_demo_provider")]:
            del sys.modules[name]
        importlib.invalidate_caches()


def test_installed_package_is_found_loaded_and_used(installed: None, tmp_path: Path) -> None:
    home = tmp_path / "mphome"
    found = discover(home)
    info = found.providers["mpdemo"]
    assert info.source == "entry_point"
    assert info.distribution == DIST
    assert info.manifest.version == "0.3.0"
    assert "mp_demo_provider" not in sys.modules  # listing did not import it

    provider = load("mpdemo", home).provider
    assert provider is not None
    provider.initialize("s", **InitContext(home=home).to_kwargs())
    provider.sync_turn("hello", "world")
    assert provider.prefetch("anything") == '["hello", "world"]'

    runner = CliRunner()
    listed = runner.invoke(main, ["providers", "list"])
    assert "mpdemo" in listed.output and "entry_point" in listed.output
    setup = runner.invoke(main, ["setup", "mpdemo", "--yes"])
    assert setup.exit_code == 0, setup.output
    # The active provider's own click group appears, and only now.
    ping = runner.invoke(main, ["mpdemo", "ping"])
    assert ping.exit_code == 0, ping.output
    assert "pong from mpdemo" in ping.output
    assert "mpdemo" in runner.invoke(main, ["--help"]).output


def test_uninstalled_package_disappears(tmp_path: Path) -> None:
    assert "mpdemo" not in discover(tmp_path / "h").providers
