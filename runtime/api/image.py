"""The runtime's one container image: its name and entry point are part of the contract.

The install manifests run every component from this image (`python3 -m runtime
<component>`), and the playground's node agent recognises it to run those pods as local
processes. The tag is the runtime distribution's version, so an upgrade of the runtime
is an upgrade of the image; `make image` builds it (tools/images, the Dockerfile) with
this name and entry point.
"""

from __future__ import annotations

from typing import Final

from runtime.version import VERSION

#: the distribution that installs the `runtime` package (packaging/liqo-iac-runtime)
DISTRIBUTION: Final = "liqo-iac-runtime"
RUNTIME_IMAGE_REPOSITORY: Final = "ghcr.io/liqo-iac/runtime"
#: what a container of the image runs: each component's command is this and the component's name
ENTRYPOINT: Final = ("python3", "-m", "runtime")


def package_version() -> str:
    """The runtime distribution's version."""
    return VERSION


def component_command(component: str) -> list[str]:
    """A container's `command` for one component of the runtime (`python3 -m runtime <component>`)."""
    return [*ENTRYPOINT, component]


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
