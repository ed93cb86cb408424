"""Screenshots of the page's views for docs/screenshots/: `biorag serve` on the demo index,
driven by Playwright in Debian's Chromium.

    make demo   # builds .biorag/demo-index
    .venv/bin/python scripts/page_screenshots.py [--index DIR] [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

# as root, offline: no sandbox, and none of Chromium's background connections
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUESTION = (
    "Is there a role for leukocyte and CRP measurements in the diagnosis of acute appendicitis "
    "in the elderly?"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default=".biorag/demo-index")
    ap.add_argument("--out", default="docs/screenshots")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--datasets", default="../shared/data", help="for the runs view")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = tempfile.mkdtemp(prefix="biorag-shots-")
    env = {**os.environ, "BIORAG_PROGRESS": "0", "BIORAG_HOME": home}
    cmd = [sys.executable, "-m", "biorag.cli.main", "serve", "--index", args.index,
           "--port", str(port), "--method", "claims"]  # fmt: skip
    with_runs = Path(args.datasets, "pubmedqa", "ori_pqal.json").is_file()
    if with_runs:
        cmd += ["--datasets", args.datasets]
    proc = subprocess.Popen(cmd, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(base + "/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                print("the server did not come up", file=sys.stderr)
                return 1
            time.sleep(0.5)
        shoot(base, out, args.chromium, with_runs)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        shutil.rmtree(home, ignore_errors=True)
    return 0


def shoot_runs(page: Page, out: Path) -> None:
    """Two small PubMedQA runs (the demo index holds other questions' abstracts: floor scores),
    one opened, the two compared."""
    page.click("button[data-view=runs]")
    for name, method in (("pubmedqa-claims", "claims"), ("pubmedqa-rr", "retrieve-read")):
        page.fill("#runname", name)
        page.fill("#rundata", "pubmedqa/ori_pqal.json")
        page.fill("#runlimit", "10")
        page.select_option("#runmethods", [method])
        page.click("#newrun button[type=submit]")
        done = f"#runlist tr:has-text('{name}'):has-text('done')"
        page.wait_for_selector(done, timeout=600_000)
    page.locator("#runlist tr", has_text="pubmedqa-claims").locator("button").click()
    page.wait_for_selector("#rundetail:not([hidden])")
    page.select_option("#cmpa", "pubmedqa-claims")
    page.select_option("#cmpb", "pubmedqa-rr")
    page.click("#compare button[type=submit]")
    page.wait_for_selector("#cmpresult tr")
    page.screenshot(path=str(out / "runs.png"), full_page=True)


def shoot(base: str, out: Path, chromium: str, with_runs: bool) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=FLAGS)
        for name, size in (("laptop", {"width": 1280, "height": 900}),
                           ("phone", {"width": 390, "height": 844})):  # fmt: skip
            page = browser.new_page(viewport=size)
            page.goto(base + "/")
            page.fill("#question", QUESTION)
            page.fill("#options", "A: yes\nB: no\nC: maybe")
            page.click("#ask button[type=submit]")
            page.wait_for_selector("#answer:not([hidden])", timeout=300_000)
            if name == "laptop" and page.locator("#sentences button.cite").count():
                page.click("#sentences button.cite >> nth=0")
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(out / f"ask-{name}.png"), full_page=name == "laptop")
            if name == "phone":
                page.close()
                continue
            page.click("button[data-view=graph]")
            page.wait_for_selector("#cy canvas")
            page.wait_for_timeout(500)
            page.evaluate("window.biorag.cy.edges().length && biorag.cy.edges()[0].emit('tap')")
            page.screenshot(path=str(out / "graph.png"))
            page.click("button[data-view=documents]")
            page.wait_for_selector("#doclist tr")
            page.screenshot(path=str(out / "documents.png"))
            if with_runs:
                shoot_runs(page, out)
            page.click("button[data-view=settings]")
            page.wait_for_function("document.getElementById('config').textContent.length > 10")
            page.screenshot(path=str(out / "settings.png"))
            page.close()
        browser.close()
    print(f"screenshots in {out}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
