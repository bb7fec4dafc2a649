"""A real headless Chromium (Debian's, through chromedriver) driven by selenium: page tests, bench.ui."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Chromium as root in a container: no sandbox, no GPU, and nothing that reaches the network.
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
    "--window-size=1200,900",
)


def available() -> bool:
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


class Browser:
    """One Chromium with a fresh profile; `driver` is selenium's WebDriver."""

    def __init__(self, javascript: bool = True) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="mdrag-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        if not javascript:
            options.add_experimental_option(
                "prefs", {"profile.managed_default_content_settings.javascript": 2}
            )
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(30)

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)
