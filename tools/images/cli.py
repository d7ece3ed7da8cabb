"""`python3 tools/images/build.py IMAGE --out DIR`: build an image archive (or take it from the cache).

    pause                     registry.k8s.io/pause:<kubeadm's PauseVersion>, from Kubernetes' pause.c
    coredns --binary PATH     registry.k8s.io/coredns/coredns:v<the binary's version>
    runtime                   ghcr.io/liqo-iac/runtime:<version>, from Debian packages and pinned wheels
    test                      docker.io/library/nginx and docker.io/curlimages/curl stand-ins, from Debian's

Each archive is an OCI image layout in a tar (`ctr -n k8s.io images import ARCHIVE`
registers it under its name; `docker load` and `podman load` read it too). Its path in
DIR is printed on stdout, one line per archive; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tools import dist
from tools.images import cache, coredns, oci, pause, runtimeimage, testimages
from tools.images.errors import BuildError

Builder = Callable[[argparse.Namespace, Path], list[Path]]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_pause(args: argparse.Namespace, root: Path) -> list[Path]:
    source = pause.pause_source()
    architecture = oci.architecture()
    inputs = {
        "image": source.name,
        "recipe": cache.recipe_digest("pause"),
        "kubernetes": source.kubernetes_version,
        "pause.c": cache.key({"source": source.source.hex()}),
        "compiler": pause.compiler(),
        "architecture": architecture,
    }
    filename = f"pause-{source.tag}.tar"

    def build(folder: Path) -> None:
        _log(f"building {source.name} ...")
        pause.write_image(source, folder, filename, architecture=architecture)

    return [cache.cached(root, inputs, filename, build, rebuild=args.rebuild)]


def build_coredns(args: argparse.Namespace, root: Path) -> list[Path]:
    if args.binary is None:
        raise BuildError("the coredns image packs a CoreDNS binary: give its path with --binary PATH")
    binary = Path(args.binary)
    if not binary.is_file():
        raise BuildError(f"--binary {binary}: no such file")
    version = coredns.binary_version(binary)
    architecture = oci.architecture()
    inputs = {
        "image": coredns.image_name(version),
        "recipe": cache.recipe_digest("coredns"),
        "binary": cache.file_digest(binary),
        "architecture": architecture,
    }
    filename = f"coredns-v{version}.tar"

    def build(folder: Path) -> None:
        _log(f"building {coredns.image_name(version)} ...")
        coredns.write_image(binary, folder, filename, version=version, architecture=architecture)

    return [cache.cached(root, inputs, filename, build, rebuild=args.rebuild)]


def build_runtime(args: argparse.Namespace, root: Path) -> list[Path]:
    architecture = oci.architecture()
    inputs = runtimeimage.inputs(architecture)
    filename = f"runtime-{dist.version()}.tar"

    def build(folder: Path) -> None:
        _log(f"building {inputs['image']} (a minute or so) ...")
        runtimeimage.write_image(folder, filename, architecture=architecture)

    return [cache.cached(root, inputs, filename, build, rebuild=args.rebuild)]


def build_test(args: argparse.Namespace, root: Path) -> list[Path]:
    architecture = oci.architecture()
    archives = []
    for image in testimages.IMAGES:
        inputs = {
            "images": " ".join(image.names),
            "recipe": cache.recipe_digest("testimages", "debian"),
            "packages": " ".join(image.packages),
            "dpkg": cache.file_digest(runtimeimage.DPKG_CONFIG),
            "page": cache.key({"welcome": testimages.welcome_page()}),
            "architecture": architecture,
        }

        def build(folder: Path, image: testimages.TestImage = image) -> None:
            _log(f"building {image.repository} (Debian's {' '.join(image.packages)}) ...")
            testimages.write_image(image, folder, architecture=architecture)

        archives.append(cache.cached(root, inputs, image.filename, build, rebuild=args.rebuild))
    return archives


BUILDERS: dict[str, Builder] = {
    "pause": build_pause,
    "coredns": build_coredns,
    "runtime": build_runtime,
    "test": build_test,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("image", choices=sorted(BUILDERS))
    parser.add_argument("--out", type=Path, required=True, help="the folder the archive goes into")
    parser.add_argument("--binary", help="coredns: the CoreDNS executable to pack")
    parser.add_argument(
        "--cache-dir", type=Path, help="where built images are kept (default ~/.cache/liqo-iac/images)"
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="build again even when the cache has the image"
    )
    args = parser.parse_args(argv)
    root = args.cache_dir or cache.cache_root(os.environ)
    try:
        archives = BUILDERS[args.image](args, root)
    except (BuildError, oci.ImageError) as exc:
        _log(f"error: {exc}")
        return 1
    for archive in archives:
        print(cache.deliver(archive, args.out))
    return 0
