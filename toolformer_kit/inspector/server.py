"""The inspector's HTTP layer: a static page plus a few JSON endpoints, bound to 127.0.0.1 only.

Corpus text never goes into HTML on the server: every endpoint returns JSON, and the page puts
text into the DOM with ``textContent`` only, so a document holding ``<script>`` is shown, not run.
"""

from __future__ import annotations

import json
import logging
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlparse

from ..calls import ToolCall, find_calls, format_call
from .data import InspectData, finite_or_none, kept, kept_counts

log = logging.getLogger(__name__)
PAGE_SIZE = 50
LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


def loopback_host(host: str | None) -> bool:
    """The request names this machine: a DNS-rebinding page comes with its own name and is refused.

    >>> loopback_host("127.0.0.1:8765"), loopback_host("localhost"), loopback_host("evil.example:8765")
    (True, True, False)
    """
    host = (host or "").strip().lower()
    if host.startswith("["):
        name = host[: host.find("]") + 1]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name in LOOPBACK


def plain(obj):
    """``obj`` with NaN and infinities as None, so the answer is valid JSON for the browser.

    >>> plain({"a": [1.0, float("nan")], "b": float("inf")})
    {'a': [1.0, None], 'b': None}
    """
    if isinstance(obj, float):
        return obj if obj - obj == 0 else None
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


def segments(text: str) -> list[dict]:
    """Split text into plain and call pieces, for highlighting.

    >>> segments("a [Calculator(1 + 1) -> 2] b")
    [{'text': 'a ', 'call': False}, {'text': '[Calculator(1 + 1) -> 2]', 'call': True}, {'text': ' b', 'call': False}]
    """
    out, last = [], 0
    for p in find_calls(text):
        if p.start > last:
            out.append({"text": text[last:p.start], "call": False})
        out.append({"text": text[p.start:p.end], "call": True})
        last = p.end
    if last < len(text):
        out.append({"text": text[last:], "call": False})
    return out


def candidate_view(c: dict, documents: dict[str, str]) -> dict:
    """A candidate with its document cut around the call position."""
    text = documents.get(str(c.get("doc_id")))
    view = {k: v for k, v in c.items() if not k.startswith("_")} | {"key": c["_key"]}
    if text is None:
        return view | {"before": None, "call_text": None, "after": None}
    cut = max(0, min(int(c.get("char_offset") or 0), len(text)))
    try:
        call_text = format_call_safe(c)
    except ValueError:
        call_text = f" [{c['tool']}({c.get('input') or c.get('sample', '')})]"
    return view | {"before": text[:cut], "call_text": call_text, "after": text[cut:]}


def format_call_safe(c: dict) -> str:
    return format_call(ToolCall(c["tool"], c.get("input") or "", c.get("result")))


def _tau(q: dict) -> float | None:
    """The τf asked for; none (the page's start) means each candidate's stored decision."""
    if q.get("tau_f") in (None, ""):
        return None
    tau_f = finite_or_none(q["tau_f"])
    if tau_f is None:
        raise ValueError(f"tau_f must be a finite number, got {q.get('tau_f')!r}")
    return tau_f


def _filter_candidates(data: InspectData, q: dict) -> list[dict]:
    rows = data.candidates
    if q.get("tool"):
        rows = [c for c in rows if c["tool"] == q["tool"]]
    status, tau = q.get("status", "all"), _tau(q)
    if status == "kept":
        rows = [c for c in rows if kept(c, tau)]
    elif status == "rejected":
        rows = [c for c in rows if c.get("score") is not None and not kept(c, tau)]
    elif status == "unscored":
        rows = [c for c in rows if c.get("score") is None]
    if q.get("sort", "score") == "score":
        rows = sorted(rows, key=lambda c: -(c["score"] if c.get("score") is not None else float("-inf")))
    return rows


def api(data: InspectData, path: str, q: dict) -> object:
    """Answer one API request (pure, so tests need no server)."""
    offset = max(0, int(q.get("offset") or 0))
    limit = max(1, min(int(q.get("limit") or PAGE_SIZE), 500))  # a negative limit used to return everything
    if path == "/api/meta":
        return {"sources": data.sources, "tools": data.tools(), "candidates": len(data.candidates),
                "generations": len(data.generations), "documents": len(data.documents),
                "tasks": sorted({g["task"] for g in data.generations}), "tau_f": data.tau_f}
    if path == "/api/scores":
        scores: dict[str, list] = {}
        for c in data.candidates:
            scores.setdefault(c["tool"], []).append(c.get("score"))
        return scores
    if path == "/api/counts":
        return kept_counts(data.candidates, _tau(q))
    if path == "/api/candidates":
        rows = _filter_candidates(data, q)
        tau = _tau(q)
        return {"total": len(rows), "rows": [candidate_view(c, data.documents) | {"kept": kept(c, tau)}
                                             for c in rows[offset: offset + limit]]}
    if path == "/api/generations":
        rows = [g for g in data.generations if not q.get("task") or g["task"] == q["task"]]
        page = rows[offset: offset + limit]
        return {"total": len(rows), "rows": [g | {"segments": segments(g.get("output", ""))} for g in page]}
    raise KeyError(path)


class Handler(BaseHTTPRequestHandler):
    def __init__(self, *args, data: InspectData, **kwargs):
        self.data = data
        super().__init__(*args, **kwargs)

    def log_message(self, fmt, *args):  # route access logs to logging, not stderr
        log.debug(fmt, *args)

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server's name)
        if not loopback_host(self.headers.get("Host")):
            return self._send(403, b'{"error": "this server answers only to 127.0.0.1 or localhost"}',
                              "application/json")
        url = urlparse(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        static = {"/": ("page.html", "text/html; charset=utf-8"), "/app.js": ("app.js", "text/javascript"),
                  "/style.css": ("style.css", "text/css")}
        if url.path in static:
            name, ctype = static[url.path]
            return self._send(200, resources.files(__package__).joinpath(name).read_bytes(), ctype)
        try:
            body = api(self.data, url.path, q)
        except KeyError:
            return self._send(404, b'{"error": "not found"}', "application/json")
        except ValueError as exc:
            return self._send(400, json.dumps({"error": str(exc)}).encode(), "application/json")
        except Exception as exc:  # one bad row must answer an error, not drop the connection
            log.exception("inspector request %s failed", url.path)
            return self._send(500, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode(), "application/json")
        text = json.dumps(plain(body), ensure_ascii=False, default=str, allow_nan=False)
        self._send(200, text.encode("utf-8"), "application/json; charset=utf-8")


def serve(data: InspectData, port: int = 8765, background: bool = False) -> ThreadingHTTPServer:
    """Serve on 127.0.0.1 (never on other interfaces); port 0 picks a free one."""
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(Handler, data=data))
    if background:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
