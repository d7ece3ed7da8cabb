"""An API server stopped with SIGTERM while clients keep re-opening their watches exits
promptly and keeps what was written (kube-apiserver ends watches on shutdown and has
every write in etcd). This needs a server of the test's own to stop, so it is skipped
against an external cluster (`LIQO_TEST_KUBECONFIG`)."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
from kubernetes import client, watch

from tests.apiserver.conftest import api_client, start_emulator, stop_emulator

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LIQO_TEST_KUBECONFIG")), reason="stops and restarts an API server of its own"
)


def _watch_forever(core: client.CoreV1Api, stop: threading.Event) -> None:
    """Like an informer: open the watch again as soon as it ends, until told to stop."""
    while not stop.is_set():
        try:
            for _ in watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=60):
                pass
        except Exception:
            if stop.wait(0.01):
                return


def test_sigterm_ends_watches_and_keeps_every_write(tmp_path: Path) -> None:
    process, kubeconfig = start_emulator(tmp_path)
    stop = threading.Event()
    watchers: list[threading.Thread] = []
    try:
        core = client.CoreV1Api(api_client(kubeconfig))
        core.create_namespaced_config_map("default", {"metadata": {"name": "written-last"}})
        watchers = [
            threading.Thread(target=_watch_forever, args=(client.CoreV1Api(api_client(kubeconfig)), stop))
            for _ in range(4)
        ]
        for thread in watchers:
            thread.start()
        process.terminate()
        try:
            # aiohttp would otherwise wait 60 s for watches opened during shutdown
            assert process.wait(timeout=30) == 0
        except subprocess.TimeoutExpired:
            pytest.fail("the API server did not exit within 30 s of SIGTERM while clients were watching")
    finally:
        stop.set()
        if process.poll() is None:
            process.kill()
        for thread in watchers:
            thread.join()
    process, kubeconfig = start_emulator(tmp_path)
    try:
        core = client.CoreV1Api(api_client(kubeconfig))
        assert core.read_namespaced_config_map("written-last", "default").metadata.name == "written-last"
    finally:
        stop_emulator(process)
