"""Screenshot one benchmark's graph page of the published asv site (``asv publish``) with headless
Chromium: the site is served over HTTP (its pages load their data by XHR, which ``file://`` URLs
refuse), the page is given time to draw, and the PNG is written to ``--out``.

    python asv_benches/site_screenshot.py micro.Cell.time_evaluate --out bench-cell.png
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import subprocess
import threading
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str:
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    raise SystemExit(f"no headless browser found (looked for {', '.join(BROWSERS)}); on Debian: "
                     "apt-get install chromium")  # fmt: skip


def screenshot(site: Path, benchmark: str, out: Path, size: str = "1400,1000") -> None:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html#{benchmark}"
        subprocess.run(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--window-size={size}", "--virtual-time-budget=15000",
             f"--screenshot={out.resolve()}", url],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        server.shutdown()
    print(f"{url} -> {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("benchmark", help="e.g. micro.Cell.time_evaluate")
    parser.add_argument("--site", type=Path, default=Path(".asv/html"))
    parser.add_argument("--out", type=Path, default=Path("bench-graph.png"))
    parser.add_argument("--size", default="1400,1000", help="window width,height in pixels")
    args = parser.parse_args()
    if not (args.site / "index.html").exists():
        raise SystemExit(f"{args.site}/index.html missing: run `asv publish` first")
    screenshot(args.site, args.benchmark, args.out, args.size)


if __name__ == "__main__":
    main()
