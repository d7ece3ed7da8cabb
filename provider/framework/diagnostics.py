"""Errors as Terraform diagnostics: a short summary, an actionable detail, and the attribute path.

Resources and data sources never let an exception reach Terraform: API failures,
timeouts, stop requests and provider bugs all become a diagnostic here, worded for the
person running `terraform apply` (what failed, on which cluster, what to do next).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tf.utils import AttributePath, Diagnostics

from runtime.operations.waits import StopRequested, WaitTimeoutError

if TYPE_CHECKING:
    from runtime.core.errors import APIError

logger = logging.getLogger(__name__)

BUG_DETAIL = "This is a bug in the liqo provider; please report it with the Terraform log (TF_LOG=debug)."


def api_error(
    diagnostics: Diagnostics, exc: APIError, *, what: str, host: str, path: AttributePath | None = None
) -> None:
    """An API failure while doing `what` against the cluster at `host`, with the next step for its kind."""
    from runtime.core.errors import (
        APIConnectionError,
        ForbiddenError,
        NotFoundError,
        UnauthorizedError,
    )

    if isinstance(exc, APIConnectionError):
        detail = (
            f"The Kubernetes API server at {host} could not be reached: {exc}. "
            "Check that the cluster is running and that the provider's kubernetes settings point at it."
        )
    elif isinstance(exc, UnauthorizedError):
        detail = (
            f"The API server at {host} rejected the credentials: {exc}. "
            "Check the token, client certificate or exec plugin in the provider's kubernetes settings."
        )
    elif isinstance(exc, ForbiddenError):
        detail = (
            f"The credentials used for {host} may not do this: {exc}. "
            "Use credentials with cluster-admin rights, or grant the missing permission."
        )
    elif isinstance(exc, NotFoundError):
        detail = f"Not found on {host}: {exc}."
    else:
        detail = f"The API server at {host} answered: {exc}."
    diagnostics.add_error(f"Failed to {what}", detail, path=path)


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
            f"{exc} during {what}. Raise the bound in the resource's `timeouts` block if the cluster is slow, "
            "or look at the runtime's pods and events for what holds it up.",
        )


def unexpected(diagnostics: Diagnostics, exc: BaseException, *, where: str) -> None:
    """An exception nobody expected: logged with its traceback, shown as a diagnostic with context."""
    logger.error("%s: unexpected error", where, exc_info=exc)
    diagnostics.add_error(f"{where}: unexpected error: {type(exc).__name__}: {exc}", BUG_DETAIL)
