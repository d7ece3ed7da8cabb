"""The quick start (`examples/terraform`) under a real OpenTofu, built from its Go module (`make opentofu`,
tools/opentofu/build.py): `tofu init` installs the provider from the release mirror at OpenTofu's own
registry address, then `apply`, an empty plan and `destroy` on two playground clusters.

No test run builds OpenTofu (a cold build costs a few CPU-minutes): the test runs wherever it is
in its cache (CI's real leg builds it first, `make test-real`) and is skipped, saying so, elsewhere.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from playground.testing import Playground
from runtime.api.crds import FOREIGNCLUSTERS
from runtime.api.kinds import NODES
from runtime.core import NotFoundError
from tools.release import version

from .conftest import Terraform, working_directory
from .test_example import deploy, is_ready, run

BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "opentofu" / "build.py"


def _build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("opentofu_build", BUILD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


OPENTOFU = _build_script().built()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        OPENTOFU is None,
        reason="OpenTofu is not in its cache: `make opentofu` builds it from its Go module once (a few minutes; "
        "the real leg of `make test` does), so no test run builds it",
    ),
]


@pytest.fixture
def tofu(tmp_path: Path, terraform_cli_config: Path) -> Terraform:
    assert OPENTOFU is not None
    return working_directory(tmp_path, terraform_cli_config, program=[str(OPENTOFU / "tofu")])


async def test_the_quick_start_applies_and_destroys_under_opentofu(
    playground: Playground, tofu: Terraform
) -> None:
    clusters = await deploy(playground, tofu)
    lock = " ".join((tofu.workdir / ".terraform.lock.hcl").read_text().split())
    assert (
        f'provider "registry.opentofu.org/liqo-iac/liqo" {{ version = "{version()}" constraints = "~> 0.1"'
        in lock
    )

    await run(tofu, "apply")

    async with clusters["rome"].client() as rome:
        assert is_ready(await rome.get(NODES, "liqo-milan"))
        outputs = await asyncio.to_thread(tofu.output)
        assert outputs["virtual_node"] == "liqo-milan"
        assert outputs["offloading"] == {"phase": "Ready", "remote_namespace": "liqo-demo-rome"}
        assert (await run(tofu, "plan", "-detailed-exitcode", check=False)).returncode == 0, (
            "plan after apply"
        )

        await run(tofu, "destroy")

        with pytest.raises(NotFoundError):
            await rome.get(NODES, "liqo-milan")
        with pytest.raises(NotFoundError):
            await rome.get(FOREIGNCLUSTERS, "milan")
