"""The runtime image, `ghcr.io/liqo-iac/runtime:<version>`: Debian bookworm, python3, the fabric's tools, the runtime.

The base is bookworm's Essential packages (mmdebstrap's `essential` variant: what every
Debian system has, a shell and coreutils included) rather than `minbase`, which adds the
`required` ones (apt, passwd, tzdata, e2fsprogs, mount: about 20 MB nothing in the
runtime uses) and would put the image over its 150 MB target. What goes in is listed once, in packaging/runtime/, and read by this recipe and by the
Dockerfile alike: the Debian packages (`debian-packages.txt`: python3 and what the
gateway and the fabric agent execute, `ip`, `nft`, `wg`, `wireguard-go`), what dpkg
leaves out (`dpkg-excludes.cfg`), and the Python packages pinned with their hashes
(`requirements.txt`, cp311 manylinux wheels from PyPI), plus the runtime's own wheel
(tools/dist.py). The wheels are installed by this machine's pip for the image's platform
(`--target` the image's /usr/local/lib/python3.11/dist-packages, nothing compiled or run);
the image's own python3 then compiles every module of its Python (the standard library
too) with hash-checked bytecode independent of mtimes, so a read-only root file system
never needs to write a `.pyc` and the layer's fixed mtimes do not make them stale.

The image runs as the manifests run it: user 65532 (`nonroot`, as distroless names it),
`python3 -m runtime` as the entry point (each manifest's command adds the component),
and nothing written outside the volumes the manifests mount. Two layers: the system and
its Python packages, then the runtime package alone (an upgrade of the runtime is a
small layer).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from runtime.api.image import DISTRIBUTION, ENTRYPOINT, runtime_image
from tools import dist
from tools.images import cache, debian, lock, oci
from tools.images.errors import BuildError

PACKAGING = dist.PACKAGING / "runtime"
DEBIAN_PACKAGES = PACKAGING / "debian-packages.txt"
DPKG_CONFIG = PACKAGING / "dpkg-excludes.cfg"
REQUIREMENTS = PACKAGING / "requirements.txt"
#: where Debian's python3 finds packages installed outside apt
SITE_PACKAGES = "usr/local/lib/python3.11/dist-packages"
PYTHON_PATHS = ("/usr/lib/python3.11", "/usr/lib/python3/dist-packages", f"/{SITE_PACKAGES}")
USER_NAME = "nonroot"
UID = 65532
ENV = (
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
)
#: OCI architectures to the machine names the lock's wheels are for
MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}


def bootstrap_spec() -> debian.Bootstrap:
    return debian.Bootstrap(
        packages=debian.read_list(DEBIAN_PACKAGES), variant="essential", dpkg_config=DPKG_CONFIG
    )


def inputs(architecture: str) -> dict[str, str]:
    """Everything the image is made from (the cache key): the wheel's sources, not the wheel."""
    return {
        "image": runtime_image(),
        "recipe": cache.recipe_digest("runtimeimage", "debian", "lock"),
        "debian": " ".join(bootstrap_spec().command(Path("/"))),
        "dpkg": cache.file_digest(DPKG_CONFIG),
        "requirements": cache.file_digest(REQUIREMENTS),
        "runtime": cache.tree_digest(dist.ROOT / "runtime", suffixes=(".py",)),
        "distribution": cache.file_digest(PACKAGING / "pyproject.toml"),
        "dist": cache.file_digest(Path(dist.__file__)),
        "architecture": architecture,
    }


def install_wheels(rootfs: Path, wheel: Path, *, architecture: str) -> None:
    """The pinned packages and the runtime's wheel into the image's site-packages, hashes checked."""
    machine = MACHINES.get(architecture)
    if machine is None:
        raise BuildError(f"the lock has no wheels for {architecture} (only {', '.join(MACHINES)})")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    with tempfile.TemporaryDirectory() as folder:
        # by name from --find-links, not by path: pip records a path install's URL (direct_url.json), and
        # the build folder's path would make every build's layer different
        own = Path(folder) / "runtime.txt"
        own.write_text(f"{DISTRIBUTION}=={dist.version()} --hash=sha256:{digest}\n")
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "--no-deps",
            "--require-hashes",
            "--target",
            str(rootfs / SITE_PACKAGES),
            "--find-links",
            str(wheel.parent),
            *lock.platform_flags(machine),
            "-r",
            str(REQUIREMENTS),
            "-r",
            str(own),
        ]
        completed = subprocess.run(command, stdout=sys.stderr, stderr=subprocess.PIPE, text=True, check=False)
    if completed.returncode != 0:
        raise BuildError(f"pip could not install the image's wheels: {completed.stderr.strip()[-2000:]}")
    # console scripts written for this machine's interpreter: the image runs `python3 -m runtime`
    shutil.rmtree(rootfs / SITE_PACKAGES / "bin", ignore_errors=True)


def compile_python(rootfs: Path) -> None:
    """Every module the image's Python has, compiled by that Python into hash-checked `.pyc` files."""
    debian.chroot(
        rootfs,
        ["python3", "-m", "compileall", "-q", "-f", "--invalidation-mode", "unchecked-hash", *PYTHON_PATHS],
    )


def runtime_paths(rootfs: Path) -> list[str]:
    """The runtime package's own paths in the image (its second layer)."""
    site = rootfs / SITE_PACKAGES
    found = sorted(path.name for path in site.glob("liqo_iac_runtime-*.dist-info"))
    return [f"{SITE_PACKAGES}/runtime", *(f"{SITE_PACKAGES}/{name}" for name in found)]


def write_image(folder: Path, filename: str, *, architecture: str) -> None:
    wheel = dist.build("runtime", folder / "wheel")
    rootfs = folder / "rootfs"
    debian.bootstrap(bootstrap_spec(), rootfs)
    install_wheels(rootfs, wheel, architecture=architecture)
    debian.add_user(rootfs, USER_NAME, UID, home=f"/home/{USER_NAME}")
    compile_python(rootfs)
    debian.remove_build_leftovers(rootfs)
    own = runtime_paths(rootfs)
    base = debian.layer(rootfs, exclude=own)
    package = oci.LayerContents()
    for path in own:
        package.add_directory(path)
        package.add_tree(rootfs / path, prefix=path)
    oci.write_image(
        folder / filename,
        names=[runtime_image()],
        layers=[base, package],
        config=oci.ImageConfig(
            entrypoint=ENTRYPOINT,
            cmd=("--help",),
            user=f"{UID}:{UID}",
            env=ENV,
            labels={"org.opencontainers.image.version": dist.version()},
        ),
        architecture=architecture,
        history=[
            f"mmdebstrap {debian.SUITE} essential: {' '.join(bootstrap_spec().packages)}; pinned wheels",
            f"the runtime, {wheel.name}",
        ],
    )
    shutil.rmtree(rootfs)
    shutil.rmtree(wheel.parent)
