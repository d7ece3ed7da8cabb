"""Offloaded pods' ServiceAccount tokens on real playground clusters: each pod reads its mounted token.

rome (consumer) peers with milan (provider), set up as the Terraform resources do it
(`playground.liqo`), and offloads `apps` (Remote: every pod on liqo-milan). Two pods of the
runtime's image run a probe that reads the token its projected volume mounted and asks the
API server its environment names who it is (a SelfSubjectReview with that token, trusting
the mounted CA), again each time the token file changes:

- without annotation (the installation's TokenAPI) the answer comes from rome, as the
  pod's own ServiceAccount in its home namespace; once the token Secret falls due, the
  virtual kubelet writes new tokens, milan's kubelet projects them into the running pod,
  and the new token is accepted by rome too;
- with `liqo.io/api-server-support: remote` it comes from milan, as the `default`
  ServiceAccount of the twin namespace.

The probes print the reviewed user name and a running count, never the token.
"""

from __future__ import annotations

import functools

import pytest

from playground import liqo
from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.image import runtime_image
from runtime.api.kinds import PODS, SECRETS
from runtime.api.objects import JSON
from runtime.forge.serviceaccounts import token_secret_name

from .test_playground_offloading import get, kubectl, offload, rome_and_milan, until, virtual_node_ready

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

NAMESPACE, TWIN = "apps", "apps-rome"

PROBE = """
import json, os, ssl, time, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
seen, reviews = None, 0
while True:
    token = open(f"{sa}/token").read()
    if token != seen:
        body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode()
        request = urllib.request.Request(
            f"https://{host}:{port}/apis/authentication.k8s.io/v1/selfsubjectreviews", data=body, method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        context = ssl.create_default_context(cafile=f"{sa}/ca.crt")
        try:
            user = json.load(urllib.request.urlopen(request, context=context))["status"]["userInfo"]["username"]
        except Exception as exc:
            user = f"refused ({exc})"
        reviews += 1
        print(f"review {reviews} user {user}", flush=True)
        seen = token
    time.sleep(0.5)
"""


def probe(name: str, **annotations: str) -> JSON:
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "containers": [{"name": "probe", "image": runtime_image(), "command": ["python", "-c", PROBE]}]
        },
    }


async def test_offloaded_pods_authenticate_with_their_mounted_tokens(playground: Playground) -> None:
    rome_cluster, milan_cluster, milan_identity = await rome_and_milan(playground)
    async with rome_cluster.client() as rome, milan_cluster.client() as milan:
        await liqo.peer(rome, milan_identity, await liqo.issue_token(milan))
        await until(functools.partial(virtual_node_ready, rome, "liqo-milan"), "rome: node liqo-milan Ready")
        await offload(rome, NAMESPACE, pod_offloading_strategy="Remote")
        await rome.create(PODS, probe("home"), namespace=NAMESPACE)
        await rome.create(
            PODS,
            probe("remote", **{c.ANNOTATION_API_SERVER_SUPPORT: c.API_SERVER_SUPPORT_REMOTE}),
            namespace=NAMESPACE,
        )

        async def logged(name: str, line: str) -> str | None:
            pod = await get(rome, PODS, name, namespace=NAMESPACE)
            if ((pod or {}).get("status") or {}).get("phase") != "Running":
                return None
            text = await kubectl(rome_cluster.kubeconfig, "logs", "-n", NAMESPACE, name)
            return text if line in text else None

        home = await until(lambda: logged("home", "review 1 "), "home: the probe reviewed its token")
        assert f"review 1 user system:serviceaccount:{NAMESPACE}:default" in home, home
        remote = await until(lambda: logged("remote", "review 1 "), "remote: the probe reviewed its token")
        assert f"review 1 user system:serviceaccount:{TWIN}:default" in remote, remote
        assert await get(milan, SECRETS, token_secret_name("remote"), namespace=TWIN) is None

        # the home pod's tokens fall due (the Secret says when): new ones reach the running pod and work at home
        await milan.patch(
            SECRETS,
            token_secret_name("home"),
            {"metadata": {"annotations": {c.ANNOTATION_TOKEN_REFRESH_AT: "2001-01-01T00:00:00Z"}}},
            namespace=TWIN,
        )
        rotated = await until(
            lambda: logged("home", "review 2 "), "home: the probe reviewed its new token", within=240
        )
        assert f"review 2 user system:serviceaccount:{NAMESPACE}:default" in rotated, rotated
