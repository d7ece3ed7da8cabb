"""The webhook's HTTP side: a routing table from URL path to validator, and one AdmissionReview handler.

Paths are `/validate/<plural>`, as the install's ValidatingWebhookConfiguration names
them. A body that is not an AdmissionReview v1 gets 400 (the API server then applies
the webhook's failurePolicy); a validator that raises gets 500, so a bug never admits
an object silently. Every review is counted by path and verdict.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from runtime.api.crds import FOREIGNCLUSTERS, RESOURCESLICES
from runtime.api.resource import Resource

from . import foreignclusters, resourceslices
from .review import ReviewError, Validator, object_ref, parse_review, response

logger = logging.getLogger(__name__)


def validation_path(resource: Resource) -> str:
    return f"/validate/{resource.plural}"


def validators(*, namespace: str) -> dict[str, Validator]:
    """The routing table: path -> validator; `namespace` is the runtime's namespace."""
    return {
        validation_path(FOREIGNCLUSTERS): functools.partial(foreignclusters.validate, namespace=namespace),
        validation_path(RESOURCESLICES): resourceslices.validate,
    }


class ReviewMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reviews = Counter(
            "webhook_admission_reviews",
            "AdmissionReviews answered, by path and verdict (allowed, denied, error)",
            ["path", "verdict"],
            registry=registry,
        )


def application(routes: Mapping[str, Validator], *, metrics: ReviewMetrics) -> web.Application:
    app = web.Application(client_max_size=8 * 2**20)
    for path, validator in routes.items():
        app.router.add_post(path, functools.partial(_review, path=path, validator=validator, metrics=metrics))
    return app


async def _review(
    request: web.Request, *, path: str, validator: Validator, metrics: ReviewMetrics
) -> web.Response:
    try:
        review = parse_review(json.loads(await request.read()))
    except (ValueError, ReviewError) as exc:
        metrics.reviews.labels(path, "error").inc()
        logger.warning("%s: bad AdmissionReview from %s: %s", path, request.remote, exc)
        return web.json_response({"error": f"{path}: {exc}"}, status=400)
    try:
        problems = validator(review)
    except Exception:
        metrics.reviews.labels(path, "error").inc()
        logger.exception("%s: %s: validation failed", object_ref(review), path)
        return web.json_response({"error": "validation failed; see the webhook's log"}, status=500)
    verdict = "denied" if problems else "allowed"
    metrics.reviews.labels(path, verdict).inc()
    if problems:
        logger.info("%s: %s denied: %s", object_ref(review), review.get("operation"), "; ".join(problems))
    return web.json_response(response(review, problems))
