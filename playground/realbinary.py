"""Real-binary mode: run etcd and kube-apiserver (and kube-controller-manager / kube-scheduler
when present) from `KUBEBUILDER_ASSETS` instead of the API server emulator.

The folder follows the envtest convention (`setup-envtest use -p path`; `make real-k8s`
builds one, see tools/realk8s/build.py). What this module does is pure, so it is
unit-tested without the binaries: find the assets, lay out and generate the PKI with
`cryptography`, and build each command line. The processes run in the control-plane
node's network namespace (see `playground.spec`): kube-apiserver on all its addresses
(port 6443), advertising the node's address, kube-controller-manager and kube-scheduler
on the node's address, etcd on its loopback (plain HTTP, as under envtest) with its
metrics listener, where the supervisor probes it, on the node's address.

The PKI and the flags are kubeadm's (`cmd/kubeadm/app/phases/controlplane/manifests.go`
of v1.36), with kubeadm's file names under `<cluster>/pki/`: the cluster CA, the API
server's serving certificate, its kubelet-client certificate, the ServiceAccount key pair,
the front-proxy CA and the API server's front-proxy client certificate (so the
`--requestheader-*` flags, and the `extension-apiserver-authentication` ConfigMap the
controller manager and the scheduler read, are complete), and a client certificate per
component and node. kube-apiserver also routes calls to Services (admission webhooks,
aggregated APIs) to their endpoints (`--enable-aggregator-routing=true`), since the node
it runs on resolves no Service name.

Authorization is `Node,RBAC` and NodeRestriction is on, as kubeadm sets up kind's
API server: every node agent gets a client certificate for `system:node:<name>` in group
`system:nodes`, so the Node authorizer limits it to its own Node, Lease, pods and the
Secrets/ConfigMaps/tokens they use, and NodeRestriction to writing its own objects (the
playground labels the control-plane node with `node-role.kubernetes.io/control-plane`
with admin rights, as kubeadm does). The components get the identities the bootstrap
policy binds: `system:kube-controller-manager`, `system:kube-scheduler`, and
`system:kube-proxy` for each node's kube-proxy (`playground.kubeproxy`, with
`system:node-proxier`'s rights). The emulator's clusters use the same identities.

The folder may also hold what real nodes need (`make real-k8s` builds it all): kubelet,
kube-proxy, kubectl, and the images its `versions.json` lists (the sandbox and CoreDNS
images, OCI archives). A real node's kubelet gets a serving certificate from the cluster
CA for its name and address; kube-apiserver reaches kubelets at their InternalIP only and,
as kubeadm's (kind's) does, without verifying their serving certificates: a virtual
kubelet serves `kubectl logs` and `exec` of offloaded pods with a self-signed one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from playground.apiserver.pki import CertificateAuthority, write_file_atomically
from playground.controlplane.components import CONTROLLERS
from playground.controlplane.components import SCHEDULER as SCHEDULER_COMPONENT

ASSETS_ENV = "KUBEBUILDER_ASSETS"
MASTERS_GROUP = "system:masters"
NODES_GROUP = "system:nodes"
ADMIN_USER = "kubernetes-admin"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
#: names the serving certificate is valid for, besides the first Service IP (kubeadm's list, on loopback)
API_SERVER_HOSTS = (
    "127.0.0.1",
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
CERT_DAYS = 3650


class AssetsError(ValueError):
    """`KUBEBUILDER_ASSETS` is set but does not name a usable folder."""


#: what `make real-k8s` writes beside the binaries (tools/realk8s/build.py): versions and images
MANIFEST = "versions.json"
#: the images real nodes import into their containerd, by the manifest's key
SANDBOX_IMAGE = "pause"
DNS_IMAGE = "coredns"


@dataclass(frozen=True)
class ImageArchive:
    """An OCI archive of the assets folder and the name `ctr images import` gives its image."""

    name: str
    archive: Path


@dataclass(frozen=True)
class Assets:
    """The binaries of one `KUBEBUILDER_ASSETS` folder; the optional ones are None when absent."""

    directory: Path
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path | None = None
    kube_scheduler: Path | None = None
    kubelet: Path | None = None
    kube_proxy: Path | None = None
    kubectl: Path | None = None
    #: the images real nodes need (the sandbox image, CoreDNS's), by the manifest's key
    images: Mapping[str, ImageArchive] = dataclasses.field(default_factory=dict)

    @property
    def runs_real_nodes(self) -> bool:
        """Whether the folder has what real nodes need: kubelet, kube-proxy, the sandbox and DNS images."""
        return (
            self.kubelet is not None
            and self.kube_proxy is not None
            and SANDBOX_IMAGE in self.images
            and DNS_IMAGE in self.images
        )

    def image(self, key: str) -> ImageArchive:
        try:
            return self.images[key]
        except KeyError:
            raise AssetsError(
                f"{self.directory} has no {key} image: build the folder again with `make real-k8s`"
            ) from None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _images(directory: Path) -> dict[str, ImageArchive]:
    """The images the folder's manifest lists whose archive is there (none without a manifest)."""
    try:
        listed = json.loads((directory / MANIFEST).read_text()).get("images") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    found = {}
    for key, entry in listed.items() if isinstance(listed, dict) else ():
        if (
            isinstance(entry, dict)
            and entry.get("name")
            and (directory / str(entry.get("archive"))).is_file()
        ):
            found[str(key)] = ImageArchive(name=str(entry["name"]), archive=directory / str(entry["archive"]))
    return found


def find_assets(environ: Mapping[str, str]) -> Assets | None:
    """The assets `KUBEBUILDER_ASSETS` names, None when it is unset or empty (the emulator is used)."""
    value = environ.get(ASSETS_ENV, "")
    if not value:
        return None
    directory = Path(value)
    missing = [name for name in ("etcd", "kube-apiserver") if not _executable(directory / name)]
    if missing:
        raise AssetsError(
            f"{ASSETS_ENV}={value} has no executable {' or '.join(missing)}: point it at a folder "
            "with etcd and kube-apiserver (setup-envtest use -p path), or unset it to use the emulator"
        )

    def optional(name: str) -> Path | None:
        return directory / name if _executable(directory / name) else None

    return Assets(
        directory=directory,
        etcd=directory / "etcd",
        kube_apiserver=directory / "kube-apiserver",
        kube_controller_manager=optional("kube-controller-manager"),
        kube_scheduler=optional("kube-scheduler"),
        kubelet=optional("kubelet"),
        kube_proxy=optional("kube-proxy"),
        kubectl=optional("kubectl"),
        images=_images(directory),
    )


def replaced_components(assets: Assets) -> list[str]:
    """Our control-plane components that the assets' binaries run already (so ours must not)."""
    replaced: list[str] = []
    if assets.kube_scheduler is not None:
        replaced.append(SCHEDULER_COMPONENT)
    if assets.kube_controller_manager is not None:
        replaced.extend(CONTROLLERS)
    return replaced


def first_service_ip(service_cidr: str) -> str:
    """The `kubernetes` Service's ClusterIP: the first address of the Service CIDR."""
    network = ipaddress.ip_network(service_cidr, strict=False)
    return str(network.network_address + 1)


@dataclass(frozen=True)
class Pki:
    """Where one cluster's certificates and keys live (`<cluster>/pki`)."""

    directory: Path

    def _file(self, name: str) -> Path:
        return self.directory / name

    @property
    def ca_cert(self) -> Path:
        return self._file("ca.crt")

    @property
    def ca_key(self) -> Path:
        return self._file("ca.key")

    @property
    def apiserver_cert(self) -> Path:
        return self._file("apiserver.crt")

    @property
    def apiserver_key(self) -> Path:
        return self._file("apiserver.key")

    @property
    def kubelet_client_cert(self) -> Path:
        return self._file("apiserver-kubelet-client.crt")

    @property
    def kubelet_client_key(self) -> Path:
        return self._file("apiserver-kubelet-client.key")

    @property
    def front_proxy_ca_cert(self) -> Path:
        return self._file("front-proxy-ca.crt")

    @property
    def front_proxy_client_cert(self) -> Path:
        return self._file("front-proxy-client.crt")

    @property
    def front_proxy_client_key(self) -> Path:
        return self._file("front-proxy-client.key")

    @property
    def sa_key(self) -> Path:
        return self._file("sa.key")

    @property
    def sa_pub(self) -> Path:
        return self._file("sa.pub")

    def client_cert(self, user: str) -> Path:
        return self._file(f"{_file_name(user)}.crt")

    def kubelet_serving_cert(self, node: str) -> Path:
        """A real node's kubelet serving certificate (kube-apiserver verifies it with the cluster CA)."""
        return self._file(f"kubelet-{node}.crt")

    def kubelet_serving_key(self, node: str) -> Path:
        return self._file(f"kubelet-{node}.key")

    def client_key(self, user: str) -> Path:
        return self._file(f"{_file_name(user)}.key")


def _file_name(user: str) -> str:
    return user.replace(":", "-")


@dataclass(frozen=True)
class ClientIdentity:
    """A user with a client certificate: CN `user`, O `groups`."""

    user: str
    groups: tuple[str, ...] = ()


def node_identity(node: str) -> ClientIdentity:
    return ClientIdentity(f"system:node:{node}", (NODES_GROUP,))


ADMIN = ClientIdentity(ADMIN_USER, (MASTERS_GROUP,))
CONTROLLER_MANAGER = ClientIdentity("system:kube-controller-manager")
SCHEDULER = ClientIdentity("system:kube-scheduler")
#: kube-apiserver's bootstrap policy binds this user to `system:node-proxier` (kube-proxy's rights)
KUBE_PROXY = ClientIdentity("system:kube-proxy")
KUBELET_CLIENT = ClientIdentity("kube-apiserver-kubelet-client", (MASTERS_GROUP,))
#: the API server's identity when it proxies to aggregated API servers (the only name they accept)
FRONT_PROXY_CLIENT = ClientIdentity("front-proxy-client")
FRONT_PROXY_CA = "front-proxy-ca"


def generate_pki(
    pki: Pki,
    *,
    service_cidr: str,
    identities: Sequence[ClientIdentity],
    hosts: Sequence[str] = (),
    kubelets: Mapping[str, str] | None = None,
) -> CertificateAuthority:
    """Create what is missing under `pki.directory` (a restart keeps the CA, keys and certificates).

    `hosts` are more names and addresses for the serving certificate (kubeadm's certSANs:
    the control-plane node's name and address). `kubelets` are real nodes (name: address),
    each of which gets a serving certificate for its kubelet API, for its name and address.
    """
    if pki.ca_cert.exists():
        ca = CertificateAuthority.load(pki.directory)
    else:
        ca = CertificateAuthority.generate("playground-ca", days=CERT_DAYS)
        ca.save(pki.directory)
    if not pki.apiserver_cert.exists():
        cert, key = ca.issue_server(
            hosts=[*API_SERVER_HOSTS, first_service_ip(service_cidr), *hosts], days=CERT_DAYS
        )
        write_file_atomically(pki.apiserver_key, key)
        write_file_atomically(pki.apiserver_cert, cert, mode=0o644)
    if not pki.kubelet_client_cert.exists():
        cert, key = ca.issue_client(KUBELET_CLIENT.user, organizations=KUBELET_CLIENT.groups, days=CERT_DAYS)
        write_file_atomically(pki.kubelet_client_key, key)
        write_file_atomically(pki.kubelet_client_cert, cert, mode=0o644)
    if pki.front_proxy_ca_cert.exists():
        front_proxy_ca = CertificateAuthority.load(pki.directory, stem=FRONT_PROXY_CA)
    else:
        front_proxy_ca = CertificateAuthority.generate(FRONT_PROXY_CA, days=CERT_DAYS)
        front_proxy_ca.save(pki.directory, stem=FRONT_PROXY_CA)
    if not pki.front_proxy_client_cert.exists():
        cert, key = front_proxy_ca.issue_client(FRONT_PROXY_CLIENT.user, days=CERT_DAYS)
        write_file_atomically(pki.front_proxy_client_key, key)
        write_file_atomically(pki.front_proxy_client_cert, cert, mode=0o644)
    for node, address in (kubelets or {}).items():
        if not pki.kubelet_serving_cert(node).exists():
            cert, key = ca.issue_server(hosts=[node, address], days=CERT_DAYS)
            write_file_atomically(pki.kubelet_serving_key(node), key)
            write_file_atomically(pki.kubelet_serving_cert(node), cert, mode=0o644)
    for identity in identities:
        if not pki.client_cert(identity.user).exists():
            cert, key = ca.issue_client(identity.user, organizations=identity.groups, days=CERT_DAYS)
            write_file_atomically(pki.client_key(identity.user), key)
            write_file_atomically(pki.client_cert(identity.user), cert, mode=0o644)
    if not pki.sa_key.exists():
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        write_file_atomically(
            pki.sa_key,
            private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            ),
        )
        public = private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        write_file_atomically(pki.sa_pub, public, mode=0o644)
    return ca


def etcd_command(
    assets: Assets, *, data_dir: Path, client_port: int, peer_port: int, metrics_url: str | None = None
) -> list[str]:
    """etcd on loopback; `metrics_url` is a listener for `/metrics` and the health endpoints only
    (kubeadm's `--listen-metrics-urls`, where its probes ask `/readyz`)."""
    client_url = f"http://127.0.0.1:{client_port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    command = [
        str(assets.etcd),
        "--name=playground",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=playground={peer_url}",
        "--unsafe-no-fsync=true",
    ]
    if metrics_url is not None:
        command.append(f"--listen-metrics-urls={metrics_url}")
    return command


def apiserver_command(
    assets: Assets,
    *,
    pki: Pki,
    etcd_port: int,
    port: int,
    service_cidr: str,
    advertise_address: str = "127.0.0.1",
    bind_address: str = "127.0.0.1",
    real_nodes: bool = False,
) -> list[str]:
    """kube-apiserver's command line; with `real_nodes` it reaches kubelets at their InternalIP only (with no
    `--kubelet-certificate-authority`, as kubeadm's: virtual kubelets serve self-signed certificates)."""
    kubelets = (
        ["--kubelet-preferred-address-types=InternalIP"]
        if real_nodes
        else ["--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname"]
    )
    return [
        str(assets.kube_apiserver),
        f"--advertise-address={advertise_address}",
        f"--bind-address={bind_address}",
        f"--secure-port={port}",
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        f"--service-cluster-ip-range={service_cidr}",
        f"--client-ca-file={pki.ca_cert}",
        f"--tls-cert-file={pki.apiserver_cert}",
        f"--tls-private-key-file={pki.apiserver_key}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--enable-bootstrap-token-auth=true",
        f"--kubelet-client-certificate={pki.kubelet_client_cert}",
        f"--kubelet-client-key={pki.kubelet_client_key}",
        *kubelets,
        "--allow-privileged=true",
        # the front proxy (kubeadm's values): who may assert a user in X-Remote-* headers
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--requestheader-client-ca-file={pki.front_proxy_ca_cert}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT.user}",
        f"--proxy-client-cert-file={pki.front_proxy_client_cert}",
        f"--proxy-client-key-file={pki.front_proxy_client_key}",
        # webhooks and aggregated APIs behind a Service are called at an endpoint's address
        "--enable-aggregator-routing=true",
    ]


def _duration(seconds: float) -> str:
    """A Go duration flag value (`2.5s`)."""
    return f"{dt.timedelta(seconds=seconds).total_seconds():g}s"


def controller_manager_command(
    assets: Assets,
    *,
    pki: Pki,
    kubeconfig: Path,
    port: int,
    cluster_name: str,
    bind_address: str = "127.0.0.1",
    service_cidr: str,
    pod_cidr: str,
    node_monitor_grace_period: float | None = None,
    node_monitor_period: float | None = None,
) -> list[str]:
    if assets.kube_controller_manager is None:
        raise AssetsError(f"{assets.directory} has no kube-controller-manager")
    command = [
        str(assets.kube_controller_manager),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={bind_address}",
        f"--secure-port={port}",
        "--leader-elect=false",
        f"--cluster-name={cluster_name}",
        "--controllers=*,bootstrapsigner,tokencleaner",
        # Unlike kubeadm's: each node's podCIDR is the playground's plan (node i, the i-th /24 of the pod
        # CIDR), which its agent registers, in both modes; nodeipam would hand them out in registration order.
        "--allocate-node-cidrs=false",
        f"--cluster-cidr={pod_cidr}",
        f"--service-cluster-ip-range={service_cidr}",
        f"--root-ca-file={pki.ca_cert}",
        f"--client-ca-file={pki.ca_cert}",
        f"--requestheader-client-ca-file={pki.front_proxy_ca_cert}",
        f"--cluster-signing-cert-file={pki.ca_cert}",
        f"--cluster-signing-key-file={pki.ca_key}",
        f"--service-account-private-key-file={pki.sa_key}",
        "--use-service-account-credentials=true",
    ]
    if node_monitor_grace_period is not None:
        command.append(f"--node-monitor-grace-period={_duration(node_monitor_grace_period)}")
    if node_monitor_period is not None:
        command.append(f"--node-monitor-period={_duration(node_monitor_period)}")
    return command


def scheduler_command(
    assets: Assets, *, kubeconfig: Path, port: int, bind_address: str = "127.0.0.1"
) -> list[str]:
    if assets.kube_scheduler is None:
        raise AssetsError(f"{assets.directory} has no kube-scheduler")
    return [
        str(assets.kube_scheduler),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={bind_address}",
        f"--secure-port={port}",
        "--leader-elect=false",
    ]
