"""Benchmark: the participant page in a real Chromium on the 963 KB changelog with 1,000 versions.

Run::

    .venv/bin/python -m tests.bench.web_page [--versions 1000] [--commits 20]

The changelog gets ``--versions`` one-line versions (as
:mod:`tests.bench.old_versions` builds them), a real room serves it, and
headless Chromium (Debian's, :func:`tests.chromium.ensure_chromium`) opens
an invitation link (``ce invite --link``'s form). Measured in the page
(``performance.now()``, from the navigation's start, after the next
animation frame):

- **first screen**: the link opened, the invitation redeemed, the document
  shown with its line numbers (target ≤ 1 s);
- **new version**: ``--commits`` one-line writes through the owner port,
  one at a time; for each, the wall-clock time from its ``version.committed``
  event reaching another client (a thread of this bench following
  ``/workspace/observe``) to the page showing that version (target ≤ 200
  ms): the page's own event delivery, its read of the changed lines and
  the redraw.

Informational: no anchor runs beside it (the console's row is its neighbour).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.load import percentiles  # noqa: E402
from tests.bench.old_versions import build  # noqa: E402
from tests.roomproc import start_room  # noqa: E402

#: Recorded by the page's document when it shows a version: ``window.__shown[n] = [perf ms, epoch ms]``.
PROBE = """
window.__shown = {};
new MutationObserver(() => {
  const n = document.body && document.body.dataset.version;
  if (n && !(n in window.__shown)) requestAnimationFrame(() => { window.__shown[n] = [performance.now(), Date.now()]; });
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-version"]});
"""


def _wait(page: Any, expression: str, timeout: float) -> None:
    """Poll ``expression`` in the page until truthy (``wait_for_function`` evaluates a string, which the
    page's CSP forbids; an evaluation from the driver is not the page's)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expression} never became true")
        time.sleep(0.005)


def _follow(room: Any) -> dict[int, float]:
    """``{version: epoch ms its version.committed event reached this process}``, filled by a thread."""
    import httpx

    watcher = room.join("watcher", "read,observe")
    arrivals: dict[int, float] = {}

    def run() -> None:
        with httpx.stream("GET", room.ingress + "/workspace/observe", timeout=None,
                          headers={"Authorization": f"Bearer {watcher.token}"}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:") and '"version.committed"' in line:
                    event = json.loads(line[5:])
                    arrivals[event["payload"]["version"]] = time.time() * 1000

    threading.Thread(target=run, daemon=True).start()
    time.sleep(0.5)
    return arrivals


def measure(versions: int = 1000, commits: int = 20) -> dict[str, Any]:
    """``{"first_screen_ms", "new_version": percentiles (s), "versions", "lines"}`` (see the module docstring)."""
    from playwright.sync_api import sync_playwright

    from commonroom import invitation
    from tests.chromium import ARGS, ensure_chromium

    os.environ.setdefault("COMMONROOM_RATE_LIMIT", "100000000")
    folder = Path(tempfile.mkdtemp(prefix="cr-web-page-"))
    try:
        doc = build(folder, versions)
        room = start_room(folder, name=doc.name)
        try:
            operator = room.operator()
            arrivals = _follow(room)
            url = invitation.page_link(room.invite("reader", "read,observe,propose,message"))
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(ensure_chromium()), args=ARGS)
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 900})
                    page.add_init_script(PROBE)
                    page.goto(url)
                    _wait(page, f"!!(window.__shown && window.__shown['{versions}'])", 30)
                    first = page.evaluate(f"window.__shown['{versions}'][0]")
                    lines = page.evaluate("document.querySelectorAll('#doc-text .ln').length")
                    page.wait_for_selector("#live.good")
                    # the headings' first outline (seconds for 1 MB, once: every chunk parsed) before the commits
                    _wait(page, "document.querySelector('#doc-text .ln.heading') !== null", 60)
                    time.sleep(0.5)
                    samples = []
                    for i in range(commits):
                        head = versions + i
                        k = 1 + (i * 104729) % lines
                        answer = operator.request("PUT", "/workspace/document", json={
                            "expected_version": head, "text": f"page bench line {k}, commit {i}\n",
                            "region": {"lines": [k, k]}})
                        assert answer.status_code == 200, answer.text
                        _wait(page, f"!!window.__shown['{head + 1}']", 10)
                        shown = page.evaluate(f"window.__shown['{head + 1}'][1]")
                        deadline = time.monotonic() + 10
                        while head + 1 not in arrivals and time.monotonic() < deadline:
                            time.sleep(0.01)
                        samples.append(max(shown - arrivals[head + 1], 0.0) / 1000)
                        time.sleep(0.3)
                finally:
                    browser.close()
        finally:
            room.stop()
        return {"first_screen_ms": first, "new_version": percentiles(samples), "versions": versions,
                "lines": lines, "commits": commits, "samples_ms": sorted(round(x * 1000) for x in samples)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """Command line: print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=20)
    args = parser.parse_args()
    r = measure(args.versions, args.commits)
    f = r["new_version"]
    print(f"first screen {r['first_screen_ms']:.0f} ms ({r['lines']:,} lines, {r['versions']:,} versions); "
          f"new version: p50 {f['p50']:.0f} ms, p99 {f['p99']:.0f} ms, max {f['max']:.0f} ms ({r['commits']} commits)")
    print(f"each new version, ms: {r['samples_ms']}")


if __name__ == "__main__":
    main()
