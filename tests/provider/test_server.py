"""The plugin process as Terraform sees it: cookie, handshake, TLS, stop during apply, shutdown, $HOME.

Each test starts `provider.server.serve` in a subprocess (the fake provider of
`fake.py`) and talks to it over its unix socket as go-plugin does.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from tf.gen import grpc_controller_pb2 as controller_pb
from tf.gen import grpc_controller_pb2_grpc as controller_rpc
from tf.gen import tfplugin_pb2 as pb
from tf.gen import tfplugin_pb2_grpc as provider_rpc
from tf.types import Unknown
from tf.utils import read_dynamic_value, to_dynamic_value

from provider.server import MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE, NOT_A_PLUGIN, _HclogFormatter

REPO = Path(__file__).resolve().parents[2]
FAKE = [sys.executable, "-c", "from tests.provider.fake import main; main()"]


@dataclass
class Plugin:
    process: subprocess.Popen[str]
    provider: provider_rpc.ProviderStub
    controller: controller_rpc.GRPCControllerStub
    socket: Path


def _environment(home: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(home.parent), **extra}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def plugin(home: Path) -> Iterator[Plugin]:
    process = subprocess.Popen(
        FAKE,
        cwd=REPO,
        env=_environment(home, **{MAGIC_COOKIE_KEY: MAGIC_COOKIE_VALUE}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        handshake = process.stdout.readline().strip()
        core, protocol, network, address, kind, certificate = handshake.split("|")
        assert (core, protocol, network, kind) == ("1", "6", "unix", "grpc")
        der = base64.b64decode(certificate + "=" * (-len(certificate) % 4))
        credentials = grpc.ssl_channel_credentials(root_certificates=ssl.DER_cert_to_PEM_cert(der).encode())
        channel = grpc.secure_channel(
            f"unix:{address}", credentials, options=[("grpc.ssl_target_name_override", "localhost")]
        )
        with channel:
            yield Plugin(
                process,
                provider_rpc.ProviderStub(channel),
                controller_rpc.GRPCControllerStub(channel),
                Path(address),
            )
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _create(plugin: Plugin, marker: Path, **values: Any) -> Any:
    planned = {"marker": str(marker), "wait_seconds": 30, "secret": None, "outcome": Unknown, **values}
    config = {**planned, "outcome": None, **values}
    return plugin.provider.ApplyResourceChange(
        pb.ApplyResourceChange.Request(
            type_name="liqo_slow",
            prior_state=to_dynamic_value(None),
            planned_state=to_dynamic_value(planned),
            config=to_dynamic_value(config),
        ),
        timeout=60,
    )


def _wait_for(condition: Any, *, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_without_the_magic_cookie_it_says_it_is_a_plugin_and_exits_1(home: Path) -> None:
    result = subprocess.run(
        FAKE, cwd=REPO, env=_environment(home), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr == NOT_A_PLUGIN
    assert result.stdout == ""


def test_with_a_wrong_cookie_it_refuses_too(home: Path) -> None:
    env = _environment(home, **{MAGIC_COOKIE_KEY: "not-the-cookie"})
    result = subprocess.run(FAKE, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (1, NOT_A_PLUGIN)


def test_schema_is_served_over_tls_and_shutdown_exits_cleanly(plugin: Plugin, home: Path) -> None:
    schema = plugin.provider.GetProviderSchema(pb.GetProviderSchema.Request(), timeout=30)
    assert "liqo_slow" in schema.resource_schemas
    assert schema.server_capabilities.plan_destroy

    plugin.controller.Shutdown(controller_pb.Empty(), timeout=30)

    assert plugin.process.wait(timeout=30) == 0
    assert not plugin.socket.parent.exists(), "the socket's private directory is removed at exit"
    assert list(home.iterdir()) == [], "nothing is written under $HOME"


def test_stop_during_apply_lets_the_apply_finish_and_return_its_state(plugin: Plugin, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    result: list[Any] = []
    apply = threading.Thread(target=lambda: result.append(_create(plugin, marker, secret="s3cr3t")))
    apply.start()
    _wait_for(lambda: marker.exists())

    stop = plugin.provider.StopProvider(pb.StopProvider.Request(), timeout=30)
    assert stop.Error == ""
    apply.join(timeout=60)

    (response,) = result
    assert list(response.diagnostics) == []
    state = read_dynamic_value(response.new_state)
    assert state["outcome"] == "stopped=True secret=set"
    assert state["secret"] is None, "write-only values never reach the state"
    assert marker.read_text() == "finished"
    assert plugin.process.poll() is None, "a stop request does not end the process"


def test_shutdown_waits_for_the_apply_in_flight(plugin: Plugin, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    result: list[Any] = []
    apply = threading.Thread(target=lambda: result.append(_create(plugin, marker, wait_seconds=1)))
    apply.start()
    _wait_for(lambda: marker.exists())

    plugin.controller.Shutdown(controller_pb.Empty(), timeout=30)
    apply.join(timeout=60)

    (response,) = result
    assert read_dynamic_value(response.new_state)["outcome"] == "stopped=False secret=unset"
    assert plugin.process.wait(timeout=30) == 0


def test_sigint_does_not_interrupt_the_provider(plugin: Plugin, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    result: list[Any] = []
    apply = threading.Thread(target=lambda: result.append(_create(plugin, marker, wait_seconds=1)))
    apply.start()
    _wait_for(lambda: marker.exists())

    plugin.process.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends the process group
    apply.join(timeout=60)

    (response,) = result
    assert read_dynamic_value(response.new_state)["outcome"].startswith("stopped=False")
    assert plugin.process.poll() is None


def test_log_lines_have_the_timestamp_layout_go_plugin_parses() -> None:
    """go-plugin files a line whose `@timestamp` is not `2006-01-02T15:04:05.000000Z07:00` whole at DEBUG."""
    record = logging.LogRecord(
        "runtime.operations.waits", logging.INFO, __file__, 1, "waiting for %s", ("x",), None
    )
    entry = json.loads(_HclogFormatter().format(record))

    assert entry["@level"] == "info" and entry["@message"] == "waiting for x"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", entry["@timestamp"]), entry["@timestamp"]
