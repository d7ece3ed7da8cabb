"""Liqo on playground clusters without Terraform, as the Terraform resources do it: for benches, tests and scripts.

- `install`: what `liqo_install` does: the install options from the cluster (the CIDRs it
  reports, else its spec's; the webhook by its Service, or by URL in the loopback fallback,
  which has no Services),
  `runtime.operations.install.apply`, then `install.wait_ready`; the identity it publishes;
- `issue_token`: what `liqo_generate` creates on a provider: a token, its hash in a Secret;
- `peer`: what `liqo_peer` writes on a consumer, server-side applied under the Terraform
  field manager: the token Secret and the ForeignCluster (`runtime.forge.peering`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from playground.cluster import Cluster
from playground.spec import NETNS
from runtime.api import constants as c
from runtime.api.kinds import SECRETS
from runtime.core import Client
from runtime.forge import install, tokens
from runtime.forge.reflection import ReflectionOptions
from runtime.forge.services import ServiceType
from runtime.operations import install as installer
from runtime.operations import peering

NAMESPACE = c.DEFAULT_NAMESPACE
INSTALL_SECONDS = 300.0


@dataclass(frozen=True)
class Identity:
    """What a consumer needs of a provider to peer with it (`liqo_generate`'s outputs but the token)."""

    cluster_id: str
    cluster_name: str
    auth_url: str

    @classmethod
    def from_data(cls, data: Mapping[str, str]) -> Identity:
        """From the identity ConfigMap's data the runtime publishes once it runs."""
        return cls(
            cluster_id=data[c.IDENTITY_CLUSTER_ID],
            cluster_name=data[c.IDENTITY_CLUSTER_NAME],
            auth_url=data[c.IDENTITY_AUTH_URL],
        )


def install_options(
    cluster: Cluster, cidrs: installer.Cidrs, *, cluster_labels: Mapping[str, str]
) -> install.InstallOptions:
    """`liqo_install`'s options for a playground cluster: a fresh cluster id, the webhook by its Service (by
    URL in the loopback fallback, which has no Services), the API server at the control-plane node."""
    options = install.InstallOptions(
        cluster_id=str(uuid.uuid4()),
        cluster_name=cluster.name,
        api_server_url=cluster.spec.internal_api_server_url,
        pod_cidr=cidrs.pod_cidr or cluster.spec.pod_cidr,
        service_cidr=cidrs.service_cidr or cluster.spec.service_cidr,
        cluster_labels=dict(cluster_labels),
        namespace=NAMESPACE,
        webhook_mode="service" if cluster.spec.network == NETNS else "url",
    )
    options.validate()
    return options


async def install_runtime(
    cluster: Cluster,
    *,
    cluster_labels: Mapping[str, str] | None = None,
    max_consumer_service_type: ServiceType = "ClusterIP",
    reflection: ReflectionOptions | None = None,
) -> Identity:
    """Install the runtime in `cluster` as `liqo_install` does and wait until it runs; its identity
    (`max_consumer_service_type`: as `liqo_install`'s, the widest Service type its consumers keep there;
    `reflection`: as `liqo_install`'s, what its virtual kubelets reflect, the defaults when None)."""
    async with cluster.client() as api:
        options = dataclasses.replace(
            install_options(
                cluster, await installer.discover_cidrs(api), cluster_labels=cluster_labels or {}
            ),
            max_consumer_service_type=max_consumer_service_type,
            reflection=reflection or ReflectionOptions(),
        )
        await installer.apply(
            api, options, field_manager=c.FIELD_MANAGER_TERRAFORM, progress=installer.Progress()
        )
        ready = await installer.wait_ready(api, options, seconds=INSTALL_SECONDS)
    return Identity.from_data(ready.identity)


async def issue_token(provider: Client) -> str:
    """A peering token of the provider, its hash stored there (what `liqo_generate` creates)."""
    token = tokens.generate_token()
    await provider.create(
        SECRETS,
        tokens.token_secret(token, namespace=NAMESPACE),
        namespace=NAMESPACE,
        field_manager=c.FIELD_MANAGER_TERRAFORM,
    )
    return token


async def peer(
    consumer: Client, provider: Identity, token: str, *, node_labels: Mapping[str, str] | None = None
) -> None:
    """The token Secret and the ForeignCluster on the consumer, as `liqo_peer` writes them."""
    await peering.apply_peering(
        consumer,
        provider.cluster_name,
        token=token,
        cluster_id=provider.cluster_id,
        auth_url=provider.auth_url,
        namespace=NAMESPACE,
        resources={},
        node_labels=dict(node_labels or {}),
        field_manager=c.FIELD_MANAGER_TERRAFORM,
    )
