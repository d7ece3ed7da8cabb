"""The kernel settings kubelet changes on the host, saved before the first real node and restored after
the last one.

kubelet (`setupKernelTunables`, with `protectKernelDefaults` off, its default) sets
`vm.overcommit_memory=1`, `vm.panic_on_oom=0`, `kernel.panic=10`,
`kernel.panic_on_oops=1` and the root key quotas. They are the host's, not a node's (no
namespace holds them), and shared by every real node on the machine, whatever its state
dir or cluster: so the values found before the first real node starts are saved in
`/run/liqo-playground/kernel-tunables.json` (a reboot forgets both them and the nodes),
and written back when the last real node is removed. `machine_lock` keeps starting and
removing real nodes from racing each other over that (the caller holds it while it adds or
removes a node's mount namespace, the machine-wide list of real nodes).

Blocking (file I/O): call from a worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

#: kubelet's desired values, by /proc/sys path (pkg/kubelet/cm/container_manager_linux.go)
TUNABLES = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
REGISTRY = Path("/run/liqo-playground")
SAVED = "kernel-tunables.json"
PROC_SYS = Path("/proc/sys")


@contextlib.contextmanager
def machine_lock(registry: Path = REGISTRY) -> Iterator[None]:
    """The machine's lock over real nodes coming and going."""
    registry.mkdir(parents=True, exist_ok=True)
    with (registry / ".realnodes.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def current(proc_sys: Path = PROC_SYS) -> dict[str, str]:
    return {name: (proc_sys / name).read_text().strip() for name in TUNABLES}


def save(*, registry: Path = REGISTRY, proc_sys: Path = PROC_SYS) -> None:
    """Record the host's values unless they are recorded already (a real node runs, or ran and
    was not removed). Hold `machine_lock`."""
    saved = registry / SAVED
    if not saved.exists():
        saved.write_text(json.dumps(current(proc_sys), indent=2) + "\n")


def restore(*, registry: Path = REGISTRY, proc_sys: Path = PROC_SYS) -> dict[str, str]:
    """Write the recorded values back and forget them (no real node is left); the values changed back.
    Hold `machine_lock`."""
    saved = registry / SAVED
    try:
        values: Mapping[str, str] = json.loads(saved.read_text())
    except FileNotFoundError:
        return {}
    changed = {}
    for name, value in values.items():
        if name in TUNABLES and (proc_sys / name).read_text().strip() != value:
            (proc_sys / name).write_text(value)
            changed[name] = value
    saved.unlink()
    return changed
