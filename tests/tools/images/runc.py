"""Run an image archive's containers with runc, as a kubelet would from a workload's pod spec.

`umoci unpack` turns the archive into a bundle (the root file system, and a runtime
config made from the image config by a tool other than ours: user, entry point,
environment, home). `Container.from_workload` then applies what a Deployment's pod spec
says, as containerd's CRI does: the user (`runAsUser`), a read-only root
(`readOnlyRootFilesystem`), the capabilities (CRI's default set, less `drop`, plus
`add`; all of them when privileged), `no_new_privs` (`allowPrivilegeEscalation: false`),
the host's network namespace (`hostNetwork`) and an empty tmpfs for each emptyDir.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import tarfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from runtime.api.objects import JSON

#: containerd 1.6's default capabilities of a container (pkg/oci defaultUnixCaps)
CRI_CAPABILITIES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
)
#: Linux's capabilities by number (linux/capability.h)
CAPABILITY_NAMES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
)
REQUIRED_TOOLS = ("umoci", "runc")
TUN = "/dev/net/tun"


def missing_tools() -> list[str]:
    return [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]


@dataclass(frozen=True)
class Container:
    """What one container runs and with which privileges."""

    args: Sequence[str]
    uid: int | None = None
    readonly: bool = False
    capabilities: Sequence[str] = CRI_CAPABILITIES
    no_new_privileges: bool = False
    host_network: bool = False
    #: the network namespace to join (a /proc/<pid>/ns/net path), instead of a new one
    network: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    #: (host path, container path) bind mounts, read-only
    binds: Sequence[tuple[Path, str]] = ()
    #: container paths of empty writable tmpfs mounts (emptyDir volumes)
    scratch: Sequence[str] = ()
    #: /proc/sys writable, nothing masked, every device allowed and /dev/net/tun there (a privileged
    #: container sees all the host's devices; the gateway uses that one)
    privileged: bool = False

    @classmethod
    def from_workload(
        cls,
        workload: JSON,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        binds: Sequence[tuple[Path, str]] = (),
        host_network: bool | None = None,
    ) -> Container:
        """The container of `workload` running `args`; `host_network` overrides the pod's."""
        pod = workload["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        context = container.get("securityContext") or {}
        pod_context = pod.get("securityContext") or {}
        uid = context.get("runAsUser", pod_context.get("runAsUser"))
        caps = _capabilities(context)
        volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
        scratch = [
            mount["mountPath"]
            for mount in container.get("volumeMounts", [])
            if "emptyDir" in volumes.get(mount["name"], {})
        ]
        return cls(
            args=args,
            uid=None if uid is None else int(uid),
            readonly=bool(context.get("readOnlyRootFilesystem")),
            capabilities=caps,
            no_new_privileges=context.get("allowPrivilegeEscalation") is False,
            host_network=bool(pod.get("hostNetwork")) if host_network is None else host_network,
            privileged=bool(context.get("privileged")),
            env=env or {},
            binds=binds,
            scratch=scratch,
        )


def current_capabilities() -> list[str]:
    """The capabilities this process may grant (its bounding set): what containerd gives a privileged container."""
    status = Path("/proc/self/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("CapBnd:")]
    mask = int(line.split()[1], 16)
    return [name for bit, name in enumerate(CAPABILITY_NAMES) if mask & (1 << bit)]


def _privileged(linux: JSON) -> None:
    linux["readonlyPaths"] = []
    linux["maskedPaths"] = []
    linux.setdefault("resources", {})["devices"] = [{"allow": True, "access": "rwm"}]
    tun = os.stat(TUN)
    linux.setdefault("devices", []).append(
        {
            "path": TUN,
            "type": "c",
            "major": os.major(tun.st_rdev),
            "minor": os.minor(tun.st_rdev),
            "fileMode": 0o666,
        }
    )


def _capabilities(context: JSON) -> list[str]:
    if context.get("privileged"):
        return current_capabilities()
    wanted = context.get("capabilities") or {}
    dropped = {f"CAP_{name}" for name in wanted.get("drop", [])}
    base = [] if "CAP_ALL" in dropped else [cap for cap in CRI_CAPABILITIES if cap not in dropped]
    return [*base, *(f"CAP_{name}" for name in wanted.get("add", []) if f"CAP_{name}" not in base)]


@dataclass
class Bundle:
    """An unpacked image: its root file system and the runtime config umoci made from the image config."""

    folder: Path
    config: JSON

    @property
    def rootfs(self) -> Path:
        return self.folder / "rootfs"

    def spec(self, container: Container) -> JSON:
        spec = copy.deepcopy(self.config)
        process = spec["process"]
        process["terminal"] = False
        process["args"] = list(container.args)
        if container.uid is not None:
            process["user"] = {"uid": container.uid, "gid": container.uid}
        process["env"] = [*process["env"], *(f"{key}={value}" for key, value in container.env.items())]
        caps = list(container.capabilities)
        process["capabilities"] = {"bounding": caps, "effective": caps, "permitted": caps}
        process["noNewPrivileges"] = container.no_new_privileges
        spec["root"] = {"path": str(self.rootfs), "readonly": container.readonly}
        namespaces = [ns for ns in spec["linux"]["namespaces"] if ns["type"] != "network"]
        if container.network is not None:
            namespaces.append({"type": "network", "path": container.network})
        elif not container.host_network:
            namespaces.append({"type": "network"})
        spec["linux"]["namespaces"] = namespaces
        if container.privileged:
            _privileged(spec["linux"])
        for source, destination in container.binds:
            spec["mounts"].append(
                {
                    "destination": destination,
                    "type": "bind",
                    "source": str(source),
                    "options": ["rbind", "ro"],
                }
            )
        for destination in container.scratch:
            spec["mounts"].append(
                {
                    "destination": destination,
                    "type": "tmpfs",
                    "source": "tmpfs",
                    "options": ["nosuid", "nodev"],
                }
            )
        return spec

    @contextmanager
    def prepared(self, container: Container, work: Path) -> Iterator[list[str]]:
        """The runc command running `container` (its own bundle folder and state under `work`)."""
        name = f"image-test-{uuid.uuid4().hex[:12]}"
        bundle = work / name
        bundle.mkdir(parents=True)
        (bundle / "config.json").write_text(json.dumps(self.spec(container)))
        state = work / "runc-state"
        try:
            yield ["runc", "--root", str(state), "run", "--bundle", str(bundle), name]
        finally:
            subprocess.run(
                ["runc", "--root", str(state), "delete", "--force", name], capture_output=True, check=False
            )
            shutil.rmtree(bundle, ignore_errors=True)

    def run(
        self, container: Container, work: Path, *, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        with self.prepared(container, work) as command:
            return subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )


def unpack(archive: Path, name: str, folder: Path) -> Bundle:
    """`umoci unpack` of the image `name` in the OCI archive, into `folder/bundle`."""
    layout = folder / "layout"
    layout.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(layout, filter="data")
    bundle = folder / "bundle"
    subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:{name}", str(bundle)], check=True, capture_output=True
    )
    shutil.rmtree(layout)
    return Bundle(bundle, json.loads((bundle / "config.json").read_text()))


def is_root() -> bool:
    return os.geteuid() == 0
