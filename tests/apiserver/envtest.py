"""The real API server alone, as controller-runtime's envtest runs it: etcd and kube-apiserver
from `KUBEBUILDER_ASSETS`, on the host's loopback, nothing else.

The behaviour suite holds the emulator to kube-apiserver, so in the real leg it runs against
kube-apiserver with nothing around it: no scheduler binds its pods, no kubelet finishes its
graceful deletions, no controller adds objects to its watches, and the webhook servers it
starts on 127.0.0.1 are reachable, exactly as on the emulator. The PKI and the flags are the
playground's (`playground.realbinary`), so this is the same API server real-binary clusters run.
"""

from __future__ import annotations

import base64
import contextlib
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import yaml

from playground.realbinary import ADMIN, Assets, Pki, apiserver_command, etcd_command, generate_pki
from tests.ports import free_port

SERVICE_CIDR = "10.96.0.0/16"
READY_WITHIN = 120.0


class ControlPlaneError(RuntimeError):
    """etcd or kube-apiserver did not come up; the message names the process and its log."""


def _free_ports(count: int) -> list[int]:
    ports: set[int] = set()
    while len(ports) < count:
        ports.add(free_port())
    return sorted(ports)


def _kubeconfig(pki: Pki, port: int) -> dict[str, object]:
    def data(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode("ascii")

    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "envtest",
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority-data": data(pki.ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": ADMIN.user,
                "user": {
                    "client-certificate-data": data(pki.client_cert(ADMIN.user)),
                    "client-key-data": data(pki.client_key(ADMIN.user)),
                },
            }
        ],
        "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": ADMIN.user}}],
        "current-context": "envtest",
    }


def _ready(pki: Pki, port: int) -> bool:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.client_cert(ADMIN.user)), str(pki.client_key(ADMIN.user)))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=5) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def control_plane(assets: Assets, directory: Path) -> Iterator[Path]:
    """Run etcd and kube-apiserver under `directory` until the block ends; yields an admin kubeconfig."""
    pki = Pki(directory / "pki")
    generate_pki(pki, service_cidr=SERVICE_CIDR, identities=[ADMIN])
    etcd_port, peer_port, port = _free_ports(3)
    etcd = _start(
        etcd_command(assets, data_dir=directory / "etcd", client_port=etcd_port, peer_port=peer_port),
        directory / "etcd.log",
    )
    apiserver: subprocess.Popen[bytes] | None = None
    try:
        apiserver = _start(
            apiserver_command(assets, pki=pki, etcd_port=etcd_port, port=port, service_cidr=SERVICE_CIDR),
            directory / "kube-apiserver.log",
        )
        deadline = time.monotonic() + READY_WITHIN
        while not _ready(pki, port):
            for name, process in (("etcd", etcd), ("kube-apiserver", apiserver)):
                if process.poll() is not None:
                    raise ControlPlaneError(
                        f"{name} exited with {process.returncode}: see {directory / (name + '.log')}"
                    )
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"kube-apiserver's /readyz not ok within {READY_WITHIN:g} s: "
                    f"see {directory / 'kube-apiserver.log'}"
                )
            time.sleep(0.2)
        kubeconfig = directory / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(pki, port)))
        kubeconfig.chmod(0o600)
        yield kubeconfig
    finally:
        if apiserver is not None:
            _stop(apiserver)
        _stop(etcd)
