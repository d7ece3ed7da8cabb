"""Errors as Terraform diagnostics: a short summary, an actionable detail, and the attribute path.

Resources and data sources never let an exception reach Terraform: API failures,
timeouts, stop requests and provider bugs all become a diagnostic here, worded for the
person running `terraform apply` (what failed, on which cluster, what to do next). A
client failure's detail is `runtime.core.failures.explain`'s sentence, the one every front
end shows; a refresh that cannot reach its cluster also says how to get past a cluster that
is gone for good.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tf.utils import AttributePath, Diagnostics

from runtime.operations.waits import StopRequested, WaitTimeoutError, duration

if TYPE_CHECKING:
    from runtime.core.errors import APIError
    from runtime.operations.unreachable import UnreachableError

logger = logging.getLogger(__name__)

BUG_DETAIL = "This is a bug in the liqo provider; please report it with the Terraform log (TF_LOG=debug)."


#: how to let go of the resources of a cluster that is gone for good (a delete never counts it as gone)
GONE_FOR_GOOD = (
    "If this cluster is gone for good, set `force = true` on its liqo resources and record it without reading "
    "the cluster (`terraform apply -refresh=false`), then `terraform destroy -refresh=false`: a forced "
    "delete drops a resource whose cluster cannot be reached from the state, and what it made stays there. "
    "Or forget the resource with `terraform state rm <address>` (its address is named above)."
)


def api_error(
    diagnostics: Diagnostics,
    exc: APIError,
    *,
    what: str,
    cluster: str,
    path: AttributePath | None = None,
    refresh: bool = False,
) -> None:
    """An API failure while doing `what` on `cluster` (how messages name it when the error does not): the
    person's sentence for it, and for a refresh that cannot reach the cluster, the way past one that is gone."""
    from runtime.core.errors import APIConnectionError, ForbiddenError
    from runtime.core.failures import explain

    detail = explain(exc, cluster=None if exc.cluster else cluster)
    if isinstance(exc, ForbiddenError):
        detail += " The liqo resources need cluster-admin rights on their cluster."
    if refresh and isinstance(exc, APIConnectionError):
        detail += "\n\n" + GONE_FOR_GOOD
    diagnostics.add_error(f"Failed to {what}", detail, path=path)


def dropped(diagnostics: Diagnostics, *, summary: str, error: str, kept: str, comes_back: str) -> None:
    """A forced delete that found its cluster unreachable (`error`, a person's sentence): `kept` stays there,
    the resource leaves the state, and `comes_back` says what to do if the cluster returns."""
    diagnostics.add_warning(
        summary,
        f"{error} So {kept} was not deleted; it is removed from the state, as `force` is set. If the cluster "
        f"comes back, {comes_back}.",
    )


def kept(diagnostics: Diagnostics, exc: UnreachableError, *, what: str) -> None:
    """A delete (`what`) that could not reach its cluster, without `force`: an error, the resource stays."""
    diagnostics.add_error(
        f"Cannot {what}: the cluster cannot be reached",
        f"{exc.error} Nothing was deleted, so the resource stays in the state: run the destroy again once the "
        f"cluster answers.\n\n{GONE_FOR_GOOD}",
        path=["force"],
    )


def interrupted(diagnostics: Diagnostics, exc: StopRequested | WaitTimeoutError, *, what: str) -> None:
    """A wait that ended early (stop) or ran out of time: what exists is kept in state, apply again to finish."""
    if isinstance(exc, StopRequested):
        diagnostics.add_error(
            f"Interrupted while waiting for {exc.what}",
            f"Terraform was interrupted during {what}. What was created so far is recorded in the state; "
            "run `terraform apply` again to finish.",
        )
    else:
        diagnostics.add_error(
            f"Timed out waiting for {exc.what}",
            f"Still not done after {duration(exc.seconds)} ({what}): {exc.last}\n\nFix what holds it up and "
            "apply again, or raise the bound in the resource's `timeouts` block if the cluster is only slow. "
            "With TF_LOG=INFO, Terraform's log shows what the wait sees every few seconds.",
        )


def unexpected(diagnostics: Diagnostics, exc: BaseException, *, where: str) -> None:
    """An exception nobody expected: logged with its traceback, shown as a diagnostic with context."""
    logger.error("%s: unexpected error", where, exc_info=exc)
    diagnostics.add_error(f"{where}: unexpected error: {type(exc).__name__}: {exc}", BUG_DETAIL)
