"""Running `ip`, `wg` and `nft` without blocking the event loop; a failure is a CommandError with its stderr."""

from __future__ import annotations

import asyncio


class CommandError(Exception):
    """A networking command failed; the message has its stderr."""


async def run(*argv: str, stdin: str | None = None) -> str:
    """The command's stdout; `stdin` is fed to it (nft scripts). Never pass secrets as arguments."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate(stdin.encode() if stdin is not None else None)
    if process.returncode != 0:
        detail = err.decode().strip() or out.decode().strip()
        raise CommandError(f"{' '.join(argv[:3])}: {detail} (exit {process.returncode})")
    return out.decode()
