"""The search page, timed in a real browser: last keystroke to results drawn, first load, its memory.

    python -m bench.ui [--files N] [--work DIR] [--queries 40]

A real `mdrag serve` over the bench corpus (the whole PowerShell reference, 56k sections, or N
files of it), a real `mdrag ui --no-browser` beside it, and Debian's headless Chromium typing
realistic queries (bench.query's: the notes' own example headings) into the page's box. The
page records, per search, the time from the last keystroke to its results drawn (its 60 ms
debounce included) and from the request to the drawing; the browser's navigation timing gives
the first load. The page's process is measured too: it is a client of the daemon and should hold
no model and no index.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from typing import Any

from bench import harness
from bench.browser import Browser, available
from bench.query import realistic_queries
from bench.session import Daemon


def measure(work: harness.Work, count: int) -> dict[str, Any]:
    """The page over the work dir's index, `count` realistic queries typed into it."""
    if not available():
        raise SystemExit("chromium and chromedriver are missing: `make browser-tool` installs them")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    queries = realistic_queries(work.notes, count)
    with Daemon(work) as daemon:
        page = subprocess.Popen(
            harness.mdrag("ui", "--no-browser"), env=work.env(), stdout=subprocess.PIPE, text=True
        )
        browser = None
        try:
            assert page.stdout is not None
            url = page.stdout.readline().split(": ", 1)[1].strip()
            browser = Browser()
            driver = browser.driver
            loads = []
            for _ in range(5):
                driver.get(url)  # the address as printed: the key is its first segment
                loads.append(
                    driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd")
                )
            box = driver.find_element(By.ID, "q")
            for query in queries:
                box.clear()
                box.send_keys(query)
                WebDriverWait(driver, 30, poll_frequency=0.02).until(_drawn(query))
                time.sleep(0.2)  # a person reads; the next query is not typed into a running one
            timings = [
                t for t in driver.execute_script("return window.mdragTimings") if t["query"] in queries
            ]
            from_key = [t["fromKey"] for t in timings]
            from_request = [t["fromRequest"] for t in timings if "fromRequest" in t]
            page_rss = harness.rss_mb(page.pid)
            return {
                "machine": harness.machine(),
                "sections": daemon.status()["sections"],
                "queries": len(from_key),
                "from_key_ms": harness.spread(from_key, 0),
                "from_key_p50_ms": round(statistics.median(from_key)),
                "from_request_p50_ms": round(statistics.median(from_request)) if from_request else None,
                "first_load_ms": harness.spread(loads, 0),
                "page_rss_mb": page_rss["VmRSS"],
                "daemon_rss_mb": daemon.rss()["VmRSS"],
            }
        finally:
            if browser is not None:
                browser.close()
            page.terminate()
            page.wait(10)


def _drawn(query: str) -> Any:
    """A wait condition: the page has drawn the results of `query`."""

    def condition(driver: Any) -> bool:
        return bool(driver.execute_script("return (window.mdragTimings.at(-1) || {}).query") == query)

    return condition


def summary(result: dict[str, Any]) -> str:
    return (
        f"the page over {result['sections']:,} sections, in headless Chromium: search p50 "
        f"{result['from_key_p50_ms']} ms from the last keystroke to results drawn (60 ms debounce "
        f"included; {result['from_request_p50_ms']} ms from the request), first load "
        f"{result['first_load_ms']['median']:.0f} ms; the page's process {result['page_rss_mb']:.0f} MB"
    )


def main() -> None:
    cli = harness.parser(__doc__)
    cli.add_argument("--queries", type=int, default=40, help="queries typed into the page")
    harness.figure_main("ui", cli, lambda work, args: measure(work, args.queries), summary)


if __name__ == "__main__":
    main()
