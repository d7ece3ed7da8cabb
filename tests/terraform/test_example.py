"""`examples/terraform` end to end: real Terraform, the provider from the mirror, two playground clusters
(milan provides, rome consumes) whose runtime pods run as local processes, and the cluster state checked
with the Kubernetes client after every step, as terratest does.

Each test starts its own clusters (`playground` fixture) and copies the example into its
Terraform working directory, with the clusters' kubeconfigs as variables (the CIDRs are discovered).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from playground.testing import Clusters, Playground
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, NAMESPACEOFFLOADINGS
from runtime.api.kinds import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, NODES
from runtime.api.quantity import parse_quantity
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually

from .conftest import COMMAND_TIMEOUT, Result, Terraform

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "terraform"
#: what the example asks milan for (its variables' defaults)
REQUESTED = {"cpu": "2", "memory": "4Gi", "pods": "20"}


def flat(text: str) -> str:
    """Terraform wraps diagnostics at 78 columns: compare with whitespace collapsed."""
    return " ".join(text.split())


async def deploy(playground: Playground, terraform: Terraform, **variables: str) -> Clusters:
    """Two clusters, and the example in the working directory with their kubeconfigs; `terraform init` done."""
    clusters = await playground.up("milan", "rome")
    for source in EXAMPLE.glob("*.tf"):
        shutil.copy(source, terraform.workdir / source.name)
    values = {
        "rome_kubeconfig": str(clusters["rome"].kubeconfig),
        "milan_kubeconfig": str(clusters["milan"].kubeconfig),
        **variables,
    }
    terraform.write(json.dumps(values), "terraform.tfvars.json")
    await asyncio.to_thread(terraform.init)
    return clusters


async def run(terraform: Terraform, command: str, *args: str, check: bool = True) -> Result:
    """A Terraform command off the event loop (the clusters' clients keep running)."""
    method = getattr(terraform, command)
    result: Result = await asyncio.to_thread(method, *args, check=check)
    return result


def override(terraform: Terraform, body: str) -> None:
    """An `override.tf` for the example (Terraform merges it into the blocks of the same names)."""
    terraform.write(body, "override.tf")


async def virtual_node(api: Client, name: str = "liqo-milan") -> dict[str, Any] | None:
    try:
        return await api.get(NODES, name)
    except NotFoundError:
        return None


def is_ready(node: dict[str, Any] | None) -> bool:
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def advertises(node: dict[str, Any] | None, amounts: dict[str, str]) -> bool:
    capacity = ((node or {}).get("status") or {}).get("capacity") or {}
    return all(
        key in capacity and parse_quantity(capacity[key]).value == parse_quantity(value).value
        for key, value in amounts.items()
    )


async def test_the_quick_start_applies_plans_empty_recovers_drift_imports_updates_and_destroys(
    playground: Playground, terraform: Terraform
) -> None:
    clusters = await deploy(playground, terraform)

    await run(terraform, "apply")

    async with clusters["rome"].client() as rome, clusters["milan"].client() as milan:
        # the CIDRs the example does not set, discovered from kube-system/kubeadm-config as on kind
        identity = await rome.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=c.DEFAULT_NAMESPACE)
        assert identity["data"][c.IDENTITY_POD_CIDR] == clusters["rome"].spec.pod_cidr
        assert identity["data"][c.IDENTITY_SERVICE_CIDR] == clusters["rome"].spec.service_cidr
        node = await virtual_node(rome)
        assert is_ready(node), node
        assert advertises(node, REQUESTED), node
        outputs = await asyncio.to_thread(terraform.output)
        assert outputs["virtual_node"] == "liqo-milan"
        assert outputs["peering"]["offloading"] == "Established"
        # liqo-demo offloaded: its twin namespace on milan
        assert outputs["offloading"] == {"phase": "Ready", "remote_namespace": "liqo-demo-rome"}
        assert (await milan.get(NAMESPACES, "liqo-demo-rome"))["metadata"]["name"] == "liqo-demo-rome"
        assert (await run(terraform, "plan", "-detailed-exitcode", check=False)).returncode == 0, (
            "plan after apply"
        )

        # the offloading: imported by namespace with nothing to change, then its strategy changed in place
        await run(terraform, "run", "state", "rm", "liqo_offload.offload")
        await run(terraform, "run", "import", "-no-color", "liqo_offload.offload", "liqo-demo")
        assert (await run(terraform, "plan", "-detailed-exitcode", check=False)).returncode == 0, (
            "plan after importing the offloading"
        )
        override(terraform, 'resource "liqo_offload" "offload" {\n  pod_offloading_strategy = "Remote"\n}\n')
        remote = await run(terraform, "plan")
        assert "# liqo_offload.offload will be updated in-place" in remote.stdout
        await run(terraform, "apply")
        offloading = await rome.get(NAMESPACEOFFLOADINGS, "offloading", namespace="liqo-demo")
        assert offloading["spec"]["podOffloadingStrategy"] == "Remote"
        (terraform.workdir / "override.tf").unlink()

        # drift: the ForeignCluster deleted by hand
        await rome.delete(FOREIGNCLUSTERS, "milan")
        await eventually(lambda: _gone(rome, "milan"), within=120)
        drift = await run(terraform, "plan", "-detailed-exitcode", check=False)
        assert drift.returncode == 2
        assert "# liqo_peer.peer will be created" in drift.stdout
        await run(terraform, "apply")
        assert is_ready(await virtual_node(rome))

        # import: forget the peering, import it by name, nothing to change
        await run(terraform, "run", "state", "rm", "liqo_peer.peer")
        await run(terraform, "run", "import", "-no-color", "liqo_peer.peer", "milan")
        assert (await run(terraform, "plan", "-detailed-exitcode", check=False)).returncode == 0, (
            "plan after import"
        )

        # in-place update of the requested cpu
        update = await run(terraform, "plan", "-var", "cpu=3")
        assert "# liqo_peer.peer will be updated in-place" in update.stdout
        await run(terraform, "apply", "-var", "cpu=3")
        assert advertises(await virtual_node(rome), {**REQUESTED, "cpu": "3"})

        # another provider identity replaces the peering
        override(terraform, 'resource "liqo_peer" "peer" {\n  cluster_name = "milan-two"\n}\n')
        replace = await run(terraform, "plan", "-var", "cpu=3")
        assert "# liqo_peer.peer must be replaced" in replace.stdout
        assert "# forces replacement" in replace.stdout
        (terraform.workdir / "override.tf").unlink()

        await run(terraform, "destroy", "-var", "cpu=3")

        assert await virtual_node(rome) is None
        with pytest.raises(NotFoundError):
            await rome.get(FOREIGNCLUSTERS, "milan")
        assert (await rome.list(DEPLOYMENTS, namespace="liqo")).items == []
        assert (await rome.list(NAMESPACEOFFLOADINGS)).items == []
        assert await _absent(milan, "liqo-demo-rome"), "the twin namespace is gone with the offloading"
    assert json.loads((await run(terraform, "run", "show", "-json")).stdout).get("values") is None


async def _absent(api: Client, namespace: str) -> bool:
    try:
        found = await api.get(NAMESPACES, namespace)
    except NotFoundError:
        return True
    return bool(found["metadata"].get("deletionTimestamp"))


async def _gone(api: Client, name: str) -> bool:
    try:
        await api.get(FOREIGNCLUSTERS, name)
    except NotFoundError:
        return True
    return False


async def test_a_wrong_token_fails_with_the_runtime_s_reason(
    playground: Playground, terraform: Terraform
) -> None:
    await deploy(playground, terraform)
    override(
        terraform,
        'resource "liqo_peer" "peer" {\n  cluster_token = "' + "ab" * 32 + '"\n'
        '  timeouts {\n    create = "90s"\n  }\n}\n',
    )

    result = await run(terraform, "apply", check=False)

    assert result.returncode == 1
    text = flat(result.output)
    assert "Error: Peering with milan failed" in text
    assert "(AuthenticationFailed)" in text
    assert "rejected the peering token" in text
    assert "liqo_peer.peer" in (await run(terraform, "run", "state", "list")).stdout, "kept, tainted"


async def test_an_unreachable_auth_url_times_out_with_the_runtime_s_reason(
    playground: Playground, terraform: Terraform
) -> None:
    await deploy(playground, terraform)
    override(
        terraform,
        'resource "liqo_peer" "peer" {\n  cluster_authurl = "https://127.0.0.1:9"\n'
        # the runtime reports ProviderUnreachable within a second or two of its first attempt
        '  timeouts {\n    create = "15s"\n  }\n}\n',
    )

    log = terraform.workdir / "terraform.log"
    result = await asyncio.to_thread(
        terraform.apply, check=False, env={"TF_LOG": "INFO", "TF_LOG_PATH": str(log)}
    )

    assert result.returncode == 1
    text = flat(result.output)
    assert "Error: Timed out waiting for the peering with milan (a Ready virtual node)" in text
    # the error quotes the condition that held the wait up, and for how long
    assert "Still not done after 15s (the create of the peering with milan): ForeignCluster milan:" in text
    assert re.search(
        r"ProviderUnreachable for \d+s: the authentication service at https://127\.0\.0\.1:9 cannot be reached: "
        r"the connection was refused \(nothing listens there\)",
        text,
    ), text
    # and while it waited, Terraform's INFO log said so every few seconds
    waiting = [
        line
        for line in log.read_text().splitlines()
        if "[INFO]" in line and "waiting for the peering with milan (a Ready virtual node)" in line
    ]
    assert len(waiting) >= 2, log.read_text()[-4000:]
    assert "ProviderUnreachable for" in waiting[-1]


async def test_bad_kubeconfig_settings_are_plan_errors_on_the_attribute(
    playground: Playground, terraform: Terraform
) -> None:
    clusters = await deploy(playground, terraform)

    missing = await run(
        terraform, "plan", "-var", f"rome_kubeconfig={terraform.workdir / 'missing'}", check=False
    )
    unknown = await run(terraform, "plan", "-var", "milan_context=nowhere", check=False)

    assert missing.returncode == unknown.returncode == 1
    assert "config_path" in flat(missing.output)
    assert str(terraform.workdir / "missing") in flat(missing.output)
    assert "nowhere" in flat(unknown.output)
    assert "config_context" in flat(unknown.output)
    assert "Traceback" not in missing.output + unknown.output
    assert clusters["rome"].exists


async def test_destroy_with_the_provider_cluster_gone_finishes(
    playground: Playground, terraform: Terraform
) -> None:
    clusters = await deploy(playground, terraform)
    # rome's runtime retries an unreachable provider for its own bound (a minute; tests/runtime/peering covers
    # it giving up): the peering's delete timeout (kept in the state, which a destroy reads) bounds the destroy
    # first, through the orphan path
    override(
        terraform,
        'resource "liqo_peer" "peer" {\n  timeouts {\n    delete = "15s"\n  }\n}\n'
        # the offloading waits for milan to report its twin namespace gone, until its virtual node turns NotReady
        'resource "liqo_offload" "offload" {\n  timeouts {\n    delete = "15s"\n  }\n}\n',
    )
    await run(terraform, "apply")
    await clusters["milan"].stop_apiserver()

    # a delete never counts a cluster it cannot reach as gone: milan's resources stay in the state
    kept = await run(terraform, "destroy", "-refresh=false", check=False)
    assert kept.returncode == 1
    text = flat(kept.output)
    assert "Error: Cannot revoke the peering token" in text
    assert "the cluster cannot be reached" in text
    listed = (await run(terraform, "run", "state", "list", check=False)).stdout.split()
    assert {"liqo_install.milan", "liqo_generate.generate"} <= set(listed), listed

    # saying it is gone for good: force, recorded without reaching the cluster
    terraform.write(
        'resource "liqo_install" "milan" {\n  force = true\n}\n'
        'resource "liqo_generate" "generate" {\n  force = true\n}\n',
        "force_override.tf",
    )
    await run(
        terraform, "apply", "-refresh=false", "-target=liqo_install.milan", "-target=liqo_generate.generate"
    )

    # a refresh cannot read what lives in milan, and says how past a cluster that is gone for good
    refreshed = await run(terraform, "destroy", check=False)
    assert refreshed.returncode == 1
    text = flat(refreshed.output)
    assert "Error: Failed to read the Liqo installation in namespace liqo" in text
    assert "with liqo_install.milan," in text
    # the host port's forwarder (docker-proxy's part in kind) accepts the connection and hangs up, as the API
    # server behind it is down
    assert re.search(
        r"The cluster of context '[\w-]+' \(https://127\.0\.0\.1:\d+\) closed the connection: it hung up before it "
        r"answered\. Check that the address is the server's own \(not a load balancer or proxy in front of a server "
        r"that is down\)",
        text,
    ), text
    assert "If this cluster is gone for good, set `force = true` on its liqo resources" in text
    assert "`terraform state rm <address>`" in text

    # which lets the destroy finish
    result = await run(terraform, "destroy", "-refresh=false")

    text = flat(result.output)
    assert "Warning: The peering with milan was removed without its clean-up" in flat(kept.output)
    assert "Warning: Cluster unreachable: token dropped from the state" in text
    assert "Warning: Cluster unreachable: installation dropped from the state" in text
    assert (await run(terraform, "run", "state", "list", check=False)).stdout.strip() == ""
    async with clusters["rome"].client() as rome:
        assert await _gone(rome, "milan")
        await eventually(lambda: _no_virtual_node(rome), within=30)


async def test_ctrl_c_during_apply_keeps_the_state(playground: Playground, terraform: Terraform) -> None:
    clusters = await deploy(playground, terraform)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "provider.terraform_cli",
        "apply",
        "-no-color",
        "-input=false",
        "-auto-approve",
        cwd=terraform.workdir,
        env=terraform.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        async with clusters["rome"].client() as rome:
            await eventually(lambda: _exists(rome, "milan"), within=COMMAND_TIMEOUT)
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(COMMAND_TIMEOUT):
            stdout, _ = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    output = stdout.decode()

    assert "Interrupt received" in output
    state = (await run(terraform, "run", "state", "list")).stdout.split()
    assert "liqo_peer.peer" in state, output
    assert {"liqo_install.milan", "liqo_install.rome", "liqo_generate.generate"} <= set(state)
    await run(terraform, "apply")
    assert (await run(terraform, "plan", "-detailed-exitcode", check=False)).returncode == 0


async def _no_virtual_node(api: Client) -> bool:
    return await virtual_node(api) is None


async def _exists(api: Client, name: str) -> bool:
    return not await _gone(api, name)
