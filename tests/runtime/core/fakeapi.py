"""A scripted Kubernetes API on loopback, for the faults and timings the emulator cannot be made to show.

It runs in the test's own event loop (plain HTTP, aiohttp), so under looptime every
pause in a script and every backoff of the client happen in fake time, and each
request is logged with the loop time it arrived at. Lists answer from a script (the
last answer repeats), watch requests play scripts of event lines and pauses (or fail
with an HTTP status); with no script left a watch stays open and silent. Objects
written with POST/PUT are kept (with resourceVersion conflicts), enough for Leases.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass

from aiohttp import web

from runtime.api.objects import JSON
from runtime.core.client import Resource

#: an event line to send, or a pause in seconds
Step = JSON | float


@dataclass(frozen=True)
class Call:
    at: float
    method: str
    path: str
    query: dict[str, str]


def status(code: int, reason: str, message: str = "") -> JSON:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


class FakeAPI:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lists: dict[str, deque[JSON]] = {}
        self._watches: dict[str, deque[list[Step] | int]] = {}
        self._objects: dict[str, JSON] = {}
        self._rv = 0
        #: requests under these paths fail with 500 (an outage of one resource)
        self.failing: set[str] = set()
        #: bearer token -> paths under which that client's requests fail with 500 (one client cut off from them)
        self.failing_for: dict[str, set[str]] = {}
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def kubeconfig(self) -> JSON:
        return self.kubeconfig_with_token("fake-token")

    def kubeconfig_with_token(self, token: str) -> JSON:
        """The kubeconfig of a client that sends this bearer token (see `failing_for`)."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }

    # scripts

    def on_list(
        self, resource: Resource, items: list[JSON], *, resource_version: str, namespace: str | None = None
    ) -> None:
        body = {
            "apiVersion": resource.api_version,
            "kind": f"{resource.kind}List",
            "metadata": {"resourceVersion": resource_version},
            "items": items,
        }
        self._lists.setdefault(resource.path(namespace=namespace), deque()).append(body)

    def on_watch(self, resource: Resource, script: list[Step] | int, *, namespace: str | None = None) -> None:
        """The next watch request plays `script` (event lines and pauses), or fails with that HTTP status."""
        self._watches.setdefault(resource.path(namespace=namespace), deque()).append(script)

    def requests(self, resource: Resource, *, watch: bool, namespace: str | None = None) -> list[Call]:
        path = resource.path(namespace=namespace)
        return [c for c in self.calls if c.path == path and (c.query.get("watch") == "true") == watch]

    # serving

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        self.calls.append(Call(loop.time(), request.method, request.path, dict(request.query)))
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        failing = self.failing | self.failing_for.get(token, set())
        if any(request.path.startswith(prefix) for prefix in failing):
            return web.json_response(status(500, "InternalError", "scripted outage"), status=500)
        if request.method == "GET" and request.query.get("watch") == "true":
            return await self._watch(request)
        if request.method == "GET" and request.path in self._lists:
            answers = self._lists[request.path]
            body = answers.popleft() if len(answers) > 1 else answers[0]
            return web.json_response(body)
        return await self._crud(request)

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        scripts = self._watches.get(request.path)
        script = scripts.popleft() if scripts else None
        if isinstance(script, int):
            return web.json_response(status(script, "InternalError", "scripted failure"), status=script)
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        if script is None:
            await asyncio.Event().wait()
        for step in script or []:
            if isinstance(step, float | int):
                await asyncio.sleep(step)
            else:
                await response.write(json.dumps(step).encode() + b"\n")
        await response.write_eof()
        return response

    async def _crud(self, request: web.Request) -> web.Response:
        path = request.path
        if request.method == "GET":
            obj = self._objects.get(path)
            if obj is None:
                return web.json_response(status(404, "NotFound", f"{path} not found"), status=404)
            return web.json_response(obj)
        body: JSON = await request.json()
        meta = body.setdefault("metadata", {})
        if request.method == "POST":
            path = f"{path}/{meta['name']}"
            if path in self._objects:
                return web.json_response(status(409, "AlreadyExists", f"{path} already exists"), status=409)
        elif request.method == "PUT":
            current = self._objects.get(path)
            if current is None:
                return web.json_response(status(404, "NotFound", f"{path} not found"), status=404)
            if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
                return web.json_response(status(409, "Conflict", "the object has been modified"), status=409)
        else:
            return web.json_response(status(405, "MethodNotAllowed", request.method), status=405)
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        self._objects[path] = body
        return web.json_response(body, status=201 if request.method == "POST" else 200)

    def object(self, path: str) -> JSON | None:
        return self._objects.get(path)

    def overwrite(self, path: str, obj: JSON) -> None:
        """Another client's write: stored as is, with a new resourceVersion."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self._objects[path] = obj
