"""Headless Chromium for the dashboard's browser tests: Debian's `chromium` driven through its
`chromium-driver`, both named by path so that Selenium Manager never runs (nothing downloads a
browser). Absent, the tests skip saying so; under CI=true absence is a failure."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.absent import linux_piece_absent

CHROMIUM = Path(os.environ.get("WEAVER_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("WEAVER_CHROMEDRIVER", "/usr/bin/chromedriver"))
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)


def missing_browser() -> str | None:
    """Why no browser can run here, or None when one can."""
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not binary.exists():
            return f"{binary} is missing: run .ci/install-browser (chromium, chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is missing: pip install -e '.[dev]'"
    return None


def require_browser() -> None:
    reason = missing_browser()
    if reason is None:
        return
    linux_piece_absent(f"the browser tests: {reason}")


def start_chromium(profile: Path):  # selenium's WebDriver (untyped)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    if profile.exists():
        shutil.rmtree(profile)
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    service = Service(executable_path=str(CHROMEDRIVER))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    return driver
