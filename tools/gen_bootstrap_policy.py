"""Generate `playground/apiserver/data/bootstrap-policy.json.gz`: kube-apiserver's default RBAC objects.

A fresh kube-apiserver creates its bootstrap policy (plugin/pkg/auth/authorizer/rbac/
bootstrappolicy) in its `rbac/bootstrap-roles` post-start hook: the ClusterRoles and
ClusterRoleBindings of users, components, nodes and every controller of
kube-controller-manager, and a few Roles and RoleBindings in kube-system and
kube-public, all labelled `kubernetes.io/bootstrapping=rbac-defaults`. The emulator
creates the same objects, so the rules a component's identity holds are kube's own and
not a transcription. They are read from a real control plane of the release the
emulator follows (kube-apiserver with kube-controller-manager, whose clusterrole
aggregation controller fills in `admin`, `edit` and `view`), keeping only what the
bootstrap sets: name, namespace, labels, annotations, rules, aggregationRule, roleRef and
subjects.

Run by hand, not in tests, against a control plane started from the real binaries
(`KUBEBUILDER_ASSETS=<dir> playground up policy`, then `playground down policy`):

    .venv/bin/python tools/gen_bootstrap_policy.py --kubeconfig .playground/policy/kubeconfig
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

OUTPUT = (
    Path(__file__).resolve().parent.parent / "playground" / "apiserver" / "data" / "bootstrap-policy.json.gz"
)
SELECTOR = "kubernetes.io/bootstrapping=rbac-defaults"
#: in the order the emulator creates them: roles before the bindings that name them
KINDS = ("clusterroles", "clusterrolebindings", "roles", "rolebindings")
KEPT_METADATA = ("name", "namespace", "labels", "annotations")
KEPT_FIELDS = ("rules", "aggregationRule", "roleRef", "subjects")


def _bootstrap_object(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    kept: dict[str, Any] = {"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
    kept["metadata"] = {key: meta[key] for key in KEPT_METADATA if key in meta}
    kept.update({key: obj[key] for key in KEPT_FIELDS if key in obj})
    return kept


def read_policy(kubeconfig: Path) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for kind in KINDS:
        listed = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "get", kind, "-A", "-l", SELECTOR, "-o", "json"],
            check=True,
            capture_output=True,
            text=True,
        )
        items = json.loads(listed.stdout)["items"]
        items.sort(key=lambda item: (item["metadata"].get("namespace", ""), item["metadata"]["name"]))
        objects.extend(_bootstrap_object(item) for item in items)
    return objects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kubeconfig", type=Path, required=True, help="admin credentials of the control plane"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    policy = read_policy(args.kubeconfig)
    data = json.dumps(policy, indent=1, sort_keys=True).encode() + b"\n"
    args.output.write_bytes(gzip.compress(data, mtime=0))
    print(f"{args.output}: {len(policy)} objects")


if __name__ == "__main__":
    main()
