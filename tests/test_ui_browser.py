"""``memoryport ui`` in a real browser: Playwright for Python driving Debian's chromium
(``/usr/bin/chromium``, installed by ``make test``; no browser is ever downloaded) against
a real uvicorn server on 127.0.0.1 over a seeded home. One browser for the module.

Screenshots of the main pages are written to ``docs/img/`` (shown in ``docs/ui.md``) when
missing, or always with ``MEMORYPORT_UPDATE_SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from memoryport.admin import audit
from memoryport.admin.curated import open_curated
from memoryport.admin.pause import resume
from memoryport.ui import create_app
from test_ui_support import seed_home, serve

CHROMIUM = Path("/usr/bin/chromium")
IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), "Debian's chromium is needed: run `make system-deps`"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                              args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict[str, str]]]:
    home = tmp_path_factory.mktemp("browser") / "home"
    ids = seed_home(home)
    with serve(create_app(home)) as url:
        yield url, home, ids


@pytest.fixture()
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 820})
    opened = context.new_page()
    opened.set_default_timeout(10_000)
    dialogs: list[str] = []
    opened.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    yield opened
    assert dialogs == [], f"a stored payload ran: {dialogs}"
    assert opened.evaluate("typeof window.__xss") == "undefined"
    context.close()


def _shot(page: Page, name: str) -> None:
    """Screenshot the page into docs/img/ when that image is missing or
    MEMORYPORT_UPDATE_SCREENSHOTS=1 (pages show times and temporary paths, so a routine
    run must not rewrite the committed images); else into a temporary directory."""
    target = IMG / f"ui-{name}.png"
    if target.exists() and os.environ.get("MEMORYPORT_UPDATE_SCREENSHOTS") != "1":
        target = Path(tempfile.gettempdir()) / "memoryport-ui-shots" / target.name
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target), full_page=False)
    assert target.stat().st_size > 10_000


def test_add_edit_remove_and_restore_an_entry(page: Page,
                                              site: tuple[str, Path, dict[str, str]]) -> None:
    url, home, _ = site
    page.goto(f"{url}/memory")
    memory = page.locator("#target-memory")
    memory.locator("form.add textarea").fill("Prefers metric units")
    memory.locator("form.add button").click()
    expect(page.locator("#flash")).to_have_text("Entry added.")
    card = page.locator("article.entry", has_text="Prefers metric units")
    card.locator("summary").click()
    card.locator("textarea").fill("Prefers metric units and 24h time")
    card.locator("form.edit button").click()
    expect(page.locator("article.entry", has_text="24h time")).to_have_count(1)
    _shot(page, "memory")
    page.locator("article.entry", has_text="24h time").locator("form.remove button").click()
    expect(page.locator("article.entry", has_text="24h time")).to_have_count(0)
    assert "Prefers metric units and 24h time" not in open_curated(home).entries("memory")
    page.locator("article.entry", has_text="Editor: Helix").locator("a",
                                                                    has_text="history").click()
    expect(page.locator("tr.revision")).to_have_count(1)  # the entry's own history
    page.goto(f"{url}/memory/history?target=memory")
    page.locator("tr.revision a").first.click()  # the newest: the remove
    expect(page.locator("pre.diff")).to_contain_text("24h time")
    _shot(page, "revision")
    page.locator("#restore-before").click()
    expect(page.locator("#flash")).to_contain_text("restored memory:")
    expect(page.locator("article.entry", has_text="24h time")).to_have_count(1)


def test_search_sessions_as_you_type_with_highlights(page: Page,
                                                     site: tuple[str, Path, dict[str, str]]
                                                     ) -> None:
    url = site[0]
    page.goto(f"{url}/sessions")
    expect(page.locator("tr.session-row")).to_have_count(2)
    page.locator("#q").press_sequentially("trains", delay=20)
    expect(page.locator("li.hit mark").first).to_have_text("trains")
    expect(page.locator("li.hit")).to_have_count(1)
    _shot(page, "sessions")


def test_forget_a_message_after_confirming(page: Page,
                                           site: tuple[str, Path, dict[str, str]]) -> None:
    url, _, ids = site
    page.goto(f"{url}/sessions/{ids['parent']}")
    _shot(page, "session")
    message = page.locator("article.message", has_text="I live in Lisbon")
    message.locator("a.forget").click()
    expect(page.locator("main")).to_contain_text("cannot be undone")
    page.locator("#confirm-forget").click()
    expect(page.locator("#flash")).to_contain_text("forgot 1 message")
    expect(page.locator("article.message", has_text="I live in Lisbon")).to_have_count(0)


def test_pause_and_resume(page: Page, site: tuple[str, Path, dict[str, str]]) -> None:
    url, home, _ = site
    try:
        page.goto(f"{url}/pause")
        page.locator("#pause-recall").check()
        page.locator("#pause-apply").click()
        expect(page.locator("#pause-banner")).to_contain_text("memory writes")
        _shot(page, "pause")
        page.goto(f"{url}/memory")
        memory = page.locator("#target-memory")
        memory.locator("form.add textarea").fill("written while paused")
        memory.locator("form.add button").click()
        expect(page.locator("#error")).to_contain_text("Memory writes are paused")
        page.goto(f"{url}/pause")
        page.locator("#resume").click()
        expect(page.locator("#pause-banner")).to_have_count(0)
        expect(page.locator("#pause-state")).to_contain_text("Memory is live")
    finally:
        resume(home)
    assert "written while paused" not in open_curated(home).entries("memory")


def test_audit_log_view(page: Page, site: tuple[str, Path, dict[str, str]]) -> None:
    url, home = site[0], site[1]
    page.goto(f"{url}/memory")
    page.goto(f"{url}/audit?shell=ui")
    expect(page.locator("tr.event").first).to_be_visible()
    expect(page.locator("tr.event", has_text="memory.list").first).to_be_visible()
    page.goto(f"{url}/audit")
    _shot(page, "audit")
    assert audit.events(home, action="memory.list")


def test_stored_payloads_render_as_text(page: Page,
                                        site: tuple[str, Path, dict[str, str]]) -> None:
    url, _, ids = site
    page.goto(f"{url}/memory")
    expect(page.locator("#target-user article.entry pre")).to_contain_text(
        "<script>window.__xss = 'entry'</script>")
    page.goto(f"{url}/sessions")
    expect(page.locator("tr.session-row a", has_text="Trip planning")).to_contain_text(
        "<img src=x onerror=")
    page.goto(f"{url}/sessions/{ids['parent']}")
    expect(page.locator("article.message").first).to_contain_text(
        "<script>window.__xss='message'</script>")
    page.goto(f"{url}/sessions?q=helix")
    expect(page.locator("li.hit").first).to_be_visible()
    page.goto(f"{url}/facts")
    _shot(page, "facts")


def test_a_write_without_the_csrf_token_is_refused(page: Page,
                                                   site: tuple[str, Path, dict[str, str]]
                                                   ) -> None:
    url, home, _ = site
    page.goto(f"{url}/memory")
    status = page.evaluate("""async () => {
        const body = new URLSearchParams({op: "add", target: "memory", content: "forged"});
        return (await fetch("/memory", {method: "POST", body})).status;
    }""")
    assert status == 403
    assert "forged" not in open_curated(home).entries("memory")


def test_a_token_protected_server_needs_the_token(browser: Browser, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with serve(create_app(home, token="open-sesame")) as url:
        context = browser.new_context()
        page = context.new_page()
        assert page.goto(f"{url}/memory").status == 401  # type: ignore[union-attr]
        assert page.goto(f"{url}/memory?token=open-sesame").status == 200  # type: ignore[union-attr]
        assert page.goto(f"{url}/sessions").status == 200  # type: ignore[union-attr]
        context.close()
