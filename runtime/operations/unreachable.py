"""A delete that cannot reach its cluster is an error that keeps the resource, unless the person let it go.

A delete that could not reach its cluster deleted nothing. Counting the resource as gone
would make Terraform or Pulumi forget objects that still run there (a peering, a token
that still works, an installed runtime), and a cluster that was only briefly out of reach
(a VPN down, a credential expired) would keep them, managed by nobody. So the delete fails
and the resource stays in the state, as the hashicorp kubernetes provider's do. Whoever
knows the cluster is gone for good says so with the resource's `force`: its delete then
drops it, and the front end says what was left there.
"""

from __future__ import annotations

from runtime.core import APIConnectionError
from runtime.core.failures import explain


class UnreachableError(Exception):
    """A delete could not reach its cluster and `force` is not set: nothing was deleted; `error` says why."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def unreachable(exc: APIConnectionError, *, force: bool) -> str:
    """Why a delete could not reach its cluster, in words, when `force` lets the resource go without deleting;
    raises `UnreachableError` with those words when it does not."""
    error = explain(exc)
    if not force:
        raise UnreachableError(error)
    return error
