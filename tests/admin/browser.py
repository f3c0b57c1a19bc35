"""Playwright with Debian's chromium (no browser download), for the admin UI's page tests.

Screenshots land in ``test-artifacts/admin/`` for a person to look at. Outside CI a missing
chromium or playwright skips with the package to install; with ``CI=true`` it fails.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "admin"
WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}


def chromium_path() -> str:
    """Debian's chromium; skip (fail in CI) when it or the playwright package is missing."""
    missing = []
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing.append("the playwright package (pip install -e '.[dev]')")
    path = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if path is None:
        missing.append("chromium (apt-get install -y chromium)")
    if missing:
        reason = f"admin UI browser tests need {' and '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    assert path is not None
    return path


@contextmanager
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def page_at(browser: Browser, width: str = "desktop") -> Iterator[tuple[Page, list[str]]]:
    """A page of ``width`` and the console errors it logs (a CSP violation is one)."""
    w, h = WIDTHS[width]
    context = browser.new_context(viewport={"width": w, "height": h})
    page = context.new_page()
    errors: list[str] = []

    def on_console(message: Any) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page, errors
    finally:
        context.close()


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(target), full_page=True)
    return target


def overflows(page: Page) -> bool:
    """Whether the page is wider than the window (sideways scrolling of the whole page)."""
    return bool(page.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1"))
