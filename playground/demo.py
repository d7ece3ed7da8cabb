"""`make demo`: the product's main job on the playground, as far as it reaches today.

Today that is two local clusters, as kind makes them for Liqo's quick start:
`playground up rome milan` (a previous demo's clusters are removed first), a small
Deployment and Service applied to rome with the real kubectl and rolled out, then
`kubectl get nodes -o wide` and `kubectl get pods -A -o wide` on both clusters. The
clusters stay up afterwards, to be explored with kubectl and stopped with `playground
down`. Later issues extend this script with `terraform apply` peering, offloading and
a pod running through the virtual node.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from playground.cli import display_path
from playground.cluster import default_state_dir

CLUSTERS = ("rome", "milan")

MANIFEST = textwrap.dedent(
    """\
    apiVersion: v1
    kind: Namespace
    metadata:
      name: demo
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: hello
      namespace: demo
    spec:
      replicas: 3
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


def _step(title: str) -> None:
    print(f"\n==> {title}", flush=True)


def _run(argv: list[str], *, shown: str, stdin: str | None = None, env: dict[str, str] | None = None) -> None:
    print(f"$ {shown}", flush=True)
    result = subprocess.run(
        argv, input=stdin, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    sys.stdout.write(result.stdout)
    sys.stdout.flush()
    if result.returncode != 0:
        raise SystemExit(f"demo failed: {shown} exited with {result.returncode}")


def _playground(*args: str) -> None:
    _run([sys.executable, "-m", "playground", *args], shown="playground " + " ".join(args))


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> None:
    shown = f"kubectl --kubeconfig {display_path(kubeconfig)} " + " ".join(args)
    env = {**os.environ, "HOME": str(kubeconfig.parent)}
    _run(["kubectl", "--kubeconfig", str(kubeconfig), *args], shown=shown, stdin=stdin, env=env)


def main() -> int:
    if shutil.which("kubectl") is None:
        print("make demo needs kubectl on PATH", file=sys.stderr)
        return 1
    state_dir = default_state_dir()
    kubeconfigs = {name: (state_dir / name / "kubeconfig").absolute() for name in CLUSTERS}
    previous = [name for name in CLUSTERS if (state_dir / name).exists()]
    if previous:
        _step("Removing the previous demo's clusters")
        _playground("down", *previous)

    _step("Two local clusters, like `kind create cluster` twice (pod CIDRs overlap, as they do in real life)")
    _playground("up", *CLUSTERS)

    _step("A Deployment and a Service in rome, rolled out")
    rome = kubeconfigs["rome"]
    _kubectl(rome, "apply", "-f", "-", stdin=MANIFEST)
    _kubectl(rome, "rollout", "status", "deployment/hello", "-n", "demo", "--timeout=60s")
    _kubectl(rome, "get", "deployments,services,endpointslices", "-n", "demo", "-o", "wide")

    for name in CLUSTERS:
        _step(f"What {name} looks like")
        _kubectl(kubeconfigs[name], "get", "nodes", "-o", "wide")
        _kubectl(kubeconfigs[name], "get", "pods", "-A", "-o", "wide")

    _step("The clusters stay up")
    _playground("status")
    for name in CLUSTERS:
        print(f"  kubectl --kubeconfig {display_path(kubeconfigs[name])} get pods -A")
    print(
        "Stop them with `playground down` (`--keep` keeps their objects for the next `playground up`).\n"
        "Next (issues 4 and 5): install the runtime in both and peer them with `terraform apply`."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
