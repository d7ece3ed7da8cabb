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

logger = logging.getLogger(__name__)

BUG_DETAIL = "This is a bug in the liqo provider; please report it with the Terraform log (TF_LOG=debug)."


#: appended to a refresh (a resource's read) that cannot reach its cluster
GONE_FOR_GOOD = (
    "If this cluster is gone for good, skip the refresh: `terraform destroy -refresh=false` (or `terraform "
    "apply -refresh=false`) deletes what the state holds without reading it first, and the liqo resources' "
    "deletes count an unreachable cluster as gone; or forget this resource with `terraform state rm "
    "<address>` (its address is named above)."
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
    """A delete that found its cluster unreachable (`error`, a person's sentence): `kept` stays there, the
    resource leaves the state, and `comes_back` says what to do if the cluster returns."""
    diagnostics.add_warning(
        summary,
        f"{error} So {kept} was not deleted; it is removed from the state, as the cluster is gone. If the cluster "
        f"comes back, {comes_back}.",
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
