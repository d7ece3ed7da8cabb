"""A pod's volumes as directories on the node, the way kubelet's volume plugins lay them out.

Each volume lives in `<pod dir>/volumes/<name>` (hostPath volumes are the host path
itself). Secret, ConfigMap, downwardAPI and projected volumes are written as kubelet's
AtomicWriter writes them: the files go into a fresh hidden directory, a `..data`
symlink is swapped to it in one rename, and each top-level name is a symlink through
`..data`, so a reader never sees half an update. `materialise()` writes every volume
and may be called again at any time: it refreshes content, and requests a new
ServiceAccount token once 80% of the old one's lifetime (or 24 h) has passed, as
kubelet's token manager does. Its answer is the delay until the next token refresh.

Errors carry kubelet's `FailedMount` wording (`MountVolume.SetUp failed for volume "x" :
secret "y" not found`); the runner keeps the pod in ContainerCreating and retries.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath

from runtime.api.objects import JSON
from runtime.core import APIError, ForbiddenError

from .downward import DownwardAPIError, PodContext, field_value, find_container, resource_value
from .env import CONFIGMAP, SECRET, secret_data
from .objects import IssuedToken, ObjectSource

#: relative path -> (content, mode)
Payload = dict[str, tuple[bytes, int]]

DEFAULT_MODE = 0o644
DEFAULT_TOKEN_SECONDS = 3600
#: kubelet refreshes a token after 80% of its lifetime, or after 24 h at the latest
TOKEN_REFRESH_FRACTION = 0.8
TOKEN_MAX_AGE = timedelta(hours=24)
DATA_LINK = "..data"
DIR_MODE = 0o700
EMPTY_DIR_MODE = 0o777


class VolumeError(Exception):
    """A volume cannot be set up (yet); the message is kubelet's FailedMount event message."""


@dataclass(frozen=True)
class _TokenKey:
    volume: str
    index: int


class PodVolumes:
    """One pod's volumes: where each one lives on the node, and the code that writes them."""

    def __init__(
        self,
        pod: JSON,
        *,
        directory: Path,
        source: ObjectSource,
        context: PodContext,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.pod = pod
        self.directory = directory
        self._source = source
        self._context = context
        self._clock = clock
        self._tokens: dict[_TokenKey, IssuedToken] = {}

    @property
    def _namespace(self) -> str:
        return str((self.pod.get("metadata") or {}).get("namespace") or "")

    def _volumes(self) -> list[JSON]:
        return list((self.pod.get("spec") or {}).get("volumes") or [])

    def path(self, name: str) -> Path:
        """The node path that holds volume `name` (the one to bind at a container's mountPath)."""
        for volume in self._volumes():
            if volume.get("name") == name and "hostPath" in volume:
                return Path(str(volume["hostPath"].get("path") or "/"))
        return self.directory / name

    def is_read_only(self, name: str) -> bool:
        """Secret, ConfigMap, downwardAPI and projected volumes are always mounted read-only."""
        volume = next((v for v in self._volumes() if v.get("name") == name), {})
        return any(key in volume for key in ("secret", "configMap", "downwardAPI", "projected"))

    def has(self, name: str) -> bool:
        return any(v.get("name") == name for v in self._volumes())

    async def materialise(self) -> float | None:
        """Write every volume; the seconds until a token needs a refresh (None: no tokens)."""
        await asyncio.to_thread(_make_dir, self.directory, DIR_MODE)
        for volume in self._volumes():
            name = str(volume.get("name") or "")
            try:
                await self._materialise(name, volume)
            except (VolumeError, DownwardAPIError, ValueError, ForbiddenError) as exc:
                # ForbiddenError: the Node authorizer may not know yet that a pod just bound here references the
                # object ("no relationship found"); the kubelet retries the mount then, and so does the runner
                raise VolumeError(f'MountVolume.SetUp failed for volume "{name}" : {exc}') from None
        return self._next_refresh()

    async def _materialise(self, name: str, volume: JSON) -> None:
        target = self.directory / name
        if "emptyDir" in volume:
            await asyncio.to_thread(_make_dir, target, EMPTY_DIR_MODE)
        elif "hostPath" in volume:
            await asyncio.to_thread(_host_path, volume["hostPath"])
        elif "secret" in volume:
            spec = volume["secret"]
            payload = await self._secret(spec, str(spec.get("secretName") or ""), _mode(spec))
            await asyncio.to_thread(write_atomically, target, payload)
        elif "configMap" in volume:
            spec = volume["configMap"]
            payload = await self._config_map(spec, _mode(spec))
            await asyncio.to_thread(write_atomically, target, payload)
        elif "downwardAPI" in volume:
            spec = volume["downwardAPI"]
            payload = self._downward(spec.get("items") or [], _mode(spec))
            await asyncio.to_thread(write_atomically, target, payload)
        elif "projected" in volume:
            payload = await self._projected(name, volume["projected"])
            await asyncio.to_thread(write_atomically, target, payload)
        else:
            kinds = sorted(k for k in volume if k != "name")
            raise VolumeError(f"playground: volume type {', '.join(kinds) or 'none'} is not supported")

    async def _secret(self, spec: JSON, name: str, mode: int) -> Payload:
        obj = await self._source.get(SECRET, self._namespace, name)
        if obj is None:
            if spec.get("optional"):
                return {}
            raise VolumeError(f'secret "{name}" not found')
        return _project(
            secret_data(obj), spec.get("items"), mode, missing="references non-existent secret key"
        )

    async def _config_map(self, spec: JSON, mode: int) -> Payload:
        name = str(spec.get("name") or "")
        obj = await self._source.get(CONFIGMAP, self._namespace, name)
        if obj is None:
            if spec.get("optional"):
                return {}
            raise VolumeError(f'configmap "{name}" not found')
        data = {str(k): str(v).encode() for k, v in (obj.get("data") or {}).items()}
        for key, value in (obj.get("binaryData") or {}).items():
            try:
                data[str(key)] = base64.b64decode(str(value), validate=True)
            except (binascii.Error, ValueError):
                raise VolumeError(f"configmap {name}: binaryData key {key} is not base64") from None
        return _project(data, spec.get("items"), mode, missing="configmap references non-existent config key")

    def _downward(self, items: list[JSON], mode: int) -> Payload:
        payload: Payload = {}
        for item in items:
            path = _relative(str(item.get("path") or ""))
            if "fieldRef" in item:
                value = field_value(self.pod, str(item["fieldRef"].get("fieldPath") or ""), self._context)
            else:
                ref = item.get("resourceFieldRef") or {}
                container = find_container(self.pod, str(ref.get("containerName") or ""))
                if container is None:
                    raise VolumeError(f"container {ref.get('containerName')!r} not found in the pod")
                value = resource_value(
                    container, str(ref.get("resource") or ""), ref.get("divisor"), self._context
                )
            payload[path] = (value.encode(), int(item.get("mode", mode)))
        return payload

    async def _projected(self, volume: str, spec: JSON) -> Payload:
        mode = _mode(spec)
        payload: Payload = {}
        for index, source in enumerate(spec.get("sources") or []):
            if "secret" in source:
                payload.update(
                    await self._secret(source["secret"], str(source["secret"].get("name") or ""), mode)
                )
            elif "configMap" in source:
                payload.update(await self._config_map(source["configMap"], mode))
            elif "downwardAPI" in source:
                payload.update(self._downward(source["downwardAPI"].get("items") or [], mode))
            elif "serviceAccountToken" in source:
                token_spec = source["serviceAccountToken"]
                token = await self._token(_TokenKey(volume, index), token_spec)
                payload[_relative(str(token_spec.get("path") or ""))] = (token.token.encode(), mode)
            else:
                kinds = sorted(source)
                raise VolumeError(f"playground: projected source {', '.join(kinds)} is not supported")
        return payload

    async def _token(self, key: _TokenKey, spec: JSON) -> IssuedToken:
        current = self._tokens.get(key)
        if current is None or self._clock() >= _refresh_at(current):
            try:
                current = await self._source.token(
                    self.pod,
                    audience=str(spec.get("audience") or ""),
                    expiration_seconds=int(spec.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS),
                )
            except APIError as exc:
                # e.g. the Node authorizer, whose graph learns of a pod's binding a moment after it: retried
                raise VolumeError(f"failed to fetch token: {exc}") from None
            self._tokens[key] = current
        return current

    def _next_refresh(self) -> float | None:
        if not self._tokens:
            return None
        earliest = min(_refresh_at(token) for token in self._tokens.values())
        return max(0.0, (earliest - self._clock()).total_seconds())


def _refresh_at(token: IssuedToken) -> datetime:
    lifetime = token.expires - token.issued
    return token.issued + min(lifetime * TOKEN_REFRESH_FRACTION, TOKEN_MAX_AGE)


def _mode(spec: JSON) -> int:
    return int(spec.get("defaultMode", DEFAULT_MODE))


def _project(data: Mapping[str, bytes], items: list[JSON] | None, mode: int, *, missing: str) -> Payload:
    """All keys as files, or only the listed `items` (key -> path, mode); a listed key must exist."""
    if not items:
        return {_relative(key): (value, mode) for key, value in data.items()}
    payload: Payload = {}
    for item in items:
        key = str(item.get("key") or "")
        if key not in data:
            raise VolumeError(f"{missing}: {key}")
        payload[_relative(str(item.get("path") or key))] = (data[key], int(item.get("mode", mode)))
    return payload


def _relative(path: str) -> str:
    """A volume item path: relative, without `..`, never escaping the volume."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or ".." in pure.parts or pure.parts[0].startswith(".."):
        raise VolumeError(f"invalid path {path!r}: must be relative and may not contain '..'")
    return str(pure)


def _make_dir(path: Path, mode: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, mode)


def _host_path(spec: JSON) -> None:
    path, kind = Path(str(spec.get("path") or "")), str(spec.get("type") or "")
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate" and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    elif kind == "Directory" and not path.is_dir():
        raise VolumeError(f"hostPath type check failed: {path} is not a directory")
    elif kind == "File" and not path.is_file():
        raise VolumeError(f"hostPath type check failed: {path} is not a file")


def write_atomically(target: Path, payload: Payload) -> bool:
    """Make `target` hold exactly `payload`, swapping all files at once; False when nothing changed."""
    _make_dir(target, DIR_MODE)
    link = target / DATA_LINK
    old = target / os.readlink(link) if link.is_symlink() else None
    if old is not None and _read_payload(old) == payload:
        return False
    fresh = Path(tempfile.mkdtemp(prefix="..", dir=target))
    os.chmod(fresh, 0o755)
    for relative, (content, mode) in payload.items():
        path = fresh / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        os.chmod(path, mode)
    staged = target / f"{DATA_LINK}_tmp"
    staged.unlink(missing_ok=True)
    staged.symlink_to(fresh.name)
    os.replace(staged, link)
    names = {PurePosixPath(relative).parts[0] for relative in payload}
    for entry in target.iterdir():
        if not entry.name.startswith("..") and entry.name not in names:
            entry.unlink()
    for name in names:
        visible = target / name
        if not visible.is_symlink():
            visible.symlink_to(f"{DATA_LINK}/{name}")
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return True


def _read_payload(directory: Path) -> Payload:
    payload: Payload = {}
    for path in directory.rglob("*"):
        if path.is_file():
            payload[str(path.relative_to(directory))] = (path.read_bytes(), path.stat().st_mode & 0o7777)
    return payload
