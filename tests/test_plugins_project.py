"""Project plugins: ``./.hermes/plugins/<name>/`` and ``./.memoryport/plugins/<name>/``,
found only when ``HERMES_ENABLE_PROJECT_PLUGINS`` or ``MEMORYPORT_ENABLE_PROJECT_PLUGINS``
is set, after the home's own plugins (a checked-out project cannot shadow them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fixtures.helpers import PLUGIN_FIXTURES, install_plugin, isolate
from memoryport.plugins import discover, load
from memoryport.plugins.general import discover_general, load_general
from memoryport.provider import MemoryProvider
from memoryport.types import InitContext


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for switch in ("HERMES_ENABLE_PROJECT_PLUGINS", "MEMORYPORT_ENABLE_PROJECT_PLUGINS"):
        monkeypatch.delenv(switch, raising=False)
    return isolate(tmp_path, monkeypatch)


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "checkout"
    shutil.copytree(PLUGIN_FIXTURES / "hermes_style", root / ".hermes" / "plugins" / "notes")
    general = root / ".memoryport" / "plugins" / "shout"
    general.mkdir(parents=True)
    (general / "plugin.yaml").write_text("name: shout\nprovides_tools: [shout]\n")
    (general / "__init__.py").write_text(
        "import json\n"
        "def register(ctx):\n"
        "    ctx.register_tool('shout', 'shout', {'name': 'shout', 'description': 'Upper-case.',"
        " 'parameters': {'type': 'object', 'properties': {'text': {'type': 'string'}}}},"
        " lambda args, **kw: json.dumps({'text': args['text'].upper()}))\n"
    )
    monkeypatch.chdir(root)
    return root


def test_not_found_without_the_switch(home: Path, project: Path) -> None:
    assert discover(home).get("notes") is None
    assert discover_general(home).get("shout") is None


@pytest.mark.parametrize(
    "switch", ["HERMES_ENABLE_PROJECT_PLUGINS", "MEMORYPORT_ENABLE_PROJECT_PLUGINS"]
)
def test_found_and_loaded_with_either_switch(
    home: Path, project: Path, switch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(switch, "1")
    monkeypatch.setenv("HERMES_STYLE_API_KEY", "k")
    info = discover(home).get("notes")
    assert info is not None and info.source == "project"
    assert info.path == project / ".hermes" / "plugins" / "notes"
    result = load("notes", home)
    assert result.ok, result.traceback
    provider = result.provider
    assert isinstance(provider, MemoryProvider)
    provider.initialize("s1", **InitContext(home=home).to_kwargs())
    assert json.loads(provider.handle_tool_call("note_add", {"text": "likes tea"})) == {
        "success": True
    }
    assert "likes tea" in provider.prefetch("what about tea?")
    general = load_general("shout", home)
    assert general.ok and general.provider is not None, general.error
    assert json.loads(general.provider.handle_tool_call("shout", {"text": "hi"})) == {"text": "HI"}
    general.provider.shutdown()


def test_a_home_plugin_of_the_same_name_wins(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_ENABLE_PROJECT_PLUGINS", "true")
    install_plugin(home, "duck_typed", "notes")
    found = discover(home)
    info = found.get("notes")
    assert info is not None and info.source == "user"
    assert any("shadowed" in problem and "project" in problem for problem in found.problems)
