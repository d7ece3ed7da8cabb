"""The API behaviour suite's cluster: the emulator by default, the real API server or any
cluster on request.

With `KUBEBUILDER_ASSETS=<dir>` every test runs against the real etcd and kube-apiserver
alone (`envtest.py`, as controller-runtime's envtest runs them: the real leg does this);
with `LIQO_TEST_KUBECONFIG=<path>`, against that cluster. The tests only use a kubeconfig,
the official client, raw HTTPS and kubectl, so they hold the emulator to what a real
kube-apiserver does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import urllib3
from kubernetes import client, config

from playground.realbinary import find_assets
from tests.ports import free_port

from .envtest import control_plane
from .webhookserver import Configurations


@dataclass
class Cluster:
    kubeconfig: Path
    api: client.ApiClient
    emulated: bool
    process: subprocess.Popen[bytes] | None = None
    state_dir: Path | None = None

    def raw(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        query: list[tuple[str, str]] | None = None,
        data: bytes | None = None,
        stream: bool = False,
        timeout: float = 30,
    ) -> urllib3.BaseHTTPResponse:
        """One HTTPS request with the kubeconfig's credentials; nothing parsed or retried."""
        all_headers = {"Accept": "application/json", "Content-Type": "application/json"}
        all_headers.update(headers or {})
        self.api.update_params_for_auth(all_headers, [], ["BearerToken"], path, method, None)
        url = self.api.configuration.host + path
        if query:
            url += "?" + urlencode(query)
        payload = data if data is not None else (json.dumps(body).encode() if body is not None else None)
        pool = self.api.rest_client.pool_manager
        return pool.request(
            method,
            url,
            body=payload,
            headers=all_headers,
            preload_content=not stream,
            timeout=timeout,
            retries=False,
        )

    def json(self, method: str, path: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
        response = self.raw(method, path, body, **kwargs)
        text = response.data.decode() if response.data else ""
        return response.status, (json.loads(text) if text else None)

    def kubectl(
        self, *args: str, input: str | None = None, timeout: float = 60, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "KUBECTL_INTERACTIVE_DELETE": "false", "HOME": str(self.kubeconfig.parent)},
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result


def start_emulator(state_dir: Path, *, port: int | None = None) -> tuple[subprocess.Popen[bytes], Path]:
    # below the ephemeral range: a restart on the same port finds it still free (tests/ports.py)
    port = port or free_port()
    kubeconfig = state_dir / "kubeconfig"
    # A restart on the same state dir must wait for the new server's kubeconfig, not the old one.
    kubeconfig.unlink(missing_ok=True)
    log = open(state_dir / "apiserver.log", "ab")  # noqa: SIM115 - the process owns it until it exits
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "playground.apiserver",
            "--listen",
            f"127.0.0.1:{port}",
            "--state-dir",
            str(state_dir),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while not kubeconfig.exists():
        if process.poll() is not None:
            raise RuntimeError(
                f"the API server exited with {process.returncode}: see {state_dir / 'apiserver.log'}"
            )
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the API server did not write its kubeconfig within 30 s")
        time.sleep(0.05)
    return process, kubeconfig


def stop_emulator(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def api_client(kubeconfig: Path) -> client.ApiClient:
    api: client.ApiClient = config.new_client_from_config(config_file=str(kubeconfig))
    return api


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    external = os.environ.get("LIQO_TEST_KUBECONFIG")
    if external:
        path = Path(external)
        yield Cluster(path, api_client(path), emulated=False)
        return
    state_dir = tmp_path_factory.mktemp("apiserver")
    assets = find_assets(os.environ)
    if assets is not None:
        with control_plane(assets, state_dir) as kubeconfig:
            yield Cluster(kubeconfig, api_client(kubeconfig), emulated=False, state_dir=state_dir)
        return
    process, kubeconfig = start_emulator(state_dir)
    try:
        yield Cluster(kubeconfig, api_client(kubeconfig), emulated=True, process=process, state_dir=state_dir)
    finally:
        stop_emulator(process)


@pytest.fixture
def core(cluster: Cluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api)


@pytest.fixture
def namespace(cluster: Cluster, core: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace with a `default` ServiceAccount (a real cluster's controller makes one too)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": name}})
    try:
        core.create_namespaced_service_account(name, {"metadata": {"name": "default"}})
    except client.ApiException as exc:
        if exc.status != 409:
            raise
    yield name
    try:
        core.delete_namespace(name)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture(scope="session")
def kubectl_available() -> None:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is not on PATH: the kubectl behaviour tests need it")


@pytest.fixture
def gadget_crd(cluster: Cluster) -> Iterator[str]:
    """A namespaced custom resource `gadgets.<random group>/v1`; yields the group."""
    group = f"p{uuid.uuid4().hex[:8]}.example.com"
    ext = client.ApiextensionsV1Api(cluster.api)
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    ext.create_custom_resource_definition(
        {
            "metadata": {"name": f"gadgets.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
                ],
            },
        }
    )
    custom = client.CustomObjectsApi(cluster.api)
    try:
        _wait_served(custom, group)
        yield group
    finally:
        ext.delete_custom_resource_definition(f"gadgets.{group}")


def _wait_served(custom: client.CustomObjectsApi, group: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            custom.list_cluster_custom_object(group, "v1", "gadgets")
            return
        except client.ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


@pytest.fixture
def configurations(cluster: Cluster) -> Iterator[Configurations]:
    made = Configurations(client.AdmissionregistrationV1Api(cluster.api))
    try:
        yield made
    finally:
        made.delete_all()
