"""The runtime's one container image: its name is part of the contract.

The install manifests run every component from this image, and the playground's node
agent recognises it to run those pods as local processes. The tag is the package
version, so an upgrade of the package is an upgrade of the image.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "liqo-iac"
RUNTIME_IMAGE_REPOSITORY = "ghcr.io/liqo-iac/runtime"


def package_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0.0.0-dev"


def runtime_image(tag: str | None = None) -> str:
    """`ghcr.io/liqo-iac/runtime:<tag>`, the package version unless another tag is given."""
    return f"{RUNTIME_IMAGE_REPOSITORY}:{tag or package_version()}"


def image_repository(image: str) -> str:
    """The image reference without its tag or digest (a registry port's colon is kept)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def is_runtime_image(image: str) -> bool:
    return image_repository(image) == RUNTIME_IMAGE_REPOSITORY
