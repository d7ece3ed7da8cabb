"""`make demo`: the product's main job on the playground, as far as it reaches today.

Today that is the playground's Kubernetes API server: it starts one, drives it with
the real kubectl (apply, get -o wide, auth can-i, explain), and stops it. Later
issues extend this script with whole clusters, `terraform apply` peering, offloading
and a pod running through the virtual node.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

STATE = Path(".playground/demo-apiserver")

MANIFEST = textwrap.dedent(
    """\
    apiVersion: v1
    kind: Namespace
    metadata:
      name: demo
    ---
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: default
      namespace: demo
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: greeting
      namespace: demo
      labels: {app: hello}
    data:
      message: hello from the playground
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: hello
      namespace: demo
    spec:
      replicas: 2
      selector: {matchLabels: {app: hello}}
      template:
        metadata: {labels: {app: hello}}
        spec:
          containers:
          - name: hello
            image: nginx:1.27
            ports: [{containerPort: 80}]
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: hello
      namespace: demo
    spec:
      selector: {app: hello}
      ports: [{port: 80, targetPort: 80}]
    """
)

SSA_CONFIGMAP = textwrap.dedent(
    """\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: applied
      namespace: demo
      labels: {owner: demo}
    data:
      source: server-side apply
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _step(title: str) -> None:
    print(f"\n==> {title}", flush=True)


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> None:
    print("$ kubectl " + " ".join(args), flush=True)
    env = {**os.environ, "HOME": str(STATE)}
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        text=True,
        capture_output=True,
        env=env,
    )
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        sys.stdout.write(result.stderr)
        raise SystemExit(f"demo failed: kubectl {' '.join(args)} exited with {result.returncode}")


def main() -> int:
    if shutil.which("kubectl") is None:
        print("make demo needs kubectl on PATH", file=sys.stderr)
        return 1
    if STATE.exists():
        shutil.rmtree(STATE)
    STATE.mkdir(parents=True)
    port = _free_port()
    _step(f"Starting the playground API server on 127.0.0.1:{port} (state in {STATE})")
    log = open(STATE / "apiserver.log", "wb")  # noqa: SIM115 - handed to the child process
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "playground.apiserver",
            "--listen",
            f"127.0.0.1:{port}",
            "--state-dir",
            str(STATE),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    kubeconfig = STATE / "kubeconfig"
    try:
        started = time.monotonic()
        while not kubeconfig.exists():
            if server.poll() is not None or time.monotonic() - started > 30:
                print((STATE / "apiserver.log").read_text(), file=sys.stderr)
                return 1
            time.sleep(0.05)
        print(f"ready in {time.monotonic() - started:.2f}s; admin kubeconfig: {kubeconfig}")
        _step("kubectl talks to it like to any cluster")
        _kubectl(kubeconfig, "version", "-o", "yaml")
        _kubectl(kubeconfig, "get", "namespaces")
        _step("Applying a namespace, a ConfigMap, a Deployment and a Service")
        _kubectl(kubeconfig, "apply", "-f", "-", stdin=MANIFEST)
        _kubectl(kubeconfig, "get", "deployments,services,configmaps", "-n", "demo", "-o", "wide")
        _step("Labels, server-side apply, RBAC and the OpenAPI schema")
        _kubectl(kubeconfig, "label", "configmap", "greeting", "-n", "demo", "tier=demo")
        _kubectl(kubeconfig, "apply", "--server-side", "--field-manager=demo", "-f", "-", stdin=SSA_CONFIGMAP)
        _kubectl(kubeconfig, "get", "configmaps", "-n", "demo", "--show-labels")
        _kubectl(kubeconfig, "auth", "can-i", "create", "deployments", "-n", "demo")
        _kubectl(kubeconfig, "explain", "deployment.spec.replicas")
        _step("What the product does not show yet")
        print(
            "Pods stay Pending: the playground's scheduler, controllers and node agent (issue 3),\n"
            "the runtime and peering (issue 4) and the Terraform provider (issue 5) are not built yet."
        )
        return 0
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        _step("Stopped the API server")


if __name__ == "__main__":
    sys.exit(main())
