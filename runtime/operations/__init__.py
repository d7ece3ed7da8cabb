"""What the front ends do to clusters, written once: install and wait for the runtime, issue a peering
token, peer and wait for the Ready virtual node, unpeer with the bounded wait and the forced path, and read
each back for drift.

Async functions over a `runtime.core.Client`, with object shapes from `runtime.forge`;
outcomes are values and typed errors that the Terraform provider turns into diagnostics
and the Pulumi components into their own errors and logs; a client failure (an
`APIError` out of an operation) is worded with `runtime.core.failures.explain`, the
sentence every front end shows (which cluster, what failed, what to do). Nothing here knows Terraform
or Pulumi: a front end passes its field manager, its bounds and, where it has one, its
stop signal (`waits.Stop`). Modules are imported by path (`runtime.operations.peering`).
"""
