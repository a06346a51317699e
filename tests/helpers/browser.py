"""Headless Debian chromium through Selenium, for the report browser tests (skips only where no
browser can be had, saying why)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


def _find(*names: str) -> str | None:
    return next((p for n in names if (p := shutil.which(n))), None)


def open_report(driver: Any, url: str, timeout: float = 120.0) -> None:
    """Load ``url`` and wait until the sample browser has rendered its list."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return document.body.dataset.tmReady"))


def wait_for(driver: Any, css: str, timeout: float = 30.0) -> Any:
    """The first element matching ``css`` once it exists (what a hash link opens is rendered by
    the page's ``hashchange`` handler, after the click has returned)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: (d.find_elements("css selector", css) or [None])[0])


@contextmanager
def chromium(width: int = 1280, height: int = 1000) -> Iterator[Any]:
    """A headless chromium WebDriver (never downloads a driver: Debian's chromium-driver only)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (dev group)")
    from selenium.webdriver.chrome.service import Service

    browser = _find("chromium", "chromium-browser", "google-chrome")
    driver_path = _find("chromedriver", "chromium-driver")
    if browser is None or driver_path is None:
        pytest.skip("no chromium/chromedriver on PATH: apt-get install chromium chromium-driver")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--no-first-run",
                f"--window-size={width},{height}"):  # fmt: skip
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
