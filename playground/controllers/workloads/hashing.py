"""Names derived from content: pod-template-hash and ControllerRevision hashes.

kube renders a 32-bit FNV hash in decimal and maps each digit through
`rand.SafeEncodeString` (the alphabet "bcdfghjklmnpqrstvwxz2456789", without vowels so
no words form), so hashes look like `7c5ddbdf54`.

- `pod_template_hash` (Deployments' `pod-template-hash`, DaemonSets' revision names):
  kube's `controller.ComputeHash` feeds FNV-32a with a spew dump of the Go struct, then
  the collision count as 8 little-endian bytes. A Go struct dump cannot be reproduced
  from JSON, so we feed FNV-32a the template's canonical JSON instead; the rest
  (collision count bytes, encoding) is kube's. Values therefore differ from a real
  cluster's for the same template, but are stable and change when the template does.
- `controller_revision_hash` (StatefulSet revisions): kube's `HashControllerRevision`
  hashes the revision's raw JSON data with FNV-32 (not 32a) plus the collision count in
  decimal; the data is Go-marshalled JSON, which `go_json` reproduces.
"""

from __future__ import annotations

import json
import struct
from typing import Any

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_MASK = 0xFFFFFFFF
#: characters Go's encoding/json escapes that Python's json module leaves alone
_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def fnv32a(data: bytes, start: int = _FNV_OFFSET) -> int:
    """FNV-1a, 32 bits (Go's `hash/fnv.New32a`); `start` continues an earlier sum."""
    value = start
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & _MASK
    return value


def fnv32(data: bytes, start: int = _FNV_OFFSET) -> int:
    """FNV-1, 32 bits (Go's `hash/fnv.New32`): multiply, then xor."""
    value = start
    for byte in data:
        value = ((value * _FNV_PRIME) & _MASK) ^ byte
    return value


def safe_encode(text: str) -> str:
    """`rand.SafeEncodeString`: each character's code point modulo the alphabet's length."""
    return "".join(SAFE_ALPHABET[ord(char) % len(SAFE_ALPHABET)] for char in text)


def go_json(value: Any) -> bytes:
    """JSON as Go's `json.Marshal` writes a map: sorted keys, no spaces, HTML characters escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escape in _GO_ESCAPES.items():
        text = text.replace(char, escape)
    return text.encode()


def pod_template_hash(template: Any, collision_count: int | None = None) -> str:
    """The hash kube labels a template's ReplicaSet and pods with (see the module docstring)."""
    value = fnv32a(go_json(template))
    if collision_count is not None:
        value = fnv32a(struct.pack("<I", collision_count & _MASK) + bytes(4), value)
    return safe_encode(str(value))


def controller_revision_hash(data: Any, collision_count: int | None = None) -> str:
    """`history.HashControllerRevision` over a revision's data."""
    value = fnv32(go_json(data))
    if collision_count is not None:
        value = fnv32(str(collision_count).encode(), value)
    return safe_encode(str(value))
