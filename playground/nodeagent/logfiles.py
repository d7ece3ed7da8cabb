"""Container logs in the CRI format kubelet reads: writing a process's output, reading it back with kube's options.

Each container instance writes one file; every line is `<RFC3339Nano> <stream> <tag>
<content>`, tag `F` for a full line and `P` for a piece of a line longer than 16 KiB
(as containerd writes them). Reading honours the kubelet's `/containerLogs` options:
`tailLines` counts file lines from the end, `sinceSeconds`/`sinceTime` skip older
entries, `limitBytes` truncates the output, `timestamps` keeps each entry's time in
front of it, and `follow` keeps streaming until the instance's output is closed.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .containers import LogOptions

MAX_LINE = 16 * 1024
READ_CHUNK = 64 * 1024


def timestamp(now_ns: int | None = None) -> str:
    """Go's RFC3339Nano in UTC, with all nine digits (`2025-01-01T10:00:00.123456789Z`)."""
    ns = time.time_ns() if now_ns is None else now_ns
    seconds, fraction = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (any number of fractional digits; Python keeps microseconds)."""
    text = text.strip().replace("Z", "+00:00")
    if "." in text:
        head, rest = text.split(".", 1)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:digits][:6].ljust(6, '0')}{rest[digits:]}"
    return datetime.fromisoformat(text)


class LogFile:
    """One container instance's log file, and a signal for readers that follow it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._lock = asyncio.Lock()
        self._changed = asyncio.Condition()
        self._version = 0
        self.done = False

    async def open(self) -> None:
        def _open() -> int:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

        self._fd = await asyncio.to_thread(_open)

    async def pump(self, stream: asyncio.StreamReader, name: str) -> None:
        """Copy `stream` (stdout or stderr) into the file as CRI entries until it ends."""
        pending = b""
        while True:
            chunk = await stream.read(READ_CHUNK)
            pending += chunk
            entries: list[bytes] = []
            *lines, pending = pending.split(b"\n")
            now = timestamp().encode()
            entries.extend(b"%s %s F %s\n" % (now, name.encode(), line) for line in lines)
            while len(pending) > MAX_LINE:
                entries.append(b"%s %s P %s\n" % (now, name.encode(), pending[:MAX_LINE]))
                pending = pending[MAX_LINE:]
            if not chunk and pending:
                entries.append(b"%s %s F %s\n" % (now, name.encode(), pending))
            if entries:
                await self._write(b"".join(entries))
            if not chunk:
                return

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            if self._fd is None:
                return
            await asyncio.to_thread(os.write, self._fd, data)
        await self._touch()

    async def close(self) -> None:
        """The instance's output ended: followers finish after reading what is left."""
        async with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
        self.done = True
        await self._touch()

    async def _touch(self) -> None:
        async with self._changed:
            self._version += 1
            self._changed.notify_all()

    async def _wait(self, seen: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self._version != seen)

    async def read(self, options: LogOptions) -> AsyncIterator[bytes]:
        """The log as kubelet's `/containerLogs` answers it (endless while following an instance still running)."""
        since = _since(options)
        budget = options.limit_bytes
        version = self._version
        done = self.done
        data = await asyncio.to_thread(_read_from, self.path, 0)
        offset = len(data)
        complete, _, partial = data.rpartition(b"\n")
        lines = complete.split(b"\n") if complete else []
        offset -= len(partial)
        if options.tail_lines is not None:
            lines = lines[len(lines) - options.tail_lines :] if options.tail_lines > 0 else []
        while True:
            out = _render(lines, since=since, timestamps=options.timestamps)
            if budget is not None:
                out = out[:budget]
                budget -= len(out)
            if out:
                yield out
            if (budget is not None and budget <= 0) or not options.follow or done:
                return
            await self._wait(version)
            version, done = self._version, self.done
            data = await asyncio.to_thread(_read_from, self.path, offset)
            complete, newline, _ = data.rpartition(b"\n")
            offset += len(complete) + len(newline)
            lines = complete.split(b"\n") if newline else []


def _since(options: LogOptions) -> datetime | None:
    if options.since_seconds is not None:
        return datetime.now(UTC) - timedelta(seconds=options.since_seconds)
    if options.since_time:
        return parse_time(options.since_time)
    return None


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read()
    except FileNotFoundError:
        return b""


def _render(lines: list[bytes], *, since: datetime | None, timestamps: bool) -> bytes:
    out = bytearray()
    for line in lines:
        parts = line.split(b" ", 3)
        if len(parts) < 4:
            continue
        stamp, _stream, tag, content = parts
        if since is not None and parse_time(stamp.decode()) < since:
            continue
        if timestamps:
            out += stamp + b" "
        out += content
        if tag == b"F":
            out += b"\n"
    return bytes(out)
