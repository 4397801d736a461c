"""``rodlab view DIR [--port P] [--no-browser] [--html FILE] [--radius R] [--max-mb M]``: the run in
``DIR`` in a web page (docs/viewer.md).

With ``--html FILE`` the self-contained page is written to ``FILE`` and the command returns (open
the file in any browser; no server, no network). Otherwise the page is served from memory on
``http://127.0.0.1:P/`` (``P`` = 0 picks a free port) until Ctrl-C, and opened in the default
browser unless ``--no-browser``.
"""
from __future__ import annotations

import argparse
import math
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .page import DEFAULT_MAX_MB, page_data, page_html, write_html
from .three import ViewerError


def _check(args) -> None:
    if not 0 <= args.port <= 65535:
        raise ViewerError(f"port must be in [0, 65535] (got {args.port}); 0 picks a free port")
    if args.radius is not None and not (math.isfinite(args.radius) and args.radius > 0):
        raise ViewerError(f"radius must be a finite number > 0 m (got {args.radius})")
    if not (math.isfinite(args.max_mb) and args.max_mb > 0):
        raise ViewerError(f"max-mb must be a finite number > 0 MB (got {args.max_mb})")


def make_server(html: str, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """An HTTP server (not yet serving) that answers ``GET /`` and ``/index.html`` with ``html``
    and 404 to anything else; bound to ``host:port`` (``port`` 0: a free one)."""
    body = html.encode("utf-8")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] not in ("/", "/index.html"):
                self.send_error(404, "rodlab view serves one page: /")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # keep the terminal quiet
            pass

    try:
        return ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        raise ViewerError(f"port {port}: cannot listen on {host}:{port} ({exc.strerror}); choose another --port "
                          "or 0 for a free one") from None


def cmd_view(args) -> int:
    _check(args)
    if args.html:
        path = write_html(args.run_dir, args.html, radius=args.radius, max_mb=args.max_mb)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB): open it in a browser (works offline)")
        return 0
    data = page_data(args.run_dir, radius=args.radius, max_mb=args.max_mb)
    for note in data["notes"]:
        print(f"  note: {note}")
    server = make_server(page_html(data), args.port)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"rodlab view: serving {args.run_dir} at {url} (Ctrl-C stops)", flush=True)
    if not args.no_browser:
        import webbrowser

        threading.Timer(0.3, webbrowser.open, args=(url,)).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("rodlab view: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0


def add_subcommand(subparsers) -> None:
    """Register ``rodlab view`` on the CLI's subparsers."""
    p = subparsers.add_parser("view", help="the run in a local web page: rods as tubes, obstacles, time slider, "
                                           "metrics (docs/viewer.md)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a folder written by rodlab run --out (trajectory.npz, metrics.json)")
    p.add_argument("--port", type=int, default=8765, help="local port to serve on (default 8765; 0: a free one)")
    p.add_argument("--no-browser", action="store_true", help="serve without opening a browser")
    p.add_argument("--html", metavar="FILE", help="write the self-contained page to FILE and exit (no server)")
    p.add_argument("--radius", type=float, help="tube radius [m] instead of the run's (default: the run's, else 0.001)")
    p.add_argument("--max-mb", type=float, default=DEFAULT_MAX_MB,
                   help=f"size limit of the positions in the page [MB] (default {DEFAULT_MAX_MB:g}); "
                        "above it frames and vertices are decimated")
    p.set_defaults(fn=cmd_view)
