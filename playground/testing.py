"""Playground clusters for tests and scripts, always torn down: `clusters(...)` and `aclusters(...)`.

    with playground.testing.clusters("a", "b", nodes=3) as (a, b):
        ...                              # a.kubeconfig, a.node_names, `async with a.client() as api`
    async with playground.testing.aclusters("a", nodes=3, node_monitor_grace_period=4) as (a,):
        await a.stop_node(a.node_names[1])

Clusters start in parallel in a state dir (a temporary one unless given) and are
stopped and removed when the block ends, however it ends: an exception, a failed
assertion, KeyboardInterrupt, or cancellation (teardown itself cannot be cancelled
half-way). The mode comes from the environment as for `playground up`: real binaries
when `KUBEBUILDER_ASSETS` names them (real nodes when the folder has kubelet, unless
`PLAYGROUND_AGENT_NODES` is set), else the emulator; `real_nodes=True` asks for real
nodes whatever that variable says (and fails without the binaries); `images=[archive, ...]`
loads images into real nodes. `tests/conftest.py` wraps `Playground` in the `playground`
pytest fixture.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from playground.cluster import READY_TIMEOUT, Cluster, down, resolve, up


class Clusters(Sequence[Cluster]):
    """Clusters in the order they were asked for; also indexable by name."""

    def __init__(self, items: Sequence[Cluster]) -> None:
        self._items = list(items)

    @overload
    def __getitem__(self, key: int) -> Cluster: ...

    @overload
    def __getitem__(self, key: slice) -> Sequence[Cluster]: ...

    @overload
    def __getitem__(self, key: str) -> Cluster: ...

    def __getitem__(self, key: int | slice | str) -> Cluster | Sequence[Cluster]:
        if isinstance(key, str):
            for cluster in self._items:
                if cluster.name == key:
                    return cluster
            raise KeyError(key)
        return self._items[key]

    def __len__(self) -> int:
        return len(self._items)


class Playground:
    """Clusters under one state dir; `close()` stops and removes every cluster `up` started.

    `images` (archives) are loaded into every node of each cluster `up` starts on real nodes,
    as `kind load image-archive` does after `kind create cluster`; agent nodes need none (any
    image name stands for its stand-in or runs as a process pod).
    """

    def __init__(
        self, state_dir: Path, *, environ: Mapping[str, str] | None = None, images: Sequence[Path] = ()
    ) -> None:
        self.state_dir = state_dir
        self._environ = environ
        self._images = list(images)
        self._names: list[str] = []

    async def up(
        self,
        *names: str,
        nodes: int | None = None,
        pod_cidr: str | None = None,
        service_cidr: str | None = None,
        node_monitor_grace_period: float | None = None,
        node_monitor_period: float | None = None,
        node_lease_duration: int | None = None,
        node_heartbeat: float | None = None,
        real_nodes: bool | None = None,
        wait: float = READY_TIMEOUT,
    ) -> Clusters:
        """Start clusters `names` (in parallel) and wait until they are ready.

        Settings left None take `ClusterSpec`'s defaults for a new cluster and the stored
        ones for a cluster that exists (stopped) in the state dir.
        """
        specs = resolve(
            list(names),
            state_dir=self.state_dir,
            environ=self._environ,
            nodes=nodes,
            pod_cidr=pod_cidr,
            service_cidr=service_cidr,
            node_monitor_grace_period=node_monitor_grace_period,
            node_monitor_period=node_monitor_period,
            node_lease_duration=node_lease_duration,
            node_heartbeat=node_heartbeat,
            real_nodes=real_nodes,
        )
        self._names += [name for name in names if name not in self._names]
        started = await up(specs, state_dir=self.state_dir, wait=wait)
        await asyncio.gather(*(self._load_images(cluster) for cluster in started if cluster.spec.real_nodes))
        return Clusters(started)

    async def _load_images(self, cluster: Cluster) -> None:
        for archive in self._images:
            await cluster.load_image(archive)

    async def close(self) -> None:
        names = await asyncio.to_thread(
            lambda: [name for name in self._names if (self.state_dir / name / "cluster.json").exists()]
        )
        self._names = []
        if names:
            await down(names, state_dir=self.state_dir)

    async def __aenter__(self) -> Playground:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


@contextlib.asynccontextmanager
async def aclusters(
    *names: str, state_dir: Path | None = None, images: Sequence[Path] = (), **options: Any
) -> AsyncIterator[Clusters]:
    """Clusters `names` for the block (see the module docstring); `options` are `Playground.up`'s."""
    with _state_dir(state_dir) as directory:
        async with Playground(directory, images=images) as playground:
            yield await playground.up(*names, **options)


@contextlib.contextmanager
def clusters(
    *names: str, state_dir: Path | None = None, images: Sequence[Path] = (), **options: Any
) -> Iterator[Clusters]:
    """The synchronous twin of `aclusters`, for code that runs no event loop."""
    with _state_dir(state_dir) as directory:
        playground = Playground(directory, images=images)
        try:
            yield asyncio.run(playground.up(*names, **options))
        finally:
            asyncio.run(playground.close())


@contextlib.contextmanager
def _state_dir(given: Path | None) -> Iterator[Path]:
    if given is not None:
        yield given
        return
    directory = Path(tempfile.mkdtemp(prefix="playground-"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
