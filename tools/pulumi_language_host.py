"""A stand-in for Pulumi's Python language host (`pulumi-language-python`), which cannot be built here.

The Go module of the real host (`github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3`)
is refused by the Go module proxy (403), so `make pulumi-engine` cannot build it. The
engine needs a language host only to start a Python program; the program itself runs in
the Python SDK's own runner (`pulumi-language-python-exec`, shipped by the engine build
from the SDK's Go module), which connects to the engine and does all the Pulumi work. This
stand-in serves the LanguageRuntime gRPC service with what `pulumi up`, `preview`, `refresh`
and `destroy` ask of it: `Run` starts the runner with the program, in the project's
virtual environment (`runtime.options.virtualenv` in Pulumi.yaml), with the stack's
configuration; the dependency and plugin queries answer "nothing to install" (plugins
come from the engine's folder and Pulumi.yaml's `plugins`). Code generation, `pulumi new`
and `pulumi install` are not served. `python tools/pulumi_language_host.py --install DIR`
writes `DIR/pulumi-language-python`, which runs it with that Python; the end-to-end test
and examples/pulumi/README.md put DIR on PATH. docs/pulumi/engine.md says what it does not do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

#: the runner's exit code for "an error was shown to the user already"
_BAIL = 32
VERSION = "3.274.1"


class LanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, engine: str) -> None:
        self.engine = engine

    def Handshake(self, request: Any, context: Any) -> Any:
        self.engine = request.engine_address or self.engine
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: Any, context: Any) -> Any:
        return plugin_pb2.PluginInfo(version=VERSION)

    def GetRequiredPlugins(self, request: Any, context: Any) -> Any:
        return language_pb2.GetRequiredPluginsResponse()

    def GetRequiredPackages(self, request: Any, context: Any) -> Any:
        return language_pb2.GetRequiredPackagesResponse()

    def GetProgramDependencies(self, request: Any, context: Any) -> Any:
        return language_pb2.GetProgramDependenciesResponse()

    def InstallDependencies(self, request: Any, context: Any) -> Any:
        return iter(())

    def RuntimeOptionsPrompts(self, request: Any, context: Any) -> Any:
        return language_pb2.RuntimeOptionsResponse()

    def About(self, request: Any, context: Any) -> Any:
        return language_pb2.AboutResponse(executable=sys.executable, version=sys.version.split()[0])

    def Cancel(self, request: Any, context: Any) -> Any:
        return empty_pb2.Empty()

    def Run(self, request: Any, context: Any) -> Any:
        info = request.info
        root = Path(info.root_directory or request.pwd or ".")
        pwd = request.pwd or str(root)
        program = info.entry_point or request.program or "."
        runner = shutil.which("pulumi-language-python-exec")
        if runner is None:
            return language_pb2.RunResponse(
                error="pulumi-language-python-exec is not on PATH (see make pulumi-engine)"
            )
        arguments = {
            "monitor": request.monitor_address,
            "engine": self.engine,
            "project": request.project,
            "stack": request.stack,
            "pwd": pwd,
            "dry_run": "true" if request.dryRun else "false",
            "parallel": str(request.parallel),
            "organization": request.organization,
            "root_directory": str(root),
        }
        command = [_python(root, info), "-u", runner]
        for key, value in arguments.items():
            if value:
                command += [f"--{key}", value]
        command += [program, *request.args]
        environ = {
            **os.environ,
            "PULUMI_CONFIG": json.dumps(dict(request.config)),
            "PULUMI_CONFIG_SECRET_KEYS": json.dumps(list(request.configSecretKeys)),
        }
        code = subprocess.run(command, cwd=pwd, env=environ, check=False).returncode
        if code == 0:
            return language_pb2.RunResponse()
        if code == _BAIL:
            return language_pb2.RunResponse(bail=True)
        return language_pb2.RunResponse(error=f"Program exited with non-zero exit code: {code}")


def _python(root: Path, info: Any) -> str:
    """The project's interpreter: its `virtualenv` runtime option, else PULUMI_PYTHON_CMD, else this one."""
    options = dict(info.options.items()) if info.HasField("options") else {}
    virtualenv = options.get("virtualenv")
    if isinstance(virtualenv, str) and virtualenv:
        # not resolved: the venv's python is a symlink to the base interpreter, which has no venv
        python = Path(os.path.abspath(root / virtualenv / "bin" / "python"))
        if python.exists():
            return str(python)
    return os.environ.get("PULUMI_PYTHON_CMD") or sys.executable


def install(folder: Path, *, python: str = sys.executable) -> Path:
    """Write `folder/pulumi-language-python`, which runs this host with `python` (an interpreter with grpc and
    pulumi: the project's virtual environment's); put `folder` on PATH before the engine's bin."""
    folder.mkdir(parents=True, exist_ok=True)
    host = folder / "pulumi-language-python"
    host.write_text(f'#!/bin/sh\nexec "{python}" "{Path(__file__).resolve()}" "$@"\n')
    host.chmod(0o755)
    return host


def main(argv: list[str]) -> int:
    if argv[:1] == ["--install"] and len(argv) == 2:
        # `python tools/pulumi_language_host.py --install DIR`: not a call from the engine
        print(install(Path(argv[1])))
        return 0
    positional = [argument for argument in argv if not argument.startswith("-")]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(
        LanguageHost(positional[0] if positional else ""), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:  # the engine is done with us (it interrupts its plugins)
        server.stop(grace=None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
