"""Serve a local web page over annotation outputs and evaluation traces (127.0.0.1 only).

Shows every candidate call with L(ε), L(e(c, ε)), L⁺, its score and whether it was kept; the
document with the call highlighted at its position; a τf slider that recounts what a threshold
would keep; and generations with their calls highlighted.
"""

from __future__ import annotations

import argparse

from .cli import standalone

HELP = "browse annotation outputs and eval traces in a local web page"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folders", nargs="+", metavar="DIR",
                        help="--out folders of 'toolformer annotate' and/or 'toolformer eval'")
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0 = any free port)")


def run(args: argparse.Namespace) -> int:
    from ..inspector.data import load
    from ..inspector.server import serve

    from ..config import ConfigError

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port} is not a port; pass 1-65535, or 0 for any free port")
    data = load(args.folders)
    try:
        server = serve(data, args.port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc}); "
                          "pass another --port, or --port 0 for any free one") from None
    host, port = server.server_address[:2]
    print(f"inspecting {len(data.candidates)} candidate(s) and {len(data.generations)} generation(s)")
    print(f"open http://{host}:{port}/  (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


main = standalone("toolformer inspect", __doc__, add_arguments, run)
