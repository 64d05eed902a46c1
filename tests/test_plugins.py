"""Discovery (no imports), loading (both Hermes shapes), failures, Hermes shims."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import pytest

from fixtures.helpers import install_plugin, isolate
from memoryport.config import resolve_home
from memoryport.errors import PluginError
from memoryport.plugins import discover, load, load_errors, load_provider, validate_plugin_name
from memoryport.plugins.hermes_compat import SHIM_NAMES, hermes_shims, shim_modules
from memoryport.plugins.loader import pick_provider_class
from memoryport.plugins.manifest import parse_manifest
from memoryport.provider import MemoryProvider
from memoryport.types import InitContext


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


def _bundled(tmp_path: Path, names: dict[str, str]) -> Path:
    root = tmp_path / "bundled"
    for name, yaml_text in names.items():
        (root / name).mkdir(parents=True)
        (root / name / "plugin.yaml").write_text(yaml_text)
        (root / name / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    return root


def _ep(name: str, value: str, group: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name=name, value=value, group=group)


# ----------------------------------------------------------------- names & manifests


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b", "/abs", "-dash", "a b"])
def test_invalid_plugin_names(bad: str) -> None:
    with pytest.raises(PluginError):
        validate_plugin_name(bad)


def test_manifest_normalises_seed_02_config_form() -> None:
    manifest = parse_manifest(
        {
            "name": "mentisdb",
            "pip_dependencies": ["httpx"],
            "external_dependencies": [{"name": "mentisdbd", "install": "cargo install mentisdb"}],
            "config": [{"key": "MENTISDB_URL", "label": "Daemon URL", "default": "http://x"}],
        },
        "fallback",
    )
    assert manifest.pip_dependencies == ("httpx",)
    assert manifest.external_dependencies[0].install == "cargo install mentisdb"
    assert manifest.config[0]["description"] == "Daemon URL"
    assert "label" not in manifest.config[0]


def test_manifest_rejects_bad_shapes() -> None:
    with pytest.raises(PluginError, match="pip_dependencies"):
        parse_manifest({"pip_dependencies": {"a": 1}}, "x")
    with pytest.raises(PluginError, match="key"):
        parse_manifest({"config": [{"label": "no key"}]}, "x")


# ----------------------------------------------------------------- discovery


def test_discovery_reads_metadata_without_importing(home: Path, tmp_path: Path) -> None:
    install_plugin(home, "hermes_style")
    install_plugin(home, "broken")
    install_plugin(home, "duck_typed")
    general = home / "plugins" / "not_memory"
    general.mkdir()
    (general / "__init__.py").write_text("def register(ctx): ctx.register_hook('x', None)\n")
    bundled = _bundled(tmp_path, {"alpha": "name: alpha\nversion: '2'\n"})
    before = set(sys.modules)
    found = discover(home, bundled_dir=bundled, entry_points={})
    assert list(found.providers) == ["alpha", "broken", "duck_typed", "hermes_style"]
    assert found.providers["hermes_style"].manifest.version == "1.2.0"
    assert found.providers["duck_typed"].manifest.description == ""
    assert found.providers["alpha"].source == "bundled"
    new = {m for m in set(sys.modules) - before if "plugin" in m or m in SHIM_NAMES}
    assert new == set()


def test_builtin_marker_excludes_bundled_providers(home: Path, tmp_path: Path) -> None:
    bundled = _bundled(
        tmp_path,
        {"builtin": "name: builtin\nbuiltin: true\n", "sessions": "builtin: true\n", "x": ""},
    )
    found = discover(home, bundled_dir=bundled, entry_points={})
    assert list(found.providers) == ["x"]


def test_real_bundled_builtins_are_not_selectable(home: Path) -> None:
    assert "builtin" not in discover(home).providers
    assert "sessions" not in discover(home).providers


def test_precedence_and_clash_warning(
    home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    install_plugin(home, "duck_typed", "alpha")
    install_plugin(home, "duck_typed", "beta")
    bundled = _bundled(tmp_path, {"alpha": "name: alpha\n"})
    eps = {
        "memoryport.providers": [_ep("beta", "json", "memoryport.providers")],
        "hermes_agent.memory_providers": [
            _ep("beta", "json", "hermes_agent.memory_providers"),
            _ep("gamma", "json", "hermes_agent.memory_providers"),
        ],
    }
    found = discover(home, bundled_dir=bundled, entry_points=eps)
    assert found.providers["alpha"].source == "bundled"
    # user folders come before entry points (as in Hermes): installers write them to wrap
    # or configure the installed package of the same name
    assert found.providers["beta"].source == "user"
    assert found.providers["gamma"].source == "hermes_entry_point"
    assert len(found.shadowed) == 3
    assert any("shadowed" in p and "'beta'" in p for p in found.problems)
    assert "shadowed" in caplog.text


def test_invalid_entry_point_name_is_reported(home: Path) -> None:
    eps = {"memoryport.providers": [_ep("../bad", "json", "memoryport.providers")]}
    found = discover(home, bundled_dir=home / "none", entry_points=eps)
    assert found.providers == {}
    assert "invalid plugin name" in found.problems[0]


def test_bad_plugin_yaml_is_reported_and_the_plugin_still_loads(home: Path) -> None:
    target = install_plugin(home, "duck_typed", "badyaml")
    (target / "plugin.yaml").write_text("name: [unclosed\nversion: 0.2\n")
    found = discover(home, bundled_dir=home / "none", entry_points={})
    assert found.providers["badyaml"].manifest.name == "badyaml"
    assert found.providers["badyaml"].manifest.version == "0.2"
    assert any("not valid YAML" in p and "line 2" in p for p in found.problems)
    assert load("badyaml", home, discovery=found).ok


# ----------------------------------------------------------------- loading


def test_register_ctx_shape_with_hermes_imports(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(home, "hermes_style")
    monkeypatch.setenv("HERMES_STYLE_API_KEY", "k")
    result = load("hermes_style", home)
    assert result.ok, result.traceback
    provider = result.provider
    assert isinstance(provider, MemoryProvider)
    assert any("register_tool" in w for w in result.warnings)
    # The stand-ins are gone from sys.modules after loading ...
    for name in SHIM_NAMES:
        assert name not in sys.modules
    provider.initialize("s1", **InitContext(home=home).to_kwargs())
    # ... yet the plugin's lazy `from tools.registry import tool_error` still works.
    assert json.loads(provider.handle_tool_call("nope", {})) == {"error": "unknown tool nope"}
    assert json.loads(provider.handle_tool_call("note_add", {"text": "likes tea"})) == {
        "success": True
    }
    provider.sync_turn("I drink tea daily", "ok")
    assert "likes tea" in provider.prefetch("what about tea?")
    assert (home / "hermes_style" / "notes.json").exists()
    for name in SHIM_NAMES:
        assert name not in sys.modules


def test_get_hermes_home_is_the_profile_home(home: Path) -> None:
    work = resolve_home(profile="work")
    install_plugin(work, "hermes_style")
    provider = load_provider("hermes_style", work)
    assert provider is not None
    provider.initialize("s", **InitContext(home=work).to_kwargs())  # asserts inside
    provider.sync_turn("profile scoped", "ok")
    assert (work / "hermes_style" / "notes.json").exists()
    assert not (home / "hermes_style").exists()
    with hermes_shims():
        from hermes_constants import get_hermes_home  # type: ignore[import-not-found]

        assert get_hermes_home() == work


def test_subclass_shape_is_deterministic(home: Path) -> None:
    install_plugin(home, "subclass_pick")
    for _ in range(2):
        result = load("subclass_pick", home)
        assert result.ok, result.traceback
        assert type(result.provider).__name__ == "Zed"
    assert result.module is not None
    picked = pick_provider_class(result.module)
    assert picked is not None and picked.__name__ == "Zed"
    assert any("provides a provider named 'zed'" in w for w in result.warnings)


def test_duck_typed_provider_via_register(home: Path) -> None:
    install_plugin(home, "duck_typed")
    provider = load_provider("duck_typed", home)
    assert provider is not None and not isinstance(provider, MemoryProvider)
    provider.initialize("s", hermes_home=str(home))
    assert provider.get_tool_schemas() == []


def test_failing_plugin_returns_none_and_records_traceback(home: Path) -> None:
    install_plugin(home, "broken")
    before = set(sys.modules)
    result = load("broken", home)
    assert result.provider is None
    assert "broken plugin exploded at import" in result.error
    assert "Traceback" in result.traceback
    assert "broken plugin exploded" in load_errors()["broken"]
    assert load_provider("broken", home) is None
    # Neither the package nor its sibling submodule stays cached.
    leftovers = [m for m in set(sys.modules) - before if "broken" in m]
    assert leftovers == []


def test_unknown_plugin_is_an_error_not_an_exception(home: Path) -> None:
    result = load("nothing_here", home)
    assert not result.ok
    assert "not installed" in result.error


def test_object_without_provider_shape_is_rejected(home: Path) -> None:
    target = home / "plugins" / "shapeless"
    target.mkdir(parents=True)
    (target / "__init__.py").write_text(
        "class NotAProvider:\n    name = 'x'\n\n"
        "def register(ctx):\n    ctx.register_memory_provider(NotAProvider())\n"
    )
    (target / "plugin.yaml").write_text("name: shapeless\n")
    result = load("shapeless", home)
    assert not result.ok
    assert "missing 'is_available'" in result.error


def test_register_raising_after_registration_keeps_provider(home: Path) -> None:
    target = install_plugin(home, "duck_typed", "half_broken")
    init = target / "__init__.py"
    late = (
        "\n\n_orig = register\n\ndef register(ctx):\n    _orig(ctx)\n    raise ValueError('late')\n"
    )
    init.write_text(init.read_text() + late)
    result = load("half_broken", home)
    assert result.ok
    assert any("raised after registering" in w for w in result.warnings)


def test_entry_point_shapes(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "site" / "ep_shapes_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from agent.memory_provider import MemoryProvider\n\n"
        "class P(MemoryProvider):\n"
        "    name = 'p'\n"
        "    def is_available(self): return True\n"
        "    def initialize(self, session_id, **kw): pass\n"
        "    def get_tool_schemas(self): return []\n\n"
        "def register(ctx):\n    ctx.register_memory_provider(P())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    group = "hermes_agent.memory_providers"
    eps = {
        group: [
            _ep("as_module", "ep_shapes_pkg", group),
            _ep("as_function", "ep_shapes_pkg:register", group),
            _ep("as_class", "ep_shapes_pkg:P", group),
        ]
    }
    found = discover(home, bundled_dir=home / "none", entry_points=eps)
    try:
        for name in ("as_module", "as_function", "as_class"):
            result = load(name, home, discovery=found)
            assert result.ok, result.traceback
            assert type(result.provider).__name__ == "P"
    finally:
        for module in [m for m in sys.modules if m.startswith("ep_shapes_pkg")]:
            del sys.modules[module]


def test_real_modules_win_over_shims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real" / "hermes_constants.py"
    real.parent.mkdir()
    real.write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(real.parent))
    import hermes_constants  # type: ignore[import-not-found]

    try:
        with hermes_shims() as added:
            assert "hermes_constants" not in added
            assert sys.modules["hermes_constants"] is hermes_constants
    finally:
        del sys.modules["hermes_constants"]


def test_shim_tool_helpers() -> None:
    registry = shim_modules()["tools.registry"]
    assert json.loads(registry.tool_error("bad", code=3)) == {"error": "bad", "code": 3}
    assert json.loads(registry.tool_result({"ok": 1})) == {"ok": 1}
    provider_module = shim_modules()["agent.memory_provider"]
    assert provider_module.MemoryProvider is MemoryProvider
    assert provider_module.is_trivial_prompt("ok!")
    assert not provider_module.is_trivial_prompt("what is my editor?")
    thread = provider_module.spawn_context_thread(lambda: None, name="t")
    assert not thread.is_alive()
    thread.start()
    thread.join()


# ----------------------------------------------------------------- discovery snapshots


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   f"Summary: {name} summary\n")
    (info / "entry_points.txt").write_text(f"[memoryport.providers]\n{name} = {name}_mod\n")


def test_discovery_sees_an_install_after_an_earlier_discover(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed entry points are read once per state of sys.path, not once per process:
    a package installed after a discover is found by the next one."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    _dist(site, "snapfirst", "1.0")
    assert "snapfirst" in discover(home).providers
    assert "snapsecond" not in discover(home).providers
    _dist(site, "snapsecond", "2.0")
    found = discover(home).providers
    assert found["snapsecond"].manifest.version == "2.0"
    assert found["snapsecond"].manifest.description == "snapsecond summary"


def test_an_edited_plugin_yaml_is_read_again(home: Path, tmp_path: Path) -> None:
    bundled = _bundled(tmp_path, {"alpha": "name: alpha\nversion: '1'\n"})
    assert discover(home, bundled_dir=bundled, entry_points={}).providers[
        "alpha"].manifest.version == "1"
    (bundled / "alpha" / "plugin.yaml").write_text("name: alpha\nversion: '22'\n")
    assert discover(home, bundled_dir=bundled, entry_points={}).providers[
        "alpha"].manifest.version == "22"
