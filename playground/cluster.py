"""One playground cluster's life: create or restart it, wait until it is ready, stop it.

A cluster is a handful of processes (`spec.commands`): the API server (the emulator, or
etcd and kube-apiserver from `KUBEBUILDER_ASSETS`), the control plane (`python -m
playground.controlplane`, and kube-controller-manager / kube-scheduler when the assets
have them), one node agent and one kube-proxy per node, and the host port forwarder,
each in its node's network namespace as on kind (`spec.role_netns`; the network itself
is `playground.network.fabric`'s, made before the supervisor starts and removed after it
stopped). In the `loopback` fallback everything runs on the host's loopback addresses
instead (each node agent on an address of its own, its node's InternalIP; see
nodeagent/loopback.py), without kube-proxies. They are run by the cluster's supervisor
(`playground.supervisor`), one detached process that starts each in its namespace in
kubeadm's order, restarts one that exits, and stops them one at a time in reverse order.
Its state lives in `<state-dir>/<name>/` (see `spec.ClusterPaths`): the stored spec, the
supervisor's plan and state (`processes.json`: what runs now), logs, certificates, the
admin kubeconfig and the API server's objects, so a stopped cluster comes back with
what it held.

Real nodes (`spec.real_nodes`: containerd, kubelet and kube-proxy per node, see
playground/realnode/) also get a mount namespace and a cgroup each before the
supervisor starts, and their kubelets start held until the assets' images are in their
node's containerd; they are stopped first, with their containers, and what they made on
the host is removed before the network.

Credentials are made here before anything starts: the cluster CA (the emulator loads
the one it finds in its state dir), an admin client certificate (`kubernetes-admin`
in `system:masters`) in a kubeconfig whose context, cluster and user are all
`playground-<name>`, a kubeconfig for each component's identity (`system:kube-
controller-manager`, `system:kube-scheduler`, `system:kube-proxy`, and
`system:node:<name>` in `system:nodes` for each node agent), and in real-binary mode
the rest of the PKI. So every process can start at once; the clients among them retry
until the API server answers.

Ready means what `kind create cluster --wait` waits for, and a little more: `/readyz`
answers ok, every Node is Ready with a Lease renewed since this start and no longer
tainted not-ready (after a restart the node lifecycle controller removes that taint a
moment after Ready), the control-plane
node carries kubeadm's `node-role.kubernetes.io/control-plane` label (set here with
admin rights once it registers, as kubeadm's mark-control-plane phase does: NodeRestriction
refuses a kubelet that label), the `default` ServiceAccount exists in `default`, and
each control-plane process reports healthy.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import datetime as dt
import errno
import fcntl
import json
import logging
import os
import shutil
import signal
import socket
import ssl
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from playground import processes
from playground.addons import COREDNS_IMAGE, addons
from playground.apiserver.kubeconfig import write_kubeconfig
from playground.apiserver.pki import CA_CERT_FILE, CertificateAuthority
from playground.controlplane.__main__ import HEALTH_PORT_FILE
from playground.controlplane.components import COMPONENTS
from playground.network import fabric, netns, requirements, subnets
from playground.nodeagent import podrun
from playground.processes import ProcessRecord, read_proc
from playground.realbinary import (
    ADMIN,
    ASSETS_ENV,
    DNS_IMAGE,
    Assets,
    AssetsError,
    ClientIdentity,
    find_assets,
    generate_pki,
)
from playground.realnode import cgroups
from playground.realnode import nodes as realnodes
from playground.realnode.images import ImageError
from playground.spec import (
    APISERVER,
    CONTAINERD_ROLE_PREFIX,
    CONTROLLER_MANAGER_PORT,
    CONTROLPLANE,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    NETNS,
    NODE_PROCESS_PREFIXES,
    NODE_ROLE_PREFIX,
    SCHEDULER_PORT,
    ClusterPaths,
    ClusterSpec,
    SpecError,
    api_server_cert_hosts,
    check_specs,
    client_identities,
    cluster_network,
    commands,
    node_netns_name,
    node_plans,
    ports_of,
    supervisor_plan,
    unassigned_ports,
)
from playground.supervisor import (
    BACKOFF,
    HELD,
    SUPERVISOR,
    RoleState,
    SupervisorState,
    read_held,
    read_state,
    write_held,
    write_state,
)
from runtime.api.kinds import LEASES, NODES, SERVICEACCOUNTS
from runtime.core import AlreadyExistsError, APIError, Client, NotFoundError
from runtime.core.kubeconfig import load_kubeconfig, ssl_context

logger = logging.getLogger(__name__)

STATE_DIR_ENV = "PLAYGROUND_STATE_DIR"
#: set (to anything) to run node agents, not real nodes, with real binaries that could run real nodes
AGENT_NODES_ENV = "PLAYGROUND_AGENT_NODES"
DEFAULT_STATE_DIR = Path(".playground")
READY_TIMEOUT = 60.0
#: what kubeadm's mark-control-plane phase puts on the control-plane node
CONTROL_PLANE_LABELS = {
    "node-role.kubernetes.io/control-plane": "",
    "node.kubernetes.io/exclude-from-external-load-balancers": "",
}
NODE_LEASE_NAMESPACE = "kube-node-lease"
_POLL = 0.1
_LOG_TAIL = 15
#: a process that exited this many times since the supervisor started, and is waiting to be
#: restarted once more, is crash-looping: a readiness wait fails at once with its log
CRASH_LOOP_EXITS = 2
#: the node lifecycle controller's taints for a node that is not Ready
_NODE_LIFECYCLE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


#: what a readiness wait still waits for, given a client ("": nothing, ready)
Pending = Callable[[Client], Awaitable[list[str]]]


class ClusterError(Exception):
    """Something a user can fix: the message says what went wrong and what to do."""


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    return Path(environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    #: running (every process up) | degraded (some) | stopped (none)
    state: str
    api_server: str
    #: node agents running / nodes
    nodes: str
    kubeconfig: str
    mode: str
    #: what the supervisor says of each process (empty when it never ran)
    processes: tuple[RoleState, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "apiServer": self.api_server,
            "nodes": self.nodes,
            "kubeconfig": self.kubeconfig,
            "mode": self.mode,
            "processes": [
                {
                    "role": role.role,
                    "state": role.state,
                    "pid": role.record.pid if role.record else None,
                    "exits": role.exits,
                    "lastExit": role.last_exit,
                }
                for role in self.processes
            ],
        }


def _kubeconfig(
    spec: ClusterSpec, *, server: str, user: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes
) -> dict[str, Any]:
    """A kubeconfig like kind's: context, cluster and (for the admin) user named `playground-<name>`."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {
                "name": spec.context,
                "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)},
            }
        ],
        "contexts": [{"name": spec.context, "context": {"cluster": spec.context, "user": user}}],
        "current-context": spec.context,
    }


def port_in_use(port: int) -> bool:
    """Whether something listens on 127.0.0.1:`port` (a socket in TIME_WAIT does not count)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (held open together while they are chosen)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            probe = stack.enter_context(socket.socket())
            probe.bind(("127.0.0.1", 0))
            ports.append(int(probe.getsockname()[1]))
        return ports


def assign_addresses(specs: Sequence[ClusterSpec], *, state_dir: Path) -> list[ClusterSpec]:
    """The specs with the netns network's node addresses filled in where they are missing.

    The state dir's /24 is claimed (see playground.network.subnets), and each new node gets
    the lowest address no stored cluster of the state dir holds.
    """
    if all(spec.network != NETNS or spec.node_addresses for spec in specs):
        return list(specs)
    with subnets.lock(state_dir):
        subnet = subnets.subnet_for(state_dir)
        used = {address for cluster in clusters(state_dir) for address in cluster.spec.node_addresses}
        used |= {address for spec in specs for address in spec.node_addresses}
        assigned = []
        for spec in specs:
            if spec.network == NETNS and not spec.node_addresses:
                addresses = subnets.node_addresses(subnet, spec.nodes, used=used)
                used |= set(addresses)
                spec = dataclasses.replace(spec, node_network=subnet, node_addresses=tuple(addresses))
            assigned.append(spec)
    check_specs(assigned)
    return assigned


def assign_ports(specs: Sequence[ClusterSpec]) -> list[ClusterSpec]:
    """The specs with every port they need and lack filled in with distinct free ports."""
    wanted = [unassigned_ports(spec) for spec in specs]
    pool = iter(free_ports(sum(len(names) for names in wanted)))
    assigned = []
    for spec, names in zip(specs, wanted, strict=True):
        ports: dict[str, Any] = {name: next(pool) for name in names}
        assigned.append(dataclasses.replace(spec, **ports))
    return assigned


def _log_tail(path: str | Path, lines: int = _LOG_TAIL) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join("    " + line for line in text.splitlines()[-lines:])


def _renewed_since(lease: Mapping[str, Any], since: dt.datetime) -> bool:
    renew = (lease.get("spec") or {}).get("renewTime")
    try:
        return bool(renew) and dt.datetime.fromisoformat(str(renew)) >= since
    except ValueError:
        return False


def _is_ready(node: Mapping[str, Any]) -> bool:
    """Ready, and no longer tainted not-ready or unreachable (the node lifecycle controller removes those
    a moment after Ready: until then no pod is scheduled there)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    taints = (node.get("spec") or {}).get("taints") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) and not any(
        taint.get("key") in _NODE_LIFECYCLE_TAINTS for taint in taints
    )


class Cluster:
    """One cluster under a state dir; `__init__` does no I/O (see `load` for an existing one)."""

    def __init__(self, spec: ClusterSpec, *, state_dir: Path) -> None:
        self.spec = spec
        self.state_dir = state_dir
        self.paths = ClusterPaths(state_dir.absolute() / spec.name)

    @classmethod
    def load(cls, name: str, *, state_dir: Path) -> Cluster:
        """The cluster `name` stored under `state_dir`; ClusterError when there is none."""
        path = ClusterPaths(state_dir.absolute() / name).spec
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ClusterError(
                f"no cluster {name!r} in {state_dir}: create it with `playground up {name}`"
            ) from None
        return cls(ClusterSpec.from_json(data), state_dir=state_dir)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kubeconfig(self) -> Path:
        return self.paths.kubeconfig

    @property
    def node_names(self) -> list[str]:
        return [node.name for node in node_plans(self.spec)]

    @property
    def exists(self) -> bool:
        return self.paths.spec.exists()

    def assets(self) -> Assets | None:
        if self.spec.assets is None:
            return None
        try:
            return find_assets({ASSETS_ENV: self.spec.assets})
        except AssetsError as exc:
            raise ClusterError(f"cluster {self.name} runs real binaries, but {exc}") from None

    # what runs

    def supervisor_state(self) -> SupervisorState | None:
        """What the cluster's supervisor last wrote (None when it never ran)."""
        return read_state(self.paths.processes)

    def records(self) -> dict[str, ProcessRecord]:
        """The supervisor's record and the record of each process it runs, by role."""
        state = self.supervisor_state()
        return {record.role: record for record in state.records()} if state else {}

    def running(self) -> dict[str, bool]:
        """Each recorded process by role: whether it is still the one that was started."""
        return {role: processes.is_running(record) for role, record in self.records().items()}

    def container_pid(self, pod: Mapping[str, Any], container: str) -> int | None:
        """The local process running `container` of a pod bound to one of this cluster's nodes, or None: a
        process pod's on agent nodes; on real nodes, the container's first process (its cgroup's process
        whose parent is outside it), found by the container ID of the pod's status."""
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if not node or not uid:
            return None
        if not self.spec.real_nodes:
            return podrun.container_pid(self.paths.node(node), uid, container)
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        found = [
            str(status.get("containerID") or "") for status in statuses if status.get("name") == container
        ]
        if not found or "://" not in found[0]:
            return None
        cgroup = cgroups.node_cgroup(node_netns_name(self.spec, self.paths, node))
        pids = cgroups.container_processes(cgroup, uid, found[0].split("://", 1)[1])
        first = [pid for pid in pids if (info := read_proc(pid)) is not None and info.ppid not in pids]
        return min(first) if first else None

    # the cluster's network, from inside

    async def open_connection(
        self, host: str, port: int, *, node: str | None = None, seconds: float = 10.0
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A TCP connection to `host:port` made from inside `node`'s network namespace (default: the first
        node's), as the node itself would make it: pod addresses are routed only inside a cluster's nodes, so
        the host reaches a pod (a component's /metrics, say) only this way. With the loopback network, a plain
        connection from the host. `seconds` bounds the connect."""
        if not self.uses_netns:
            return await asyncio.open_connection(host, port)
        target = netns.path(node_netns_name(self.spec, self.paths, node or self.node_names[0]))

        def connect() -> socket.socket:
            with netns.entered(target):
                return socket.create_connection((host, port), timeout=seconds)

        # a socket keeps the namespace it was made in: the loop uses it from its own thread
        sock = await asyncio.to_thread(connect)
        sock.setblocking(False)
        return await asyncio.open_connection(sock=sock)

    async def http_get(
        self, host: str, port: int, path: str = "/", *, node: str | None = None, seconds: float = 10.0
    ) -> tuple[int, str]:
        """`GET http://host:port/path` from inside `node`'s network (`open_connection`): the status and the
        body, within `seconds`. OSError or TimeoutError when it cannot be had."""

        async def fetch() -> bytes:
            reader, writer = await self.open_connection(host, port, node=node, seconds=seconds)
            try:
                request = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
                writer.write(request.encode())
                await writer.drain()
                return await reader.read()
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

        answer = await asyncio.wait_for(fetch(), seconds)
        head, _, body = answer.partition(b"\r\n\r\n")
        try:
            status = int(head.split(b" ", 2)[1])
        except (IndexError, ValueError):
            raise OSError(f"{host}:{port}{path}: not an HTTP answer: {head[:80]!r}") from None
        return status, body.decode(errors="replace")

    def status(self) -> ClusterStatus:
        state = self.supervisor_state()
        supervised = state is not None and processes.is_running(state.supervisor)
        running = {role: up for role, up in self.running().items() if role != SUPERVISOR}
        try:
            expected = len(self._commands())
        except ClusterError:
            expected = len(running)
        up = sum(running.values())
        if not supervised and up == 0:
            phase = "stopped"
        elif supervised and up == expected:
            phase = "running"
        else:
            phase = "degraded"
        agents = sum(running.get(NODE_ROLE_PREFIX + node, False) for node in self.node_names)
        return ClusterStatus(
            name=self.name,
            state=phase,
            api_server=self.spec.api_server_url,
            nodes=f"{agents}/{self.spec.nodes}",
            kubeconfig=str(self.kubeconfig),
            mode=self.spec.mode,
            processes=state.roles if supervised and state else (),
        )

    def _commands(self) -> dict[str, list[str]]:
        return commands(self.spec, self.paths, assets=self.assets(), all_components=list(COMPONENTS))

    @property
    def uses_netns(self) -> bool:
        return self.spec.network == NETNS

    # preparation: files and credentials

    def _prepare(self) -> None:
        """Create the state dir, store the spec, make every credential that is missing, write the plan."""
        self.paths.logs.mkdir(parents=True, exist_ok=True)
        self.paths.spec.write_text(json.dumps(self.spec.as_json(), indent=2) + "\n")
        self.paths.supervisor.mkdir(exist_ok=True)
        assets = self.assets()
        plan = supervisor_plan(self.spec, self.paths, assets=assets, all_components=list(COMPONENTS))
        self.paths.plan.write_text(json.dumps(plan.as_json(), indent=2) + "\n")
        # real nodes' kubelets wait until their node's containerd has the images (`_load_node_images`)
        write_held(self.paths.held, self._kubelet_roles())
        self.paths.processes.unlink(missing_ok=True)
        (self.paths.controlplane / HEALTH_PORT_FILE).unlink(missing_ok=True)
        internal = self.spec.internal_api_server_url
        if self.spec.assets is None:
            ca = self._emulator_ca()
        else:
            ca = generate_pki(
                self.paths.pki,
                service_cidr=self.spec.service_cidr,
                identities=client_identities(self.spec),
                hosts=api_server_cert_hosts(self.spec),
                kubelets=self._real_node_addresses(),
            )
        if self.spec.real_nodes and assets is not None:
            realnodes.write_files(self.spec, self.paths, assets)
        for identity in client_identities(self.spec):
            if identity != ADMIN:
                self._write_kubeconfig(
                    self.paths.component_kubeconfig(identity), ca, identity, server=internal
                )
        self._write_kubeconfig(self.kubeconfig, ca, ADMIN, user=self.spec.context)
        self._write_kubeconfig(
            self.paths.internal_kubeconfig, ca, ADMIN, user=self.spec.context, server=internal
        )

    def _kubelet_roles(self) -> list[str]:
        return [NODE_ROLE_PREFIX + name for name in self.node_names] if self.spec.real_nodes else []

    def _real_node_addresses(self) -> dict[str, str]:
        if not self.spec.real_nodes:
            return {}
        return dict(zip(self.node_names, self.spec.node_addresses, strict=True))

    def _emulator_ca(self) -> CertificateAuthority:
        """The emulator's CA, made here first so the admin kubeconfig exists before the emulator runs."""
        pki = self.paths.apiserver / "pki"
        if (pki / CA_CERT_FILE).exists():
            return CertificateAuthority.load(pki)
        ca = CertificateAuthority.generate(f"{self.spec.context}-ca")
        ca.save(pki)
        return ca

    def _write_kubeconfig(
        self,
        path: Path,
        ca: CertificateAuthority,
        identity: ClientIdentity,
        *,
        user: str | None = None,
        server: str | None = None,
    ) -> None:
        """A kubeconfig for `identity` at `server` (default: the host's port, the user's)."""
        cert, key = ca.issue_client(identity.user, organizations=identity.groups)
        config = _kubeconfig(
            self.spec,
            server=server or self.spec.api_server_url,
            user=user or identity.user,
            ca_pem=ca.cert_pem,
            cert_pem=cert,
            key_pem=key,
        )
        write_kubeconfig(path, config)

    # start and stop

    def _check_startable(self) -> None:
        running = [role for role, up in self.running().items() if up]
        if running:
            raise ClusterError(
                f"cluster {self.name} is already running ({self.spec.api_server_url}): "
                f"stop it with `playground down {self.name}` (add --keep to keep its objects)"
            )
        busy = [f"{label} port {port}" for label, port in ports_of(self.spec).items() if port_in_use(port)]
        if busy:
            raise ClusterError(
                f"cluster {self.name}: {', '.join(busy)} on 127.0.0.1 is in use by another program; "
                "stop that program, or remove the cluster with `playground down "
                f"{self.name}` and create it again (it then gets free ports)"
            )

    async def start(self, *, wait: float = READY_TIMEOUT) -> None:
        """Start the cluster's supervisor (creating the cluster when it does not exist) and wait until
        the cluster is ready.

        On failure every process started is stopped again and ClusterError says why, with
        the tail of the log of a process that kept exiting.
        """
        await asyncio.to_thread(self._check_startable)
        since = dt.datetime.now(dt.UTC)
        created = not await asyncio.to_thread(self.paths.spec.exists)
        await asyncio.to_thread(self._prepare)
        try:
            if self.uses_netns:
                await asyncio.to_thread(fabric.create, cluster_network(self.spec, self.paths))
            if self.spec.real_nodes:
                await asyncio.to_thread(realnodes.prepare_host, self.spec, self.paths)
            await asyncio.to_thread(self._start_supervisor)
            if self.spec.real_nodes:
                await self._load_node_images(wait=wait)
            if created:
                await self._wait(_nothing_pending, wait=wait, what="the API server")
                await self._create_addons()
            await self.wait_ready(wait=wait, since=since)
        except BaseException:
            await self.stop()
            raise
        logger.info("%s: ready at %s", self.name, self.spec.api_server_url)

    async def _load_node_images(self, *, wait: float) -> None:
        """Import the assets' images (the sandbox and CoreDNS images) into every node, then start the kubelets."""
        assets = self.assets()
        archives = [image.archive for image in assets.images.values()] if assets else []
        try:
            await asyncio.to_thread(realnodes.load_images, self.spec, self.paths, archives, timeout=wait)
        except ImageError as exc:
            raise ClusterError(f"cluster {self.name}: {exc} ({self.paths.logs})") from None
        await self._release(*self._kubelet_roles())

    async def load_image(self, archive: Path) -> None:
        """Import the image archive into every node, as `kind load image-archive` does (real nodes only)."""
        if not self.spec.real_nodes:
            raise ClusterError(
                f"cluster {self.name} has no container runtime ({self.spec.mode}): images load into real "
                "nodes only (KUBEBUILDER_ASSETS with kubelet, from make real-k8s)"
            )
        if not await asyncio.to_thread(archive.is_file):
            raise ClusterError(
                f"{archive} is not a file: give the path of an image archive (docker save, OCI)"
            )
        running = await asyncio.to_thread(self.running)
        stopped = [name for name in self.node_names if not running.get(CONTAINERD_ROLE_PREFIX + name)]
        if stopped:
            raise ClusterError(
                f"cluster {self.name}: containerd is not running on {', '.join(stopped)}: start the cluster "
                f"with `playground up {self.name}`"
            )
        try:
            await asyncio.to_thread(realnodes.load_images, self.spec, self.paths, [archive], timeout=10.0)
        except ImageError as exc:
            raise ClusterError(f"cluster {self.name}: {exc}") from None

    async def _remove_network(self) -> None:
        """Remove the cluster's namespaces and links (whatever a run or a crash left), after its processes."""
        if self.uses_netns:
            await _uncancellable(asyncio.to_thread(fabric.remove, self.state_dir, self.name))

    async def _create_addons(self) -> None:
        async with self.client() as api:
            for resource, body in addons(
                cluster_name=self.name,
                pod_cidr=self.spec.pod_cidr,
                service_cidr=self.spec.service_cidr,
                real_nodes=self.spec.real_nodes,
                dns_image=self._dns_image(),
            ):
                with contextlib.suppress(AlreadyExistsError):
                    await api.create(resource, body, namespace=body["metadata"].get("namespace"))

    def _dns_image(self) -> str:
        """CoreDNS's image: the assets' on real nodes (what the nodes have), else kind's name for it."""
        assets = self.assets() if self.spec.real_nodes else None
        return assets.image(DNS_IMAGE).name if assets is not None else COREDNS_IMAGE

    def _start_supervisor(self) -> None:
        log = self.paths.log(SUPERVISOR)
        with log.open("a") as out:
            out.write(f"--- started {dt.datetime.now(dt.UTC).isoformat()}\n")
        command = [
            sys.executable,
            "-m",
            "playground.supervisor",
            "--plan",
            str(self.paths.plan),
            "--state",
            str(self.paths.processes),
            "--held",
            str(self.paths.held),
            "--log",
            str(log),
        ]
        record = processes.spawn(SUPERVISOR, command, log=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        # Until the supervisor writes its state, this is how `stop` finds it.
        write_state(self.paths.processes, SupervisorState(supervisor=record), only_if_absent=True)

    async def stop(self, *, remove: bool = False, grace: float = processes.STOP_TIMEOUT) -> None:
        """Stop every process, last started first (never one whose pid was recycled), then remove the
        cluster's network; with `remove`, delete the state.

        Real nodes go first, with their containers, as `kind delete cluster` removes its node
        containers: a pod left running would keep its watches open, and kube-apiserver waits
        for those before it exits."""
        if self.spec.real_nodes:
            await _uncancellable(self._stop_real_nodes())
        await _uncancellable(asyncio.to_thread(self._stop_all, grace))
        if self.spec.real_nodes:
            await _uncancellable(asyncio.to_thread(realnodes.remove_host, self.spec, self.paths))
        await self._remove_network()
        if remove:
            await asyncio.to_thread(shutil.rmtree, self.paths.root, True)

    async def _stop_real_nodes(self) -> None:
        """Have the supervisor stop every node's processes, then stop their containers and remove what the
        nodes made on the host (nothing to do here when the supervisor is gone: `_stop_all` stops what it left)."""
        state = await asyncio.to_thread(self.supervisor_state)
        if state is None or not processes.is_running(state.supervisor):
            return
        roles = [role.role for role in state.roles if role.role.startswith(NODE_PROCESS_PREFIXES)]
        with contextlib.suppress(ClusterError):
            await self._hold(*roles)
        await asyncio.to_thread(realnodes.remove_host, self.spec, self.paths)

    def _stop_all(self, grace: float) -> None:
        """Ask the supervisor to stop everything; stop by hand, in reverse start order, what it left."""
        state = self.supervisor_state()
        if state is None:
            return
        if processes.is_running(state.supervisor):
            # it stops each process within `grace`, one at a time
            budget = grace * (len(state.records()) + 1)
            processes.stop([state.supervisor], timeout=budget)
            state = self.supervisor_state() or state
        for record in reversed(state.records()[1:]):
            if processes.owned_processes(record):
                logger.warning("%s: %s outlived the supervisor; stopping it", self.name, record.role)
                processes.stop([record], timeout=grace)

    # operations tests need

    async def stop_node(self, name: str) -> None:
        """Stop the kubelet of `name` (SIGTERM): its Lease stops renewing; the node agent stops its pods'
        processes, a real node's containers keep running (as a kubelet's do when it stops)."""
        await self._hold(self._node_role(name))

    async def start_node(self, name: str, *, wait: float = READY_TIMEOUT) -> None:
        """Start the kubelet of `name` again and wait until its Node is Ready with a fresh Lease."""
        role = self._node_role(name)
        since = dt.datetime.now(dt.UTC)
        await self._release(role)
        await self._wait(lambda api: self._nodes_pending(api, [name], since), wait=wait, what=f"node {name}")

    async def stop_apiserver(self) -> None:
        """Stop the API server only; its objects stay (in the emulator's state dir, or in etcd)."""
        await self._hold(APISERVER)

    async def start_apiserver(self, *, wait: float = READY_TIMEOUT) -> None:
        """Start the API server again on its port and wait until `/readyz` answers ok."""
        # (in the netns network the host's port stays with the forwarder, 6443 is the node's own)
        if not self.uses_netns and await asyncio.to_thread(port_in_use, self.spec.api_server_port):
            raise ClusterError(f"cluster {self.name}: API server port {self.spec.api_server_port} is in use")
        await self._release(APISERVER)
        await self._wait(_nothing_pending, wait=wait, what="the API server")

    def _node_role(self, name: str) -> str:
        if name not in self.node_names:
            raise ClusterError(
                f"cluster {self.name} has no node {name!r} (nodes: {', '.join(self.node_names)})"
            )
        return NODE_ROLE_PREFIX + name

    async def _hold(self, *roles: str) -> None:
        """Have the supervisor stop `roles` and keep them stopped; return once they are."""
        await asyncio.to_thread(self._change_held, roles, held=True)
        deadline = time.monotonic() + (processes.STOP_TIMEOUT + 5) * len(roles)
        while True:
            state = await asyncio.to_thread(self.supervisor_state)
            running = [role for role in roles if not (state and (c := state.role(role)) and c.state == HELD)]
            if not running:
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"cluster {self.name}: {', '.join(running)} did not stop; see {self.paths.log(SUPERVISOR)}"
                )
            await asyncio.sleep(_POLL)

    async def _release(self, *roles: str) -> None:
        """Have the supervisor start `roles` again (the caller waits for what that should bring)."""
        await asyncio.to_thread(self._change_held, roles, held=False)

    def _change_held(self, roles: Collection[str], *, held: bool) -> None:
        state = self.supervisor_state()
        if state is None or not processes.is_running(state.supervisor):
            raise ClusterError(
                f"cluster {self.name} is not running: start it with `playground up {self.name}`"
            )
        with (self.paths.supervisor / ".held.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = read_held(self.paths.held)
            write_held(self.paths.held, current | set(roles) if held else current - set(roles))
        os.kill(state.supervisor.pid, signal.SIGHUP)

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        """A `runtime.core.Client` with the admin kubeconfig, closed when the block ends."""
        async with await Client.from_kubeconfig(self.kubeconfig) as api:
            yield api

    # readiness

    async def wait_ready(self, *, since: dt.datetime, wait: float = READY_TIMEOUT) -> None:
        """Wait until the whole cluster is ready (see the module docstring); ClusterError after `wait` seconds."""

        async def pending(api: Client) -> list[str]:
            waiting = await self._mark_nodes(api)
            waiting += await self._nodes_pending(api, self.node_names, since)
            try:
                await api.get(SERVICEACCOUNTS, "default", namespace="default")
            except NotFoundError:
                waiting.append("the default ServiceAccount")
            waiting += await self._control_plane_pending()
            return waiting

        await self._wait(pending, wait=wait, what=f"cluster {self.name}")

    async def _wait(self, pending: Pending, *, wait: float, what: str) -> None:
        """Poll until `/readyz` is ok and `await pending(client)` lists nothing; fail early if a process exits."""
        deadline = time.monotonic() + wait
        config = await asyncio.to_thread(load_kubeconfig, self.kubeconfig)
        tls = await asyncio.to_thread(ssl_context, config)
        waiting = ["the API server's /readyz"]
        async with aiohttp.ClientSession() as http, await Client.from_config(config) as api:
            while True:
                await asyncio.to_thread(self._check_alive)
                try:
                    if await self._api_ready(http, tls):
                        waiting = await pending(api)
                        if not waiting:
                            return
                    else:
                        waiting = ["the API server's /readyz"]
                except APIError as exc:
                    waiting = [f"the API server ({exc})"]
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"{what} not ready after {wait:g} s: still waiting for {', '.join(waiting)}; "
                        f"see the logs in {self.paths.logs}"
                    )
                await asyncio.sleep(_POLL)

    def _check_alive(self) -> None:
        state = self.supervisor_state()
        if state is None or not processes.is_running(state.supervisor):
            log = self.paths.log(SUPERVISOR)
            raise ClusterError(
                f"cluster {self.name}: its supervisor is not running; the end of {log}:\n{_log_tail(log)}"
            )
        for role in state.roles:
            if role.state == BACKOFF and role.exits >= CRASH_LOOP_EXITS:
                log = self.paths.log(role.role)
                raise ClusterError(
                    f"cluster {self.name}: the {role.role} process exited {role.exits} times (last exit code "
                    f"{role.last_exit}); the end of {log}:\n{_log_tail(log)}"
                )

    async def _api_ready(self, http: aiohttp.ClientSession, tls: ssl.SSLContext) -> bool:
        try:
            async with http.get(
                f"{self.spec.api_server_url}/readyz", ssl=tls, timeout=aiohttp.ClientTimeout(total=5)
            ) as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False

    async def _nodes_pending(self, api: Client, names: Sequence[str], since: dt.datetime) -> list[str]:
        nodes = {node["metadata"]["name"]: node for node in (await api.list(NODES)).items}
        leases = {
            lease["metadata"]["name"]: lease
            for lease in (await api.list(LEASES, namespace=NODE_LEASE_NAMESPACE)).items
        }
        return [
            f"node {name} to be Ready"
            for name in names
            if not (_is_ready(nodes.get(name, {})) and _renewed_since(leases.get(name, {}), since))
        ]

    async def _mark_nodes(self, api: Client) -> list[str]:
        """Label the control-plane node as kubeadm does, and give each real node its pod CIDR (kind's
        nodeipam would; the playground's plan is node i, the i-th /24), once they have registered; what
        is still missing."""
        waiting = []
        for node in node_plans(self.spec):
            if node.role != "control-plane" and not self.spec.real_nodes:
                continue
            try:
                current = await api.get(NODES, node.name)
            except NotFoundError:
                waiting.append(f"node {node.name} to register")
                continue
            labels = (current.get("metadata") or {}).get("labels") or {}
            patch: dict[str, Any] = {}
            if node.role == "control-plane" and any(
                labels.get(key) != value for key, value in CONTROL_PLANE_LABELS.items()
            ):
                patch["metadata"] = {"labels": dict(CONTROL_PLANE_LABELS)}
            if self.spec.real_nodes and not (current.get("spec") or {}).get("podCIDR"):
                patch["spec"] = {"podCIDR": node.pod_cidr, "podCIDRs": [node.pod_cidr]}
            if patch:
                await api.patch(NODES, node.name, patch)
        return waiting

    async def _control_plane_pending(self) -> list[str]:
        records = await asyncio.to_thread(self.records)
        pending = []
        address = self.spec.control_plane_address
        async with aiohttp.ClientSession() as http:
            if CONTROLPLANE in records:
                port_file = self.paths.controlplane / HEALTH_PORT_FILE
                port = await asyncio.to_thread(_read_port, port_file)
                if port is None or not await _healthy(http, f"http://{address}:{port}/readyz"):
                    pending.append("the control plane's /readyz")
            for role, port in (
                (
                    KUBE_CONTROLLER_MANAGER,
                    CONTROLLER_MANAGER_PORT,
                ),
                (KUBE_SCHEDULER, SCHEDULER_PORT),
            ):
                if role in records and not await _healthy(
                    http, f"https://{address}:{port}/healthz", verify=False
                ):
                    pending.append(f"{role}'s /healthz")
        return pending


async def _nothing_pending(api: Client) -> list[str]:
    return []


def _read_port(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


async def _healthy(http: aiohttp.ClientSession, url: str, *, verify: bool = True) -> bool:
    try:
        async with http.get(url, ssl=verify, timeout=aiohttp.ClientTimeout(total=5)) as response:
            return response.status == 200
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False


async def _uncancellable(awaitable: Any) -> None:
    """Finish `awaitable` even when the caller is cancelled (teardown must not stop half-way)."""
    task = asyncio.ensure_future(awaitable)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


# the playground: every cluster under one state dir


@contextlib.contextmanager
def locked(state_dir: Path, name: str) -> Iterator[None]:
    """Hold cluster `name`'s lock (another `playground up`/`down` on it fails at once)."""
    root = state_dir.absolute() / name
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClusterError(
                f"another playground command is working on cluster {name}; try again when it is done"
            ) from None
        yield


def clusters(state_dir: Path) -> list[Cluster]:
    """Every cluster stored under `state_dir`, by name."""
    if not state_dir.is_dir():
        return []
    found = []
    for entry in sorted(state_dir.iterdir()):
        if (entry / "cluster.json").is_file():
            found.append(Cluster.load(entry.name, state_dir=state_dir))
    return found


def _real_nodes_by_default(assets: Assets | None, environ: Mapping[str, str]) -> bool:
    return assets is not None and assets.runs_real_nodes and not environ.get(AGENT_NODES_ENV)


def real_nodes_by_default(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a new cluster gets real nodes unless told otherwise: `KUBEBUILDER_ASSETS` names a folder with
    what they need and `PLAYGROUND_AGENT_NODES` is not set (AssetsError when the folder is incomplete)."""
    environ = os.environ if environ is None else environ
    return _real_nodes_by_default(find_assets(environ), environ)


def resolve(
    names: Sequence[str],
    *,
    state_dir: Path,
    environ: Mapping[str, str] | None = None,
    **asked: Any,
) -> list[ClusterSpec]:
    """The spec of each named cluster: the stored one when it exists (a restart), else a new one.

    `asked` holds `ClusterSpec` fields given explicitly (None: not given). A stored
    cluster keeps its spec; asking it for something else is an error that says how to
    recreate it. New clusters use real binaries when `KUBEBUILDER_ASSETS` names them, and
    real nodes when the folder has what they need (kubelet, kube-proxy, their images),
    unless `real_nodes=False` is asked or `PLAYGROUND_AGENT_NODES` is set.
    """
    environ = os.environ if environ is None else environ
    given = {key: value for key, value in asked.items() if value is not None}
    try:
        assets = find_assets(environ)
    except AssetsError as exc:
        raise ClusterError(str(exc)) from None
    if given.get("real_nodes") and not (assets is not None and assets.runs_real_nodes):
        raise ClusterError(
            "real nodes need kubelet, kube-proxy and the sandbox and CoreDNS images: build them with "
            f"`make real-k8s` and set {ASSETS_ENV} to its folder"
        )
    defaults = {"real_nodes": _real_nodes_by_default(assets, environ)}
    new_specs = [
        ClusterSpec(name=name, assets=str(assets.directory) if assets else None, **{**defaults, **given})
        for name in names
    ]
    check_specs(new_specs)
    specs = []
    problems = []
    for name, new in zip(names, new_specs, strict=True):
        stored_path = ClusterPaths(state_dir.absolute() / name).spec
        if not stored_path.exists():
            specs.append(new)
            continue
        stored = ClusterSpec.from_json(json.loads(stored_path.read_text()))
        for key, value in given.items():
            if getattr(stored, key) != value:
                problems.append(
                    f"cluster {name} exists with {key.replace('_', '-')} {getattr(stored, key)}; to change it "
                    f"to {value}, remove it with `playground down {name}` first"
                )
        specs.append(stored)
    if problems:
        raise SpecError(problems)
    return specs


@contextlib.asynccontextmanager
async def _locked_all(state_dir: Path, names: Sequence[str]) -> AsyncIterator[None]:
    """`locked` for each name, taken and released off the event loop."""
    locks = contextlib.ExitStack()

    def take() -> None:
        for name in names:
            locks.enter_context(locked(state_dir, name))

    try:
        await asyncio.to_thread(take)
        yield
    finally:
        await asyncio.to_thread(locks.close)


async def up(specs: Sequence[ClusterSpec], *, state_dir: Path, wait: float = READY_TIMEOUT) -> list[Cluster]:
    """Start (create or restart) every cluster in parallel and wait until all are ready.

    Raises ClusterError naming each cluster that failed (the others stay up).
    """
    check_specs(specs)
    if any(spec.network == NETNS for spec in specs):
        real_nodes = any(spec.real_nodes for spec in specs)
        missing = await asyncio.to_thread(requirements.problems, real_nodes=real_nodes)
        if missing:
            raise ClusterError("cannot start the playground network: " + "; ".join(missing))
    async with _locked_all(state_dir, [spec.name for spec in specs]):
        for spec in specs:
            await asyncio.to_thread(Cluster(spec, state_dir=state_dir)._check_startable)
        ported = await asyncio.to_thread(assign_ports, specs)
        addressed = await asyncio.to_thread(assign_addresses, ported, state_dir=state_dir)
        started = [Cluster(spec, state_dir=state_dir) for spec in addressed]
        results = await asyncio.gather(
            *(cluster.start(wait=wait) for cluster in started), return_exceptions=True
        )
    failures = []
    for result in results:
        if isinstance(result, ClusterError | SpecError):
            failures.append(str(result))
        elif isinstance(result, BaseException):
            raise result
    if failures:
        raise ClusterError("\n".join(failures))
    return started


async def down(
    names: Sequence[str], *, state_dir: Path, keep: bool = False, grace: float = processes.STOP_TIMEOUT
) -> list[str]:
    """Stop the named clusters (every cluster when none is named); remove their state unless `keep`."""

    def choose() -> list[Cluster]:
        if names:
            return [Cluster.load(name, state_dir=state_dir) for name in dict.fromkeys(names)]
        return clusters(state_dir)

    chosen = await asyncio.to_thread(choose)
    async with _locked_all(state_dir, [cluster.name for cluster in chosen]):
        await asyncio.gather(*(cluster.stop(remove=not keep, grace=grace) for cluster in chosen))
    return [cluster.name for cluster in chosen]
