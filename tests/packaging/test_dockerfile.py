"""The Dockerfile builds what `make image` builds: the same lists, user, entry point, bytecode and paths.

No Docker engine runs here, so the Dockerfile is read, not built: each fact of the
recipe in tools/images/runtimeimage.py must be in it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from runtime.api.image import ENTRYPOINT
from tools.images import debian, runtimeimage

ROOT = Path(__file__).resolve().parents[2]


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    instructions = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            instructions.append((keyword.upper(), " ".join(rest.split())))
    return instructions


def _final_stage() -> list[tuple[str, str]]:
    instructions = _instructions()
    last_from = max(index for index, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_both_start_from_the_same_debian_suite() -> None:
    bases = [args for keyword, args in _instructions() if keyword == "FROM"]
    assert bases and all(base.split()[0] == f"debian:{debian.SUITE}-slim" for base in bases)


def test_the_debian_packages_and_dpkg_exclusions_come_from_the_recipes_lists() -> None:
    final = _final_stage()
    copies = [args for keyword, args in final if keyword == "COPY"]
    assert f"{_relative(runtimeimage.DPKG_CONFIG)} /etc/dpkg/dpkg.cfg.d/liqo-runtime" in copies
    assert f"{_relative(runtimeimage.DEBIAN_PACKAGES)} /tmp/debian-packages.txt" in copies
    runs = " ".join(args for keyword, args in final if keyword == "RUN")
    assert "apt-get install -y --no-install-recommends $(sed 's/#.*//' /tmp/debian-packages.txt)" in runs
    # the list the Dockerfile's sed reads is the one the recipe reads
    assert runtimeimage.bootstrap_spec().packages == debian.read_list(runtimeimage.DEBIAN_PACKAGES)


def test_the_wheels_are_the_pinned_ones_and_the_runtimes_own() -> None:
    runs = " ".join(args for keyword, args in _instructions() if keyword == "RUN")
    assert (
        f"--require-hashes --only-binary=:all: --target /site -r {_relative(runtimeimage.REQUIREMENTS)}"
        in runs
    )
    assert "python3 tools/dist.py runtime --out /wheels" in runs
    copies = [args for keyword, args in _final_stage() if keyword == "COPY"]
    assert f"--from=wheels /site /{runtimeimage.SITE_PACKAGES}" in copies


def test_the_bytecode_user_environment_and_entry_point_are_the_recipes() -> None:
    final = _final_stage()
    runs = " ".join(args for keyword, args in final if keyword == "RUN")
    compile_command = "python3 -m compileall -q -f --invalidation-mode unchecked-hash " + " ".join(
        runtimeimage.PYTHON_PATHS
    )
    assert compile_command in runs
    uid = runtimeimage.UID
    home = f"/home/{runtimeimage.USER_NAME}"
    assert f"{runtimeimage.USER_NAME}:x:{uid}:{uid}:{runtimeimage.USER_NAME}:{home}:/usr/sbin/nologin" in runs
    assert ("USER", f"{uid}:{uid}") in final
    assert ("ENTRYPOINT", json.dumps(list(ENTRYPOINT))) in final
    assert ("CMD", '["--help"]') in final
    env = dict(item.split("=", 1) for keyword, args in final if keyword == "ENV" for item in args.split())
    assert {f"{key}={value}" for key, value in env.items()} == set(runtimeimage.ENV) - {
        entry for entry in runtimeimage.ENV if entry.startswith("PATH=")
    }


def test_the_build_context_lets_in_what_the_dockerfile_copies() -> None:
    allowed = {
        line[1:].rstrip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    for keyword, args in _instructions():
        if keyword == "COPY" and not args.startswith("--from"):
            source = args.split()[0].rstrip("/")
            assert any(source == path or source.startswith(f"{path}/") for path in allowed), source
