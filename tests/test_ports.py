"""tests/ports.py: ports picked for later lie where the kernel hands none out to anyone else."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.ports import LOWEST, ephemeral_range, free_port


def test_a_free_port_is_below_the_ephemeral_range_and_nothing_listens_there() -> None:
    low, _ = ephemeral_range()
    port = free_port()
    assert LOWEST <= port < low
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))


def test_the_ephemeral_range_is_read_from_the_kernel_setting(tmp_path: Path) -> None:
    setting = tmp_path / "ip_local_port_range"
    setting.write_text("40000\t60999\n")
    assert ephemeral_range(setting) == (40000, 60999)


def test_no_room_below_the_ephemeral_range_is_an_error_naming_the_setting() -> None:
    with pytest.raises(RuntimeError, match=r"ephemeral port range starts at 1024 \(/proc/sys/net/ipv4/"):
        free_port(ephemeral=(1024, 65535))


def test_an_emulator_restarts_on_a_port_no_other_process_was_handed_meanwhile(tmp_path: Path) -> None:
    """The virtual kubelet's provider restarts on its port (tests/runtime/virtualkubelet/conftest.py): were that
    port from the ephemeral range, another worker's server or any outgoing connection could hold it by then."""
    process, kubeconfig = start_emulator(tmp_path)
    try:
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    finally:
        stop_emulator(process)
    assert int(server.rsplit(":", 1)[1]) < ephemeral_range()[0], server
