"""``memoryport migrate openclaw``: bring an OpenClaw workspace's memory into a home.

Two phases. :func:`plan_openclaw` reads the source and the home and builds the whole
:class:`~memoryport.admin.migrate.report.Report` (what would be written, merged,
skipped, refused, archived, with conflicts) without writing anything; that is the
preview and the whole of ``--dry-run``. :func:`apply_openclaw` then backs up the home
(unless ``backup=False``), merges curated memory through the ``memory`` tool (source
``migration:openclaw``), copies skills and workspace instructions, writes allowlisted
secrets (only with ``migrate_secrets``) to ``.env`` (0600), and archives what it did not
migrate under ``<home>/migration/openclaw/<timestamp>/archive/``.

Mapping: ``workspace/MEMORY.md`` and the daily ``workspace/memory/*.md`` (newest first,
each entry prefixed with its date) go to curated ``MEMORY.md``; ``workspace/USER.md`` to
``USER.md``; skills (``skills/<name>/SKILL.md``) to ``<home>/skills/<name>/``; other
workspace Markdown (``SOUL.md``, ``AGENTS.md``, ...) to ``workspace_target`` or the
archive; OpenClaw's memory-backend settings and (preset ``full``) its whole settings
file, secrets masked, to the archive for manual review.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memoryport.admin.migrate.backup import backup_home
from memoryport.admin.migrate.curated_merge import (
    Candidate,
    TargetPlan,
    apply_plans,
    markdown_entries,
    plan_curated,
    report_plans,
    write_archive,
)
from memoryport.admin.migrate.openclaw_source import (
    SECRET_ALLOWLIST,
    OpenClawSource,
    discover,
    openclaw_running,
    read_source,
)
from memoryport.admin.migrate.report import Report
from memoryport.config import ensure_home, read_env, write_env
from memoryport.config.secrets import HIDDEN, looks_secret
from memoryport.errors import MemoryportError

__all__ = [
    "SOURCE_LABEL",
    "OpenClawOptions",
    "OpenClawPlan",
    "SourceNotFound",
    "apply_openclaw",
    "cleanup_openclaw",
    "plan_openclaw",
    "run_directory",
]

SOURCE_LABEL = "migration:openclaw"
"""The ``source`` curated history records for migrated entries."""

Preset = Literal["full", "user-data"]
SkillConflict = Literal["skip", "overwrite", "rename"]


class SourceNotFound(MemoryportError):
    """No source directory: ``looked`` lists every place that was searched."""

    def __init__(self, what: str, looked: list[Path]) -> None:
        places = ", ".join(str(p) for p in looked)
        super().__init__(
            f"no {what} directory found (looked in: {places}); nothing was written. "
            "Pass --source PATH to name it."
        )
        self.looked = looked


@dataclass(frozen=True)
class OpenClawOptions:
    """The choices of one migration (the CLI options of the same names)."""

    source: Path | None = None
    preset: Preset = "full"
    overwrite: bool = False
    migrate_secrets: bool = False
    workspace_target: Path | None = None
    skill_conflict: SkillConflict = "skip"
    backup: bool = True
    user_home: Path | None = None


@dataclass
class OpenClawPlan:
    """The preview: the report plus everything :func:`apply_openclaw` needs."""

    home: Path
    options: OpenClawOptions
    source: OpenClawSource
    run_dir: Path
    report: Report
    curated: list[TargetPlan] = field(default_factory=list)
    copies: list[tuple[Path, Path]] = field(default_factory=list)
    archive: list[tuple[Path | str, str]] = field(default_factory=list)
    secrets: dict[str, str] = field(default_factory=dict)


def run_directory(home: Path, name: str, stamp: float | None = None) -> Path:
    """``<home>/migration/<name>/<UTC timestamp>``: where one run's backup and archive go."""
    when = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(stamp if stamp is not None else time.time()))
    return home / "migration" / name / when


def plan_openclaw(home: Path, options: OpenClawOptions) -> OpenClawPlan:
    """Build the preview of migrating ``options.source`` (or the discovered directory)
    into ``home``; writes nothing. ``SourceNotFound`` when there is no source;
    ``ConfigError`` for an invalid combination of options or config.yaml."""
    if options.migrate_secrets and options.preset != "full":
        from memoryport.errors import ConfigError

        raise ConfigError("--migrate-secrets needs --preset full (user-data never moves secrets)")
    root, looked = discover(options.source, options.user_home)
    if root is None:
        raise SourceNotFound("OpenClaw", looked)
    source = read_source(root)
    run_dir = run_directory(home, "openclaw")
    report = Report("openclaw", str(root), str(home))
    report.paths["archive"] = str(run_dir / "archive")
    if options.backup:
        report.paths["backup"] = str(run_dir / "home-backup.zip")
    plan = OpenClawPlan(home, options, source, run_dir, report)
    report.warnings.extend(_warnings(source))
    _plan_memory(plan)
    _plan_skills(plan)
    _plan_workspace(plan)
    _plan_settings(plan)
    _plan_secrets(plan)
    for path in source.other:
        report.add("other", str(path), "", "skip", "not migrated: OpenClaw-specific data")
    report.notes.append(
        "Imported memory takes effect in new sessions (the system prompt keeps a frozen "
        "snapshot of curated memory)."
    )
    return plan


def _warnings(source: OpenClawSource) -> list[str]:
    found: list[str] = []
    running = openclaw_running()
    if running:
        found.append(
            f"OpenClaw appears to be running ({'; '.join(running)}): stop it first, messaging "
            "platforms can reject a second session with the same bot token."
        )
    if source.config_error:
        found.append(source.config_error + "; its settings are archived as they are.")
    if not source.workspaces:
        found.append(f"no workspace (workspace/, workspace.default/, ...) in {source.root}")
    return found


def _plan_memory(plan: OpenClawPlan) -> None:
    memory: list[Candidate] = []
    user: list[Candidate] = []
    for workspace in plan.source.workspaces:
        for path, prefix in plan.source.memory_files(workspace):
            memory.extend(Candidate(t, str(path)) for t in _entries(plan, path, prefix))
        profile = workspace / "USER.md"
        if profile.is_file():
            user.extend(Candidate(t, str(profile)) for t in _entries(plan, profile, ""))
    plan.curated = plan_curated(plan.home, {"memory": memory, "user": user})
    report_plans(plan.report, plan.curated, str(plan.run_dir / "archive"))


def _entries(plan: OpenClawPlan, path: Path, prefix: str) -> list[str]:
    try:
        return markdown_entries(path.read_text("utf-8", errors="replace"), prefix=prefix)
    except OSError as exc:
        plan.report.warnings.append(f"{path} could not be read ({exc}); it was skipped")
        return []


def _free_name(folder: Path, name: str) -> str:
    candidate, number = f"{name}-openclaw", 2
    while (folder / candidate).exists():
        candidate, number = f"{name}-openclaw-{number}", number + 1
    return candidate


def _plan_skills(plan: OpenClawPlan) -> None:
    folder = plan.home / "skills"
    seen: set[str] = set()
    for skill in plan.source.skills:
        target = folder / skill.name
        if skill.name in seen:
            plan.report.add("skill", str(skill), str(target), "duplicate", "an earlier one wins")
            plan.archive.append((skill, f"skills/{skill.parent.parent.name}-{skill.name}"))
            continue
        seen.add(skill.name)
        action = "add"
        if target.exists():
            action = plan.options.skill_conflict
            if action == "rename":
                target = folder / _free_name(folder, skill.name)
        if action == "skip":
            plan.report.add("skill", str(skill), str(target), "conflict",
                            "exists; kept (the OpenClaw copy is archived)")  # fmt: skip
            plan.archive.append((skill, f"skills/{skill.name}"))
            continue
        plan.report.add("skill", str(skill), str(target), action)
        plan.copies.append((skill, target))


def _plan_workspace(plan: OpenClawPlan) -> None:
    target_root = plan.options.workspace_target
    for index, workspace in enumerate(plan.source.workspaces):
        for path in plan.source.instruction_files(workspace):
            relative = path.name if index == 0 else f"{workspace.name}/{path.name}"
            if target_root is None:
                plan.report.add("workspace", str(path), f"archive/workspace/{relative}",
                                "archive", "pass --workspace-target PATH to copy it")  # fmt: skip
                plan.archive.append((path, f"workspace/{relative}"))
                continue
            _plan_copy(plan, path, target_root.expanduser() / relative, relative)


def _plan_copy(plan: OpenClawPlan, path: Path, target: Path, relative: str) -> None:
    if target.is_file() and target.read_bytes() == path.read_bytes():
        plan.report.add("workspace", str(path), str(target), "unchanged")
    elif target.exists() and not plan.options.overwrite:
        plan.report.add("workspace", str(path), str(target), "conflict",
                        "exists; kept (pass --overwrite to replace it; the OpenClaw copy "
                        "is archived)")  # fmt: skip
        plan.archive.append((path, f"workspace/{relative}"))
    else:
        plan.report.add("workspace", str(path), str(target),
                        "overwrite" if target.exists() else "write")  # fmt: skip
        plan.copies.append((path, target))


_BACKEND_KEYS = (("memory",), ("agents", "defaults", "memorySearch"), ("plugins", "slots"))


def _dig(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _masked(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: HIDDEN if looks_secret(k) and isinstance(v, str) else _masked(v)
                for k, v in data.items()}  # fmt: skip
    if isinstance(data, list):
        return [_masked(v) for v in data]
    return data


def _plan_settings(plan: OpenClawPlan) -> None:
    source, config = plan.source, plan.source.config
    if source.config_path is None:
        return
    backend = {".".join(k): v for k in _BACKEND_KEYS if (v := _dig(config, k)) is not None}
    if backend:
        text = json.dumps(_masked(backend), indent=2, ensure_ascii=False)
        plan.archive.append((text, "memory-backend.json"))
        plan.report.add("settings", str(source.config_path), "archive/memory-backend.json",
                        "archive", "OpenClaw memory backend settings, for manual review: "
                        "choose a memoryport provider with `memoryport setup`")  # fmt: skip
    if plan.options.preset != "full":
        return
    if config is None:
        plan.archive.append((source.config_path, source.config_path.name))
    else:
        text = json.dumps(_masked(config), indent=2, ensure_ascii=False)
        plan.archive.append((text, source.config_path.name))
    plan.report.add("settings", str(source.config_path), f"archive/{source.config_path.name}",
                    "archive", "secrets masked; not applied")  # fmt: skip


def _found_secrets(source: OpenClawSource) -> Iterator[tuple[str, str, str]]:
    """``(name, value, where)`` for every secret-like value the source holds."""
    config = source.config or {}
    where = str(source.config_path)
    env = config.get("env")
    if isinstance(env, dict):
        nested = env.get("vars")
        values: dict[str, Any] = nested if isinstance(nested, dict) else env
        for name, value in values.items():
            if isinstance(value, str):
                yield str(name), value, where
    providers = _dig(config, ("models", "providers"))
    if isinstance(providers, dict):
        for name, settings in providers.items():
            key = settings.get("apiKey") if isinstance(settings, dict) else None
            if isinstance(key, str):
                yield f"{str(name).upper().replace('-', '_')}_API_KEY", key, where
    for name, value in source.env_file.items():
        yield name, value, str(source.root / ".env")


def _plan_secrets(plan: OpenClawPlan) -> None:
    allowed = plan.options.preset == "full" and plan.options.migrate_secrets
    existing = read_env(plan.home) if allowed and plan.home.is_dir() else {}
    for name, value, where in _found_secrets(plan.source):
        if not (name in SECRET_ALLOWLIST or looks_secret(name)):
            continue
        target = str(plan.home / ".env")
        if not allowed:
            plan.report.add("secret", where, target, "skip",
                            f"{name}: secrets move only with --preset full --migrate-secrets")
        elif name not in SECRET_ALLOWLIST:
            plan.report.add("secret", where, target, "skip", f"{name}: not on the allowlist")
        elif value.startswith("${") or not value.strip():
            plan.report.add("secret", where, target, "skip", f"{name}: a reference, no value")
        elif name in plan.secrets or existing.get(name) == value:
            plan.report.add("secret", where, target, "unchanged", name)
        elif name in existing and not plan.options.overwrite:
            plan.report.add("secret", where, target, "conflict",
                            f"{name}: already set; kept (pass --overwrite to replace it)")
        else:
            plan.report.add("secret", where, target,
                            "overwrite" if name in existing else "write", name)  # fmt: skip
            plan.secrets[name] = value


def apply_openclaw(plan: OpenClawPlan) -> Report:
    """Carry out ``plan`` (see the module docstring); returns its report, ``applied``."""
    home, report = plan.home, plan.report
    ensure_home(home)
    if plan.options.backup:
        count = backup_home(home, plan.run_dir / "home-backup.zip")
        report.notes.append(
            f"Backed up {count} file(s) of the home first; undo the migration with "
            f"`memoryport migrate restore {plan.run_dir / 'home-backup.zip'}`."
        )
    report.counts["entries_added"] = apply_plans(home, plan.curated, SOURCE_LABEL)
    for source, target in plan.copies:
        _copy(source, target)
    if plan.secrets:
        write_env(home, plan.secrets)
    archive = plan.run_dir / "archive"
    written = write_archive(archive, plan.curated)
    for item, name in plan.archive:
        _archive_item(archive / name, item)
    if written or plan.archive:
        report.notes.append(f"Material not migrated is kept in {archive}.")
    report.applied = True
    _save_report(plan.run_dir, report)
    return report


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target, symlinks=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _archive_item(target: Path, item: Path | str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(item, str):
        target.write_text(item + "\n", "utf-8")
    else:
        _copy(item, target)


def _save_report(run_dir: Path, report: Report) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
    (run_dir / "report.json").write_text(text + "\n", "utf-8")


def cleanup_openclaw(
    source: Path | None = None, *, user_home: Path | None = None, dry_run: bool = False
) -> Report:
    """Rename leftover OpenClaw directories (``--source``, or every discovery root that
    exists) to ``<name>.pre-migration`` so no tool picks them up again. ``SourceNotFound``
    when there is none."""
    from memoryport.admin.migrate.openclaw_source import candidate_roots

    roots = [source.expanduser()] if source is not None else candidate_roots(user_home)
    present = [p for p in roots if p.is_dir()]
    if not present:
        raise SourceNotFound("OpenClaw", roots)
    report = Report("openclaw cleanup", ", ".join(map(str, present)), "", dry_run=dry_run)
    for path in present:
        target = path.with_name(path.name + ".pre-migration")
        number = 2
        while target.exists():
            target, number = path.with_name(f"{path.name}.pre-migration-{number}"), number + 1
        report.add("directory", str(path), str(target), "rename")
        if not dry_run:
            path.rename(target)
    report.applied = not dry_run
    return report
