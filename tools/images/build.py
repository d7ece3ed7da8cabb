"""Build the container images real playground nodes run, without Docker or a registry.

    python3 tools/images/build.py pause --out DIR
    python3 tools/images/build.py coredns --binary PATH --out DIR

prints the path of each archive written into DIR (an OCI image layout in a tar, named
inside as the image it is). See tools/images/cli.py for the options and docs/images.md
for what each image holds.

Standard library only: it runs before any virtual environment exists.
"""

import sys
from pathlib import Path

# the repository root, so that the builder's modules import as `tools.images.*` from a plain `python3`
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.images.cli import main

if __name__ == "__main__":
    sys.exit(main())
