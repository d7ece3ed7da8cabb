"""The kubelet API: alone with a fake runner, then behind the emulator's `pods/log` proxy with real processes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import os
import ssl
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import aiohttp
import pytest
import yaml
from cryptography import x509

from playground.apiserver.pki import CertificateAuthority
from playground.nodeagent.containers import (
    ContainerReport,
    LogOptions,
    LogUnavailableError,
    PodReport,
    Runner,
)
from playground.nodeagent.kubeletapi import KubeletAPI, serving_certificate
from playground.nodeagent.objects import APIObjectSource
from playground.nodeagent.podrun import ProcessSettings
from playground.nodeagent.processes import ProcessRunner
from runtime.api.image import runtime_image
from runtime.api.kinds import CONFIGMAPS, NODES, PODS
from runtime.api.objects import JSON
from runtime.core import Client
from tests.playground.conftest import eventually
from tests.playground.nodeagent.conftest import agent, options

POD: JSON = {
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
    "spec": {"initContainers": [{"name": "setup"}], "containers": [{"name": "app"}, {"name": "sidecar"}]},
}


class FakeRunner:
    """Serves scripted chunks; `gate` holds the last chunk back until set (to see streaming)."""

    def __init__(self, chunks: Sequence[bytes] = (b"hello\n",), *, running: bool = True) -> None:
        self.chunks = list(chunks)
        self.running = running
        self.options: list[LogOptions] = []
        self.gate: asyncio.Event | None = None
        self.unavailable: str | None = None

    def accepts(self, pod: JSON) -> bool:
        return True

    def pod_ip(self, pod: JSON) -> str | None:
        return None

    async def start(self, pod: JSON, *, pod_ip: str, netns: Path | None = None) -> None:
        raise AssertionError("not started here")

    async def stop(self, uid: str, *, grace_period: float) -> None:
        raise AssertionError("not stopped here")

    def report(self, uid: str) -> PodReport | None:
        if not self.running:
            return None
        return PodReport(
            phase="Running", containers=[ContainerReport(name="app", image="x", state={"running": {}})]
        )

    async def logs(self, uid: str, container: str, options: LogOptions) -> AsyncIterator[bytes]:
        self.options.append(options)
        if self.unavailable:
            raise LogUnavailableError(self.unavailable)
        for index, chunk in enumerate(self.chunks):
            if index == len(self.chunks) - 1 and self.gate is not None:
                await self.gate.wait()
            yield chunk

    async def close(self) -> None:
        raise AssertionError("not closed here")


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.generate("test-ca")


def client_ssl(ca: CertificateAuthority, user: str | None, groups: Sequence[str] = ()) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if user is not None:
        cert, key = ca.issue_client(user, organizations=groups)
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "c.crt").write_bytes(cert)
            Path(tmp, "c.key").write_bytes(key)
            context.load_cert_chain(Path(tmp, "c.crt"), Path(tmp, "c.key"))
    return context


@contextlib.asynccontextmanager
async def serving(api: KubeletAPI) -> AsyncIterator[KubeletAPI]:
    task = asyncio.create_task(api.run())
    try:
        await asyncio.wait_for(api.ready.wait(), 10)
        yield api
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture
async def kubelet(ca: CertificateAuthority, tmp_path: Path) -> AsyncIterator[tuple[KubeletAPI, FakeRunner]]:
    runner = FakeRunner()

    def find(namespace: str, name: str) -> tuple[Runner, JSON] | None:
        return (runner, POD) if (namespace, name) == ("shop", "web") else None

    api = KubeletAPI(
        find, node_name="node-1", address="127.0.0.1", ca_pem=ca.cert_pem, pki_dir=tmp_path / "pki"
    )
    async with serving(api):
        yield api, runner


async def get(api: KubeletAPI, path: str, context: ssl.SSLContext) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session,
        session.get(f"https://127.0.0.1:{api.port}{path}") as response,
    ):
        return response.status, await response.text()


APISERVER = ("kube-apiserver-kubelet-client", ())


@pytest.mark.parametrize(
    ("user", "groups", "status", "body"),
    [
        (None, (), 401, "Unauthorized"),
        (
            "bob",
            ("developers",),
            403,
            "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])",
        ),
        ("kube-apiserver-kubelet-client", (), 200, "hello\n"),
        ("admin", ("system:masters",), 200, "hello\n"),
    ],
    ids=["anonymous", "other-user", "apiserver-client", "masters"],
)
async def test_only_the_api_server_and_masters_read_logs(
    kubelet: tuple[KubeletAPI, FakeRunner],
    ca: CertificateAuthority,
    user: str | None,
    groups: tuple[str, ...],
    status: int,
    body: str,
) -> None:
    api, _ = kubelet
    assert await get(api, "/containerLogs/shop/web/app", client_ssl(ca, user, groups)) == (status, body)


async def test_healthz_needs_no_certificate(
    kubelet: tuple[KubeletAPI, FakeRunner], ca: CertificateAuthority
) -> None:
    assert await get(kubelet[0], "/healthz", client_ssl(ca, None)) == (200, "ok")


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        ("/containerLogs/shop/other/app", 404, 'pod "other" does not exist'),
        ("/containerLogs/shop/web/nope", 404, 'container "nope" not found in pod "web"'),
        ("/containerLogs/shop/web/app?tailLines=x", 400, "invalid value 'x' for tailLines: want an integer"),
        (
            "/containerLogs/shop/web/app?follow=maybe",
            400,
            "invalid value 'maybe' for follow: want true or false",
        ),
    ],
    ids=["pod", "container", "bad-number", "bad-flag"],
)
async def test_request_errors(
    kubelet: tuple[KubeletAPI, FakeRunner], ca: CertificateAuthority, path: str, status: int, body: str
) -> None:
    assert await get(kubelet[0], path, client_ssl(ca, *APISERVER)) == (status, body)


async def test_a_container_without_log_is_a_bad_request(
    kubelet: tuple[KubeletAPI, FakeRunner], ca: CertificateAuthority
) -> None:
    api, runner = kubelet
    context = client_ssl(ca, *APISERVER)
    runner.running = False
    assert await get(api, "/containerLogs/shop/web/setup", context) == (
        400,
        'container "setup" in pod "web" is waiting to start: ContainerCreating',
    )
    runner.running = True
    runner.unavailable = 'previous terminated container "app" in pod "web" not found'
    assert await get(api, "/containerLogs/shop/web/app?previous=true", context) == (400, runner.unavailable)


class RefusingRunner(FakeRunner):
    """Refuses when asked, before any iteration (as a runner with a plain `def logs` does)."""

    def logs(self, uid: str, container: str, options: LogOptions) -> AsyncIterator[bytes]:
        raise LogUnavailableError(f"pod with uid {uid} is not running on this node")


async def test_a_runner_may_refuse_before_streaming(ca: CertificateAuthority, tmp_path: Path) -> None:
    runner = RefusingRunner()
    api = KubeletAPI(
        lambda namespace, name: (runner, POD),
        node_name="node-1",
        address="127.0.0.1",
        ca_pem=ca.cert_pem,
        pki_dir=tmp_path,
    )
    async with serving(api):
        assert await get(api, "/containerLogs/shop/web/app", client_ssl(ca, *APISERVER)) == (
            400,
            "pod with uid u-1 is not running on this node",
        )


async def test_query_becomes_log_options(
    kubelet: tuple[KubeletAPI, FakeRunner], ca: CertificateAuthority
) -> None:
    api, runner = kubelet
    query = "follow=true&previous=1&timestamps=true&tailLines=5&limitBytes=10&sinceTime=2025-01-01T00:00:00Z"
    assert (await get(api, f"/containerLogs/shop/web/app?{query}", client_ssl(ca, *APISERVER)))[0] == 200
    assert runner.options == [
        LogOptions(
            follow=True,
            previous=True,
            timestamps=True,
            tail_lines=5,
            limit_bytes=10,
            since_time="2025-01-01T00:00:00Z",
        )
    ]


async def test_logs_stream_chunk_by_chunk(
    kubelet: tuple[KubeletAPI, FakeRunner], ca: CertificateAuthority
) -> None:
    api, runner = kubelet
    runner.chunks = [b"first\n", b"second\n"]
    runner.gate = asyncio.Event()
    connector = aiohttp.TCPConnector(ssl=client_ssl(ca, *APISERVER))
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(f"https://127.0.0.1:{api.port}/containerLogs/shop/web/app?follow=true") as response,
    ):
        assert await response.content.readline() == b"first\n"
        runner.gate.set()
        assert await response.content.read() == b"second\n"


def test_serving_certificate_names_the_node_and_is_kept(tmp_path: Path) -> None:
    cert_path, _ = serving_certificate(tmp_path, hosts=["10.1.2.3", "node-1"])
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]
    assert san.get_values_for_type(x509.DNSName) == ["node-1"]
    first = cert_path.read_bytes()
    serving_certificate(tmp_path, hosts=["10.1.2.3", "node-1"])
    assert cert_path.read_bytes() == first
    serving_certificate(tmp_path, hosts=["10.9.9.9", "node-1"])
    assert cert_path.read_bytes() != first


# end to end: kubectl logs -> emulator -> kubelet API -> process runner


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(kubeconfig.parent)},
    )


@pytest.mark.kubectl
@pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0, reason="the process runner needs root on Linux"
)
async def test_kubectl_logs_reach_the_process_through_the_api_server(
    fresh_emulator: Path, api: Client, ns: str, tmp_path: Path
) -> None:
    config = yaml.safe_load(await asyncio.to_thread(fresh_emulator.read_text))
    ca_pem = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
    pods: dict[tuple[str, str], JSON] = {}
    runner = ProcessRunner(
        APIObjectSource(api),
        state_dir=tmp_path / "state",
        node_address="127.0.0.1",
        api_host="127.0.0.1",
        api_port=6443,
        notify=lambda uid: None,
        settings=ProcessSettings(backoff_base=0.2),
    )

    def find(namespace: str, name: str) -> tuple[Runner, JSON] | None:
        pod = pods.get((namespace, name))
        return (runner, pod) if pod is not None else None

    kubelet = KubeletAPI(
        find, node_name="node-e2e", address="127.0.0.1", ca_pem=ca_pem, pki_dir=tmp_path / "pki"
    )
    async with serving(kubelet):
        await api.create(
            NODES,
            {
                "metadata": {"name": "node-e2e"},
                "status": {
                    "addresses": [
                        {"type": "InternalIP", "address": "127.0.0.1"},
                        {"type": "Hostname", "address": "node-e2e"},
                    ],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
                },
            },
        )
        code = "import time\nprint('one', flush=True)\ntime.sleep(1)\nprint('two')"
        body = {
            "metadata": {"name": "talker", "namespace": ns},
            "spec": {
                "nodeName": "node-e2e",
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                "containers": [{"name": "c", "image": runtime_image(), "command": ["python", "-c", code]}],
            },
        }
        created = await api.create(PODS, body, namespace=ns)
        pods[(ns, "talker")] = created
        try:
            await runner.start(created, pod_ip="127.0.0.1")
            await eventually(lambda: _running(runner, created))
            followed = await asyncio.to_thread(kubectl, fresh_emulator, "logs", "-f", "-n", ns, "talker")
            assert (followed.returncode, followed.stdout) == (0, "one\ntwo\n"), followed.stderr
            tail = await asyncio.to_thread(
                kubectl, fresh_emulator, "logs", "--tail=1", "--timestamps", "-n", ns, "talker"
            )
            assert tail.stdout.endswith("Z two\n"), tail.stderr
            wrong = await asyncio.to_thread(kubectl, fresh_emulator, "logs", "-n", ns, "talker", "-c", "nope")
            assert wrong.returncode != 0
            assert "container nope is not valid for pod talker" in wrong.stderr
            previous = await asyncio.to_thread(kubectl, fresh_emulator, "logs", "-p", "-n", ns, "talker")
            assert 'previous terminated container "c" in pod "talker" not found' in previous.stderr
        finally:
            await runner.close()


def _running(runner: ProcessRunner, pod: JSON) -> bool:
    report = runner.report(pod["metadata"]["uid"])
    return report is not None and "running" in report.containers[0].state


@pytest.mark.kubectl
@pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0, reason="the process runner needs root on Linux"
)
async def test_a_runtime_pod_runs_through_the_node_agent(
    fresh_emulator: Path, api: Client, ns: str, tmp_path: Path
) -> None:
    """The agent picks the process runner for the runtime's image, writes its status and serves its log."""
    config = yaml.safe_load(await asyncio.to_thread(fresh_emulator.read_text))
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    await api.create(
        CONFIGMAPS, {"metadata": {"name": "kube-root-ca.crt", "namespace": ns}, "data": {"ca.crt": ca}}
    )
    code = "import os\nprint(open('/var/run/secrets/kubernetes.io/serviceaccount/namespace').read())"
    body = {
        "metadata": {"name": "runtime", "namespace": ns},
        "spec": {
            "nodeName": "node-1",
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": runtime_image(), "command": ["python", "-c", code]}],
        },
    }
    async with agent(fresh_emulator, options(state_dir=tmp_path / "agent")):
        await api.create(PODS, body, namespace=ns)

        async def succeeded() -> bool:
            pod = await api.get(PODS, "runtime", namespace=ns)
            return (pod.get("status") or {}).get("phase") == "Succeeded"

        await eventually(succeeded, within=30)
        pod = await api.get(PODS, "runtime", namespace=ns)
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network("127.0.0.0/8")
        assert pod["status"]["podIP"] != pod["status"]["hostIP"]
        logs = await asyncio.to_thread(kubectl, fresh_emulator, "logs", "-n", ns, "runtime")
        assert (logs.returncode, logs.stdout) == (0, f"{ns}\n"), logs.stderr


@pytest.mark.kubectl
async def test_an_unreachable_kubelet_is_a_server_error(fresh_emulator: Path, api: Client, ns: str) -> None:
    await api.create(
        NODES,
        {
            "metadata": {"name": "gone"},
            "status": {
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 1}},
            },
        },
    )
    body = {
        "metadata": {"name": "lost", "namespace": ns},
        "spec": {"nodeName": "gone", "containers": [{"name": "c", "image": "nginx:1.27"}]},
    }
    await api.create(PODS, body, namespace=ns)
    result = await asyncio.to_thread(kubectl, fresh_emulator, "logs", "-n", ns, "lost")
    assert result.returncode != 0
    url = f"https://127.0.0.1:1/containerLogs/{ns}/lost/c"
    assert (
        f'Error from server: Get "{url}": dial tcp 127.0.0.1:1: connect: connection refused' in result.stderr
    )
