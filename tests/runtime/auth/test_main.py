"""`python -m runtime auth`: the service starts from flags, publishes its URL, logs JSON lines, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import aiohttp

from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS
from runtime.core import Client
from runtime.forge import credential as contract
from tests.playground.conftest import eventually

from .cluster import NAMESPACE, OPTIONS


async def test_the_service_runs_from_flags_and_stops_cleanly_on_sigterm(
    admin: Client, installed_kubeconfig: Path
) -> None:
    await admin.patch(
        CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, {"data": {c.IDENTITY_AUTH_URL: None}}, namespace=NAMESPACE
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "runtime",
        "auth",
        "--log-format=json",
        f"--kubeconfig={installed_kubeconfig}",
        f"--namespace={NAMESPACE}",
        "--listen=127.0.0.1:0",
        "--health-address=127.0.0.1:0",
        stderr=asyncio.subprocess.PIPE,
    )
    try:

        async def published() -> str | None:
            identity = await admin.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=NAMESPACE)
            return (identity.get("data") or {}).get(c.IDENTITY_AUTH_URL)

        await eventually(published, within=20)
        url = await published()
        assert url is not None and url.startswith("https://127.0.0.1:")
        async with (
            aiohttp.ClientSession() as session,
            session.get(url + contract.CLUSTER_PATH, ssl=False) as answer,
        ):
            info = contract.parse_cluster_info(await answer.json())
        assert info.cluster_name == OPTIONS.cluster_name
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 20)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 0
    assert process.stderr is not None
    lines = (await process.stderr.read()).decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert {"time", "level", "logger", "msg"} <= set(records[0])
    assert any("published authURL" in record["msg"] for record in records)
    assert any(record["msg"].endswith("authentication service stopped") for record in records)
