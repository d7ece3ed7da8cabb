"""The test images: every nginx and curl name the tests, examples and demo use, and they serve and fetch.

The slow tests build them (`tools/images/build.py test`, cached), import them into a
throwaway containerd, and run them with runc: curl, in nginx's network namespace,
fetches nginx's welcome page.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from playground.nodeagent.standins import WELCOME
from tests.tools.images.conftest import Containerd
from tests.tools.images.runc import Bundle, Container, is_root, missing_tools, unpack
from tools.images import testimages

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "tools" / "images" / "build.py"
#: where images are named: what the playground runs (tests, examples, the demo, the benchmarks, the docs)
SOURCES = ("tests", "examples", "bench", "playground", "docs")
REFERENCE = re.compile(
    r"""["'`]((?:docker\.io/)?(?:library/|curlimages/)?(?:nginx|curl)(?::[\w.-]+)?)["'`]"""
)
#: names that are not images anything runs: a changed image in a forge unit test
NOT_RUN = {"nginx:2"}


def _normalised(reference: str) -> str:
    """The name containerd's CRI gives a reference: docker.io and library/ filled in, :latest by default."""
    name = reference
    if "/" not in name.split(":")[0]:
        name = f"library/{name}"
    if not name.startswith("docker.io/"):
        name = f"docker.io/{name}"
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _references() -> set[str]:
    found: set[str] = set()
    for source in SOURCES:
        for path in (ROOT / source).rglob("*"):
            if (
                path.is_file()
                and path.suffix in {".py", ".tf", ".yaml", ".md"}
                and path.name != "test_test_images.py"
            ):
                found.update(match.group(1) for match in REFERENCE.finditer(path.read_text()))
    # a bare "curl" is a command, not the image
    return {reference for reference in found if "nginx" in reference or "curlimages/" in reference} - NOT_RUN


def test_the_test_images_carry_every_name_the_repository_runs() -> None:
    carried = {name for image in testimages.IMAGES for name in image.names}
    references = _references()
    assert {"nginx", "nginx:1.27", "curlimages/curl:8.11.1"} <= references
    assert {_normalised(reference) for reference in references} <= carried


def test_nginx_serves_the_welcome_page_of_the_playgrounds_stand_in() -> None:
    assert testimages.welcome_page() == WELCOME


def test_the_accounts_are_root_the_images_own_and_nobody() -> None:
    passwd, group = testimages.accounts_files((("nginx", 101, 101),))
    assert passwd.splitlines() == [
        "root:x:0:0:root:/root:/bin/sh",
        "nginx:x:101:101:nginx:/nonexistent:/usr/sbin/nologin",
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
    ]
    assert group.splitlines() == ["root:x:0:", "nginx:x:101:", "nogroup:x:65534:"]


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("mmdebstrap") is None:
        pytest.skip(
            "no mmdebstrap on PATH: the test images are built from Debian packages (make image installs it)"
        )
    if not is_root():
        pytest.skip("mmdebstrap runs as root here")
    out = tmp_path_factory.mktemp("test-images")
    completed = subprocess.run(
        [sys.executable, str(BUILD), "test", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return {Path(line).name: Path(line) for line in completed.stdout.splitlines()}


@pytest.mark.slow
def test_the_archives_import_into_containerd_under_every_name(
    archives: dict[str, Path], containerd: Containerd
) -> None:
    assert sorted(archives) == ["curl.tar", "nginx.tar"]
    for archive in archives.values():
        containerd.ctr("images", "import", str(archive))
    assert containerd.image_names() == {name for image in testimages.IMAGES for name in image.names}


@pytest.mark.slow
def test_curl_fetches_the_welcome_page_nginx_serves(archives: dict[str, Path], tmp_path: Path) -> None:
    if missing_tools():
        pytest.skip(f"no {', '.join(missing_tools())} on PATH (Debian: apt-get install umoci runc)")
    nginx = unpack(archives["nginx.tar"], testimages.NGINX.names[0], tmp_path / "nginx")
    curl = unpack(archives["curl.tar"], testimages.CURL.names[0], tmp_path / "curl")
    assert curl.config["process"]["args"] == ["curl", "--help"]
    assert (curl.config["process"]["user"]["uid"], nginx.config["process"]["user"]["uid"]) == (100, 0)
    with nginx.prepared(Container(args=nginx.config["process"]["args"]), tmp_path) as command:
        server = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        try:
            fetched = _fetch_until_served(curl, server, tmp_path, command[-1])
        finally:
            server.terminate()
            server.wait(timeout=30)
        log = (server.stdout.read() if server.stdout else b"").decode()
    assert fetched.stdout == WELCOME
    assert '"GET / HTTP/1.1" 200' in log and "curl/" in log


def _fetch_until_served(
    curl: Bundle, server: subprocess.Popen[bytes], work: Path, name: str
) -> subprocess.CompletedProcess[str]:
    """curl http://127.0.0.1/ in the server container's network namespace, until nginx answers (30 s at most)."""
    state = work / "runc-state"
    deadline = time.monotonic() + 30
    while True:
        assert server.poll() is None, "nginx exited"
        pid = _pid(state, name)
        if pid:
            client = Container(
                args=["curl", "-s", "--max-time", "5", "http://127.0.0.1/"], network=f"/proc/{pid}/ns/net"
            )
            fetched = curl.run(client, work)
            if fetched.returncode == 0:
                return fetched
        assert time.monotonic() < deadline, "nginx did not answer in 30 s"
        time.sleep(0.2)


def _pid(state: Path, name: str) -> int:
    completed = subprocess.run(
        ["runc", "--root", str(state), "state", name], capture_output=True, text=True, check=False
    )
    match = re.search(r'"pid":\s*(\d+)', completed.stdout)
    return int(match.group(1)) if match and '"running"' in completed.stdout else 0
