"""`python -m tools.release dist|mirror`: the provider's release files, and a mirror of them.

    python -m tools.release dist [--out DIR]      the release files for this machine's platform into DIR (dist/)
    python -m tools.release mirror [--dir DIR]    a filesystem mirror of them and its CLI configuration

Both build the executable first when its cache has no build of this checkout (tools/release/executable.py).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from . import ROOT, executable, mirror


def dist(out: Path) -> list[Path]:
    """Copy this checkout's release files into `out`; their paths there."""
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(path for path in executable.build().iterdir() if path.name != executable.RECORD)
    return [Path(shutil.copyfile(path, out / path.name)) for path in files]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.release", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dist_parser = commands.add_parser("dist", help="the release files into a folder")
    dist_parser.add_argument("--out", type=Path, default=ROOT / "dist", help="default: %(default)s")
    mirror_parser = commands.add_parser("mirror", help="a filesystem mirror of the release")
    mirror_parser.add_argument("--dir", type=Path, default=mirror.default_dir(), help="default: %(default)s")
    args = parser.parse_args(argv)
    try:
        if args.command == "dist":
            for path in dist(args.out):
                print(path)
        else:
            config = mirror.of_checkout(args.dir)
            print(f"provider mirror: {config.parent}")
            print(f"CLI configuration: export TF_CLI_CONFIG_FILE={config}")
    except executable.BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
