"""Headless Debian Chromium driven by Selenium (chromium-driver), with the launch flags this
machine needs: no sandbox (root), no GPU, and no background networking (the network is closed)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Iterator

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1000")


def available() -> bool:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        return False
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return True


def start_browser(profile: Path | None = None) -> Iterator:
    """A Chrome WebDriver on a fresh profile; quit (and the profile removed) when the generator ends."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    own_profile = profile is None
    profile_dir = Path(tempfile.mkdtemp(prefix="qdmesh-chromium-")) if profile is None else profile
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile_dir}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        if own_profile:
            shutil.rmtree(profile_dir, ignore_errors=True)
