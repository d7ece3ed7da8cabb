"""The release as users install it: `terraform init` from copies of the release zips, in working
directories that share nothing (paths, HOME, CLI configuration), writes the same lock file, and a
lock file committed from one is accepted by the other, while a lock file of another build is refused.
The installed provider is the release executable, and it installs the runtime image of its version."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tools.release import executable, mirror, target_platform, version, zip_name

from .conftest import Terraform

pytestmark = pytest.mark.slow

MAIN = """terraform {
  required_providers {
    liqo = {
      source  = "liqo-iac/liqo"
      version = "~> 0.1"
    }
  }
}

provider "liqo" {
  kubernetes = { config_path = "kubeconfig" }
}
"""


def _user(root: Path, name: str) -> Terraform:
    """A user of their own: a working directory, HOME, temp dir and a mirror copy of the release zip at a
    path of their own, with a CLI configuration of their own that names it."""
    user = root / name
    workdir, home, tmp = user / "project", user / "home", user / "tmp"
    for path in (workdir, home, tmp):
        path.mkdir(parents=True)
    copy = user / "downloads" / zip_name(version(), target_platform())
    copy.parent.mkdir()
    shutil.copyfile(executable.build() / copy.name, copy)
    cli_config = mirror.build(home / ".terraform.d" / "mirror", [copy])
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "TF_CLI_CONFIG_FILE": str(cli_config),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
    }
    terraform = Terraform(workdir, env=env)
    terraform.write(MAIN)
    return terraform


def _lock(terraform: Terraform) -> str:
    return (terraform.workdir / ".terraform.lock.hcl").read_text()


def test_two_users_init_from_the_release_and_write_the_same_lock_file(tmp_path: Path) -> None:
    alice, bob = _user(tmp_path, "alice"), _user(tmp_path / "elsewhere", "bob")

    alice.init()
    bob.init()

    assert _lock(alice) == _lock(bob)
    assert 'provider "registry.terraform.io/liqo-iac/liqo"' in _lock(alice)
    assert 'constraints = "~> 0.1"' in _lock(alice)
    assert re.search(r'"h1:[A-Za-z0-9+/]{43}="', _lock(alice))
    installed = alice.workdir / ".terraform" / "providers" / "registry.terraform.io" / "liqo-iac" / "liqo"
    plugin = installed / version() / target_platform() / f"terraform-provider-liqo_v{version()}"
    assert plugin.is_file() and not plugin.read_bytes().startswith(b"#!"), (
        "the release executable, not a shim"
    )


def test_a_committed_lock_file_is_accepted_by_another_user_and_another_build_is_refused(
    tmp_path: Path,
) -> None:
    alice, bob = _user(tmp_path, "alice"), _user(tmp_path, "bob")
    alice.init()
    committed = _lock(alice)
    (bob.workdir / ".terraform.lock.hcl").write_text(committed)

    bob.run("init", "-no-color", "-input=false", "-lockfile=readonly")
    assert _lock(bob) == committed

    carol = _user(tmp_path, "carol")
    other_build = re.sub(r'"h1:[^"]+"', '"h1:' + "A" * 43 + '="', committed)
    (carol.workdir / ".terraform.lock.hcl").write_text(other_build)
    refused = carol.init(check=False)
    assert refused.returncode != 0
    assert "doesn't match any of the checksums previously recorded" in " ".join(refused.output.split())


def test_the_release_provider_installs_the_runtime_image_of_its_version(
    terraform: Terraform, kubeconfig: Path
) -> None:
    terraform.write(MAIN.replace('config_path = "kubeconfig"', f'config_path = "{kubeconfig}"'))
    terraform.write(
        'resource "liqo_install" "here" {\n'
        '  cluster_name = "here"\n  pod_cidr = "10.244.0.0/16"\n  service_cidr = "10.96.0.0/12"\n}\n',
        "install.tf",
    )
    terraform.init()

    plan = terraform.plan().stdout

    assert f'image = "ghcr.io/liqo-iac/runtime:{version()}"' in " ".join(plan.split())
