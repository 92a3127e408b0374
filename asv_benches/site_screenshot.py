"""Screenshot one benchmark's graph page of the published asv site (``asv publish``) with headless
Chromium: the site is served over HTTP (its pages load their data by XHR, which ``file://`` URLs
refuse), the page is given time to draw, and the PNG is written to ``--out``.

asv's pages load jQuery, flot, bootstrap and three small plugins from CDNs, which a machine that
reaches only package registries cannot: the server hands out ``index.html`` with those addresses
pointing at local copies, fetched once from the npm registry (same versions, except stupidtable:
npm has 1.1.3 of the 1.0.1 asv names) into ``--vendor``.

    python asv_benches/site_screenshot.py micro.Cell.time_evaluate --out bench-cell.png
"""

from __future__ import annotations

import argparse
import http.server
import io
import json
import re
import shutil
import subprocess
import tarfile
import threading
import urllib.parse
import urllib.request
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
NPM = "https://registry.npmjs.org"
# a CDN file asv's index.html loads -> (npm package, version, path inside the package's tarball)
VENDORED = {
    "jquery-3.3.1.min.js": ("jquery", "3.3.1", "dist/jquery.min.js"),
    "jquery.flot.min.js": ("flot", "0.8.3", "jquery.flot.js"),
    "jquery.flot.time.min.js": ("flot", "0.8.3", "jquery.flot.time.js"),
    "jquery.flot.selection.min.js": ("flot", "0.8.3", "jquery.flot.selection.js"),
    "jquery.flot.categories.min.js": ("flot", "0.8.3", "jquery.flot.categories.js"),
    "jquery.flot.orderBars.js": ("flot-orderbars", "1.0.0", "js/jquery.flot.orderBars.js"),
    "stupidtable.min.js": ("stupid-table-plugin", "1.1.3", "stupidtable.min.js"),
    "md5.min.js": ("blueimp-md5", "2.19.0", "js/md5.min.js"),
    "bootstrap.min.js": ("bootstrap", "3.1.1", "dist/js/bootstrap.min.js"),
    "bootstrap.min.css": ("bootstrap", "3.1.1", "dist/css/bootstrap.min.css"),
}
CDN = re.compile(r'"https://[^"]*/([^"/]+\.(?:js|css))"')


def vendor(directory: Path) -> None:
    """Fetch every file of ``VENDORED`` missing from ``directory`` from its npm tarball."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, (package, version, member) in VENDORED.items():
        if (directory / name).exists():
            continue
        url = f"{NPM}/{package}/-/{package}-{version}.tgz"
        with urllib.request.urlopen(url, timeout=60) as response:
            packed = io.BytesIO(response.read())
        with tarfile.open(fileobj=packed, mode="r:gz") as archive:
            (directory / name).write_bytes(archive.extractfile(f"package/{member}").read())


def local_index(site: Path) -> bytes:
    """The site's index.html with every vendored CDN address replaced by ``vendor/<file>``, without
    the CDN files' integrity hashes (the unminified flot copies differ from the CDN's)."""
    html = re.sub(r' integrity="[^"]*"', "", (site / "index.html").read_text())
    return CDN.sub(lambda m: f'"vendor/{m[1]}"' if m[1] in VENDORED else m[0], html).encode()


def handler(site: Path, vendored: Path):
    index = local_index(site)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site), **kwargs)

        def translate_path(self, path):
            name = path.split("?")[0].removeprefix("/vendor/")
            return str(vendored / name) if name in VENDORED else super().translate_path(path)

        def do_GET(self):
            if self.path.split("?")[0] not in ("/", "/index.html"):
                return super().do_GET()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(index)))
            self.end_headers()
            self.wfile.write(index)

        def log_message(self, *args):
            pass

    return Handler


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # the browser closes connections it no longer needs


def browser() -> str:
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    raise SystemExit(f"no headless browser found (looked for {', '.join(BROWSERS)}); on Debian: "
                     "apt-get install chromium")  # fmt: skip


def graph_state(site: Path, benchmark: str, log: bool) -> str:
    """The graph page's address state drawing every parameter combination as its own line (asv
    draws the first two values of a parameter only, unless told)."""
    entry = json.loads((site / "index.json").read_text())["benchmarks"][benchmark]
    pairs = [
        (f"p-{name}", value)  # values as asv writes them: Python reprs
        for name, values in zip(entry["param_names"], entry["params"], strict=True)
        for value in values
    ]
    pairs += [("y-axis-scale", "log")] if log else []
    return f"{benchmark}?{urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)}"


def screenshot(site: Path, vendored: Path, state: str, out: Path, size: str) -> None:
    vendor(vendored)
    with QuietServer(("127.0.0.1", 0), handler(site, vendored)) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html#{state}"
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
    parser.add_argument("--vendor", type=Path, default=Path(".asv/vendor"))
    parser.add_argument("--size", default="1400,1000", help="window width,height in pixels")
    parser.add_argument("--log", action="store_true", help="logarithmic y axis")
    args = parser.parse_args()
    if not (args.site / "index.html").exists():
        raise SystemExit(f"{args.site}/index.html missing: run `asv publish` first")
    state = graph_state(args.site, args.benchmark, args.log)
    screenshot(args.site, args.vendor, state, args.out, args.size)


if __name__ == "__main__":
    main()
