"""The history goals, measured: a year of nightly smoke runs (tests/scripts/year_of_runs.py)
imported with `gpubench history import`, `gpubench report` over it, the pages' sizes, and the
time each page takes to open in headless Chromium (navigation to the load event, the first
charts drawn). Prints one line per figure.

    python tests/scripts/history_benchmark.py WORK_DIR [RUNS]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))

from year_of_runs import generate  # noqa: E402


def timed(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpubench", *args], check=True, capture_output=True)
    return time.perf_counter() - started


def open_times(pages: list[Path]) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    times = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        browser.new_page().goto(pages[0].as_uri())  # the browser's own start-up, not the page's
        for page_path in pages:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            started = time.perf_counter()
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            times[page_path.name] = time.perf_counter() - started
            page.close()
        browser.close()
    return times


def main(work: Path, runs: int) -> None:
    files = generate(work / "runs", runs)
    store, site = work / "history.sqlite", work / "site"
    store.unlink(missing_ok=True)
    print(
        f"import of {len(files)} runs: {timed('history', 'import', '--store', str(store), *map(str, files)):.1f} s"
    )
    print(f"report: {timed('report', '--store', str(store), '-o', str(site)):.1f} s")
    pages = sorted(site.glob("*.html"))
    for page in pages:
        print(f"{page.name}: {page.stat().st_size / 1e6:.2f} MB")
    print(
        f"plotly.min.js (shared by the pages): {(site / 'plotly.min.js').stat().st_size / 1e6:.2f} MB"
    )
    for name, seconds in open_times(pages).items():
        print(f"{name} opens in {seconds:.2f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 365)
