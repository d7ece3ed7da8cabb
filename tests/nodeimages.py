"""The images tests load into real nodes, built by tools/images (cached after the first build).

- `test`: the web server and the curl client (`nginx:1.27`, `curlimages/curl:8.11.1`, built
  from Debian packages under the names the tests and examples use);
- `runtime`: the runtime image (`runtime_image()`), which also runs the tests' Python pods
  (`python -c SCRIPT`), the process pods of agent nodes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES_TOOL = ROOT / "tools" / "images" / "build.py"


def build(folder: Path, *images: str) -> list[Path]:
    """Build each of `images` (`test`, `runtime`) into `folder`; the archives' paths."""
    archives: list[Path] = []
    for image in images:
        printed = subprocess.run(
            [sys.executable, str(IMAGES_TOOL), image, "--out", str(folder)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        archives += [Path(line) for line in printed.split()]
    return archives
