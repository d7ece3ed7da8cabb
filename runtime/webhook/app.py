"""The webhook's HTTP side: a routing table from URL path to handler, and one AdmissionReview handler.

Paths are `/validate/<plural>` and `/mutate/<plural>`, as the install's webhook
configurations name them. A body that is not an AdmissionReview v1 (not JSON, nested too deep, a field of the
wrong type) gets 400 (the API server then applies the webhook's failurePolicy); a
validator that raises gets 500, so a bug never admits an object silently. Every review is
counted by path and verdict.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from runtime.api.crds import (
    FOREIGNCLUSTERS,
    GATEWAYSERVERS,
    NAMESPACEOFFLOADINGS,
    NAMESPACEOFFLOADINGSETS,
    RESOURCESLICES,
    SHADOWPODS,
)
from runtime.api.kinds import PODS, SERVICES
from runtime.api.resource import Resource
from runtime.forge.services import ServiceType

from . import foreignclusters, gatewayservers, namespaceoffloadings, namespaceoffloadingsets, resourceslices
from .pods import Lookup, pod_mutator
from .review import Mutation, Mutator, ReviewError, Validator, object_ref, parse_review, response
from .services import service_mutator

logger = logging.getLogger(__name__)


def validation_path(resource: Resource) -> str:
    return f"/validate/{resource.plural}"


def mutation_path(resource: Resource) -> str:
    return f"/mutate/{resource.plural}"


def validators(*, namespace: str, shadow_pods: Validator) -> dict[str, Validator]:
    """The validating routes: path -> validator; `namespace` is the runtime's namespace, `shadow_pods` the
    ShadowPod admission (it reads the webhook's caches)."""
    return {
        validation_path(FOREIGNCLUSTERS): functools.partial(foreignclusters.validate, namespace=namespace),
        validation_path(RESOURCESLICES): resourceslices.validate,
        validation_path(NAMESPACEOFFLOADINGS): namespaceoffloadings.validate,
        validation_path(NAMESPACEOFFLOADINGSETS): namespaceoffloadingsets.validate,
        validation_path(SHADOWPODS): shadow_pods,
        validation_path(GATEWAYSERVERS): gatewayservers.validate,
    }


def mutators(*, offloadings: Lookup, widest_service: ServiceType) -> dict[str, Mutator]:
    """The mutating routes: path -> mutator; `offloadings` finds a namespace's NamespaceOffloading,
    `widest_service` is the widest Service type a consumer keeps in its twin namespaces."""
    return {
        mutation_path(PODS): pod_mutator(offloadings),
        mutation_path(SERVICES): service_mutator(widest_service),
    }


def _as_mutator(validator: Validator) -> Mutator:
    return lambda request: Mutation(problems=list(validator(request)))


class ReviewMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reviews = Counter(
            "webhook_admission_reviews",
            "AdmissionReviews answered, by path and verdict (allowed, denied, error)",
            ["path", "verdict"],
            registry=registry,
        )


def application(
    routes: Mapping[str, Validator],
    *,
    metrics: ReviewMetrics,
    mutating: Mapping[str, Mutator] | None = None,
) -> web.Application:
    app = web.Application(client_max_size=8 * 2**20)
    handlers = {path: _as_mutator(validator) for path, validator in routes.items()} | dict(mutating or {})
    for path, handler in handlers.items():
        app.router.add_post(path, functools.partial(_review, path=path, handler=handler, metrics=metrics))
    return app


async def _review(
    request: web.Request, *, path: str, handler: Mutator, metrics: ReviewMetrics
) -> web.Response:
    try:
        review = parse_review(await request.read())
    except ReviewError as exc:
        metrics.reviews.labels(path, "error").inc()
        logger.warning("%s: bad AdmissionReview from %s: %s", path, request.remote, exc)
        return web.json_response({"error": f"{path}: {exc}"}, status=400)
    try:
        mutation = handler(review)
    except Exception:
        metrics.reviews.labels(path, "error").inc()
        logger.exception("%s: %s: validation failed", object_ref(review), path)
        return web.json_response({"error": "validation failed; see the webhook's log"}, status=500)
    problems = mutation.problems
    verdict = "denied" if problems else "allowed"
    metrics.reviews.labels(path, verdict).inc()
    if problems:
        logger.info("%s: %s denied: %s", object_ref(review), review.get("operation"), "; ".join(problems))
    return web.json_response(response(review, problems, patch=mutation.patch))
