"""``rodlab view``: a run folder in a web page (docs/viewer.md).

One self-contained HTML file per run: three.js (vendored, MIT, ``static/three/``) and the frames
(base64 float32) inlined, so the page opens from ``file://`` with no server and no network, and
can be attached to a bug report. :func:`write_html` writes it; ``rodlab view DIR`` serves it on
``127.0.0.1`` and opens a browser (:mod:`.cli`).
"""
from .page import DEFAULT_MAX_MB, decimate, obstacles_of, page_data, page_html, write_html
from .three import THREE_VERSION, ViewerError, three_script

__all__ = ["DEFAULT_MAX_MB", "THREE_VERSION", "ViewerError", "decimate", "obstacles_of", "page_data", "page_html",
           "three_script", "write_html"]
