"""Admission webhooks: calling the cluster's Mutating- and ValidatingWebhookConfigurations.

Operators, policy engines and Liqo itself install admission webhooks; a cluster that
ignored them would accept objects the real one refuses and skip the defaults the
webhooks patch in. `WebhookDispatcher` does what kube-apiserver's `MutatingAdmissionWebhook`
and `ValidatingAdmissionWebhook` plugins do for create, update, delete and connect of
resources and subresources:

- mutating webhooks run one after another, configurations sorted by name and webhooks in
  their listed order; each sees the object as the previous ones patched it (JSONPatch);
- validating webhooks run concurrently on the final object; the first failure in
  configuration order is the one reported;
- a webhook is called when one of its `rules` matches the operation, resource,
  subresource and scope, its `objectSelector` matches the object's or the old object's
  labels, and its `namespaceSelector` matches the labels of the request's namespace (or,
  for a Namespace, of the namespace itself; other cluster-scoped objects always match);
- the request is an `admission.k8s.io/v1` AdmissionReview POSTed to `clientConfig.url` or
  to the service `clientConfig.service` resolves to, trusting only `caBundle` when it is
  set, with `?timeout=Ns` set from `timeoutSeconds` (default 10, at most 30);
- errors read as kube-apiserver's: a call that fails gives 500 `failed calling webhook
  "<name>": ...` unless `failurePolicy` is Ignore; a denial gives the webhook's status
  with `admission webhook "<name>" denied the request: <message>`.

Simplifications, each harmless for webhooks written against the real server:
`matchPolicy: Equivalent` is treated as Exact (the emulator serves each resource in
one group/version, so there is no equivalent resource to convert to, and `requestKind`
always equals `kind`); `reinvocationPolicy: IfNeeded` is treated as Never; webhooks that
accept only `admissionReviewVersions: [v1beta1]` fail as if unreachable (subject to
`failurePolicy`); `matchConditions` (CEL) are not evaluated, so such webhooks are called
as if every condition held; the AdmissionReview `uid` is the request's own uid for every
webhook call, where kube-apiserver mints one per call. Audit annotations in responses
are ignored.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import errno
import json
import logging
import ssl
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import aiohttp
from yarl import URL

from .errors import APIError, bad_request, internal, not_found
from .identity import UserInfo
from .selectors import label_selector_matches
from .service_resolver import ResolveError

logger = logging.getLogger(__name__)

Obj = dict[str, Any]

MUTATING = "mutating"
VALIDATING = "validating"
CREATE, UPDATE, DELETE, CONNECT = "CREATE", "UPDATE", "DELETE", "CONNECT"

DEFAULT_TIMEOUT_SECONDS = 10
MAX_TIMEOUT_SECONDS = 30
REVIEW_API_VERSION = "admission.k8s.io/v1"
REVIEW_GVK = "admission.k8s.io/v1, Kind=AdmissionReview"
JSON_PATCH = "JSONPatch"
USER_AGENT = "kube-apiserver-admission"
DRY_RUN_SAFE_SIDE_EFFECTS = frozenset({"None", "NoneOnDryRun"})
OPTIONS_KINDS = {CREATE: "CreateOptions", UPDATE: "UpdateOptions", DELETE: "DeleteOptions"}

#: Admission configuration itself is never sent to webhooks, so a broken webhook cannot lock itself in.
EXEMPT_GROUP = "admissionregistration.k8s.io"
EXEMPT_KINDS = frozenset(
    {
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
    }
)

#: client-go's words for an HTTP error answer that carries no Status.
HTTP_ERROR_TEXT = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, "
    "but may still be processing the request",
}


class SelectorMatcher(Protocol):
    """`selectors.label_selector_matches`: metav1.LabelSelector semantics."""

    def __call__(
        self, selector: Mapping[str, Any] | None, labels: Mapping[str, str], *, none_matches: bool
    ) -> bool: ...


PatchApplier = Callable[[Obj, list[Any]], Obj]
SessionFactory = Callable[[], aiohttp.ClientSession]


@dataclass(frozen=True, kw_only=True)
class AdmissionRequest:
    """One write as admission sees it (kube-apiserver's admission.Attributes).

    `group`/`version`/`resource`/`subresource` name what the client addressed; `kind`
    is the kind of `object`, in `kind_group`/`kind_version` when that differs from the
    resource's (a Deployment's `scale` subresource carries an `autoscaling/v1` Scale).
    CREATE and UPDATE carry `object` (and UPDATE `old_object`), DELETE only `old_object`,
    CONNECT the connect options (e.g. a PodExecOptions) as `object`. `options` is the
    CreateOptions/UpdateOptions/DeleteOptions of the request; its apiVersion and kind are
    filled in when missing. For a Namespace, `namespace` may be left empty: the
    namespace's own name is used, as kube-apiserver does.
    """

    operation: str
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    user: UserInfo
    subresource: str = ""
    kind_group: str | None = None
    kind_version: str | None = None
    name: str = ""
    namespace: str = ""
    object: Obj | None = None
    old_object: Obj | None = None
    dry_run: bool = False
    options: Obj | None = None
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def is_namespace(self) -> bool:
        """A request about a core/v1 Namespace object itself."""
        return self.group == "" and self.resource == "namespaces"

    @property
    def admission_namespace(self) -> str:
        """attr.GetNamespace(): a Namespace's own name when it already exists."""
        if self.is_namespace and not self.namespace and self.operation != CREATE:
            return self.name
        return self.namespace

    def kind_ref(self) -> dict[str, str]:
        return {
            "group": self.group if self.kind_group is None else self.kind_group,
            "version": self.version if self.kind_version is None else self.kind_version,
            "kind": self.kind,
        }

    def resource_ref(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "resource": self.resource}


@dataclass(frozen=True)
class Webhook:
    """One entry of a configuration's `webhooks`, with the v1 defaults applied on read."""

    configuration: str
    spec: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    @property
    def rules(self) -> list[Mapping[str, Any]]:
        return [r for r in self.spec.get("rules") or [] if isinstance(r, Mapping)]

    @property
    def ignores_failures(self) -> bool:
        return self.spec.get("failurePolicy") == "Ignore"

    @property
    def side_effects(self) -> str | None:
        value = self.spec.get("sideEffects")
        return value if isinstance(value, str) else None

    @property
    def timeout(self) -> int:
        value = self.spec.get("timeoutSeconds")
        if not isinstance(value, int) or isinstance(value, bool):
            return DEFAULT_TIMEOUT_SECONDS
        return min(max(value, 1), MAX_TIMEOUT_SECONDS)

    @property
    def accepts_v1(self) -> bool:
        return "v1" in (self.spec.get("admissionReviewVersions") or [])

    @property
    def client_config(self) -> Mapping[str, Any]:
        value = self.spec.get("clientConfig")
        return value if isinstance(value, Mapping) else {}

    def selector(self, key: str) -> dict[str, Any] | None:
        value = self.spec.get(key)
        return value if isinstance(value, dict) else None


def _exact_or_wildcard(items: Iterable[str], requested: str) -> bool:
    return any(item in ("*", requested) for item in items)


def _scope_matches(scope: str, req: AdmissionRequest) -> bool:
    if scope == "Namespaced":
        return req.namespaced and not req.is_namespace
    if scope == "Cluster":
        return req.is_namespace or not req.namespaced
    return scope == "*"


def _resource_matches(patterns: Iterable[str], req: AdmissionRequest) -> bool:
    for pattern in patterns:
        resource, _, subresource = pattern.partition("/")
        if resource in ("*", req.resource) and subresource in ("*", req.subresource):
            return True
    return False


def rule_matches(rule: Mapping[str, Any], req: AdmissionRequest) -> bool:
    """Whether one RuleWithOperations covers the request, as the webhook rules matcher decides.

    `*` in operations, apiGroups and apiVersions matches anything; in resources `*`
    means every resource but no subresource, `*/*` everything, `pods/*` pods and all its
    subresources, `*/status` every status subresource. A missing scope means `*`.
    """
    return (
        _scope_matches(str(rule.get("scope") or "*"), req)
        and _exact_or_wildcard(rule.get("operations") or [], req.operation)
        and _exact_or_wildcard(rule.get("apiGroups") or [], req.group)
        and _exact_or_wildcard(rule.get("apiVersions") or [], req.version)
        and _resource_matches(rule.get("resources") or [], req)
    )


def is_exempt(req: AdmissionRequest) -> bool:
    """Admission configuration objects never go through webhooks."""
    kind_group = req.group if req.kind_group is None else req.kind_group
    return kind_group == EXEMPT_GROUP and req.kind in EXEMPT_KINDS


def admission_review(req: AdmissionRequest) -> Obj:
    """The AdmissionReview v1 request body kube-apiserver POSTs to a webhook."""
    request: Obj = {
        "uid": req.uid,
        "kind": req.kind_ref(),
        "resource": req.resource_ref(),
        "requestKind": req.kind_ref(),
        "requestResource": req.resource_ref(),
        "operation": req.operation,
        "userInfo": req.user.as_dict(),
        "object": req.object,
        "oldObject": req.old_object,
        "dryRun": req.dry_run,
        "options": _options(req),
    }
    if req.subresource:
        request["subResource"] = req.subresource
        request["requestSubResource"] = req.subresource
    if req.name:
        request["name"] = req.name
    if req.admission_namespace:
        request["namespace"] = req.admission_namespace
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "request": request}


def _options(req: AdmissionRequest) -> Obj | None:
    kind = OPTIONS_KINDS.get(req.operation)
    if kind is None:
        return req.options
    return {"apiVersion": "meta.k8s.io/v1", "kind": kind, **(req.options or {})}


def denial(webhook: str, status: Any) -> APIError:
    """The error a webhook's `allowed: false` answer becomes (webhook errors.ToStatusErr)."""
    result: Mapping[str, Any] = status if isinstance(status, Mapping) else {}
    code = result.get("code")
    if not isinstance(code, int) or code < 400:
        code = 400
    reason = str(result.get("reason") or "")
    explanation = str(result.get("message") or reason)
    denied = f'admission webhook "{webhook}" denied the request'
    message = f"{denied}: {explanation}" if explanation else f"{denied} without explanation"
    details = result.get("details")
    return APIError(code, reason, message, dict(details) if isinstance(details, Mapping) else {})


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    metadata = (obj or {}).get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return dict(labels) if isinstance(labels, Mapping) else {}


def _is_empty_selector(selector: Mapping[str, Any] | None) -> bool:
    return not selector or not (selector.get("matchLabels") or selector.get("matchExpressions"))


class _CallError(Exception):
    """Calling the webhook failed (webhookutil.ErrCallingWebhook): `failurePolicy` decides."""

    def __init__(self, webhook: str, reason: str) -> None:
        super().__init__(f'failed calling webhook "{webhook}": {reason}')


@dataclass(frozen=True)
class _Target:
    """Where to POST: `shown` is the URL error messages name, `url` the one dialled."""

    shown: str
    url: str
    server_hostname: str | None = None


@dataclass(frozen=True)
class _Response:
    allowed: bool
    status: Any
    warnings: tuple[str, ...]
    patch: str | None
    patch_type: str | None


@dataclass(frozen=True)
class _Verdict:
    """What one webhook call came to: warnings, an error to report, and ops to apply."""

    warnings: tuple[str, ...] = ()
    error: APIError | None = None
    patch: list[Any] | None = None


def _calling_failed(exc: _CallError) -> APIError:
    message = str(exc)
    return replace(internal(message), details={"causes": [{"message": message}]})


def _invalid_response(webhook: str, why: str) -> _CallError:
    return _CallError(webhook, f"received invalid webhook response: {why}")


def _gvk_text(review: Mapping[str, Any]) -> str:
    group, _, version = str(review.get("apiVersion") or "").rpartition("/")
    return f"{group}/{version}, Kind={review.get('kind') or ''}"


def _parse_response(webhook: Webhook, review: Any, *, uid: str, mutating: bool) -> _Response:
    """Check an AdmissionReview answer the way VerifyAdmissionResponse does."""
    response = review.get("response") if isinstance(review, Mapping) else None
    if not isinstance(response, Mapping):
        raise _invalid_response(webhook.name, "webhook response was absent")
    if response.get("uid") != uid:
        raise _invalid_response(
            webhook.name, f'expected response.uid="{uid}", got "{response.get("uid") or ""}"'
        )
    if _gvk_text(review) != REVIEW_GVK:
        raise _invalid_response(
            webhook.name, f"expected webhook response of {REVIEW_GVK}, got {_gvk_text(review)}"
        )
    patch, patch_type = response.get("patch") or None, response.get("patchType")
    if mutating:
        _check_patch_fields(webhook, patch, patch_type)
    elif patch:
        raise _invalid_response(webhook.name, "validating webhook may not return response.patch")
    elif patch_type is not None:
        raise _invalid_response(webhook.name, "validating webhook may not return response.patchType")
    warnings = response.get("warnings") or []
    return _Response(
        allowed=response.get("allowed") is True,
        status=response.get("status"),
        warnings=tuple(str(w) for w in warnings) if isinstance(warnings, list) else (),
        patch=str(patch) if patch else None,
        patch_type=str(patch_type) if patch_type is not None else None,
    )


def _check_patch_fields(webhook: Webhook, patch: Any, patch_type: Any) -> None:
    if patch and patch_type is None:
        raise _invalid_response(webhook.name, "webhook returned response.patch but not response.patchType")
    if not patch and patch_type is not None:
        raise _invalid_response(webhook.name, "webhook returned response.patchType but not response.patch")
    if patch_type is not None and not patch_type:
        raise _invalid_response(
            webhook.name, f'webhook returned invalid response.patchType of "{patch_type}"'
        )


def _decode_patch(webhook: Webhook, response: _Response, req: AdmissionRequest) -> list[Any] | None:
    """The JSONPatch operations of a mutating answer, or None when there is nothing to apply."""
    if not response.patch:
        return None
    try:
        ops = json.loads(base64.b64decode(response.patch, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise _CallError(webhook.name, f"received undecodable patch in webhook response: {exc}") from exc
    if not isinstance(ops, list):
        raise _CallError(webhook.name, "received undecodable patch in webhook response: not a JSON array")
    if not ops:
        return None
    if req.object is None:
        raise internal(
            f'admission webhook "{webhook.name}" attempted to modify the object, '
            "which is not supported for this operation"
        )
    if response.patch_type != JSON_PATCH:
        raise _CallError(webhook.name, f'unsupported patch type "{response.patch_type}"')
    return ops


def _connection_error_text(exc: BaseException) -> str:
    """An aiohttp failure worded like Go's net/http errors."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cause = exc.certificate_error
        why = cause.verify_message if isinstance(cause, ssl.SSLCertVerificationError) else str(cause)
        return f"tls: failed to verify certificate: x509: {why}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        dial = f"dial tcp {exc.host}:{exc.port}"
        if exc.os_error.errno == errno.ECONNREFUSED:
            return f"{dial}: connect: connection refused"
        return f"{dial}: {exc.os_error.strerror or exc.os_error}"
    return str(exc) or type(exc).__name__


def _http_error_text(status: int, body: bytes) -> str:
    """client-go's error for a non-2xx answer: the Status message, or a stock sentence."""
    try:
        decoded = json.loads(body)
    except ValueError:
        decoded = None
    if isinstance(decoded, Mapping) and decoded.get("kind") == "Status" and decoded.get("message"):
        return str(decoded["message"])
    if status in HTTP_ERROR_TEXT:
        return HTTP_ERROR_TEXT[status]
    if status >= 500:
        text = json.dumps(body.decode("utf-8", "replace").strip()[:1024])
        return f"an error on the server ({text}) has prevented the request from succeeding"
    return f"the server responded with the status code {status} but did not return more information"


def _decode_ca_bundle(ca_bundle: str) -> str:
    try:
        return base64.b64decode(ca_bundle, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ssl.SSLError("caBundle is not base64-encoded PEM") from exc


def _default_patch_applier() -> PatchApplier:
    from .patch import json_patch

    return json_patch


class WebhookDispatcher:
    """Calls the admission webhooks the current configurations select for a request."""

    def __init__(
        self,
        *,
        configurations: Callable[[str], list[Obj]],
        namespace: Callable[[str], Obj | None],
        resolve_service: Callable[[str, str, int], str],
        session_factory: SessionFactory | None = None,
        selector_matches: SelectorMatcher | None = None,
        apply_patch: PatchApplier | None = None,
    ) -> None:
        """`configurations("mutating" | "validating")` lists the configuration objects;
        `namespace(name)` gives a Namespace object or None; `resolve_service(namespace,
        name, port)` gives the base URL (`https://10.244.1.5:8443`) a service port is served
        at, or raises ResolveError with kube-apiserver's reason. `selector_matches` and `apply_patch` default to the server's
        `selectors.label_selector_matches` and `patch.json_patch`.
        """
        self._configurations = configurations
        self._namespace = namespace
        self._resolve_service = resolve_service
        self._session_factory = session_factory or (lambda: aiohttp.ClientSession(trust_env=False))
        self._session: aiohttp.ClientSession | None = None
        self._selector_matches = selector_matches or label_selector_matches
        self._apply_patch = apply_patch or _default_patch_applier()
        self._ssl_contexts: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def webhooks(self, kind: str) -> list[Webhook]:
        """Every webhook of the `kind` ("mutating"/"validating") configurations, in calling order."""
        configurations = sorted(
            self._configurations(kind), key=lambda c: str(c.get("metadata", {}).get("name", ""))
        )
        return [
            Webhook(str(c.get("metadata", {}).get("name", "")), spec)
            for c in configurations
            for spec in c.get("webhooks") or []
            if isinstance(spec, Mapping)
        ]

    async def mutate(self, req: AdmissionRequest, *, warnings: list[str] | None = None) -> Obj | None:
        """Run the mutating webhooks in order and return the object as they patched it.

        Webhook warnings are appended to `warnings`, also when a webhook denies the request.
        """
        if is_exempt(req):
            return req.object
        for webhook in self.webhooks(MUTATING):
            if not self.should_call(webhook, req):
                continue
            verdict = await self._run(webhook, req, mutating=True)
            if warnings is not None:
                warnings.extend(verdict.warnings)
            if verdict.error is not None:
                raise verdict.error
            if verdict.patch is not None and req.object is not None:
                req = replace(req, object=self._patched(req.object, verdict.patch))
        return req.object

    async def validate(self, req: AdmissionRequest, *, warnings: list[str] | None = None) -> None:
        """Run the matching validating webhooks concurrently; raise the first failure in order.

        Webhook warnings are appended to `warnings`, also when a webhook denies the request.
        """
        if is_exempt(req):
            return
        selected = [w for w in self.webhooks(VALIDATING) if self.should_call(w, req)]
        verdicts = await asyncio.gather(*(self._run(w, req, mutating=False) for w in selected))
        for verdict in verdicts:
            if warnings is not None:
                warnings.extend(verdict.warnings)
        for verdict in verdicts:
            if verdict.error is not None:
                raise verdict.error

    def should_call(self, webhook: Webhook, req: AdmissionRequest) -> bool:
        """Rules, then objectSelector, then namespaceSelector, as ShouldCallHook orders them.

        Raises 404 when the request's namespace is needed for a selector and does not exist.
        """
        if not any(rule_matches(rule, req) for rule in webhook.rules):
            return False
        return self._object_selected(webhook, req) and self._namespace_selected(webhook, req)

    def _matches(self, selector: dict[str, Any], labels: Mapping[str, str]) -> bool:
        return self._selector_matches(selector, labels, none_matches=True)

    def _object_selected(self, webhook: Webhook, req: AdmissionRequest) -> bool:
        selector = webhook.selector("objectSelector")
        if selector is None or _is_empty_selector(selector):
            return True
        candidates = (obj for obj in (req.object, req.old_object) if obj is not None)
        return any(self._matches(selector, _labels(obj)) for obj in candidates)

    def _namespace_selected(self, webhook: Webhook, req: AdmissionRequest) -> bool:
        if not req.namespaced and not req.is_namespace:
            return True
        selector = webhook.selector("namespaceSelector")
        if selector is None or _is_empty_selector(selector):
            return True
        return self._matches(selector, self._namespace_labels(req))

    def _namespace_labels(self, req: AdmissionRequest) -> dict[str, str]:
        if req.is_namespace and not req.subresource and req.operation in (CREATE, UPDATE):
            return _labels(req.object)
        name = req.admission_namespace
        namespace = self._namespace(name)
        if namespace is None:
            raise not_found("namespaces", name)
        return _labels(namespace)

    def _patched(self, obj: Obj, ops: list[Any]) -> Obj:
        try:
            return self._apply_patch(copy.deepcopy(obj), ops)
        except APIError as exc:
            raise internal(exc.message) from exc

    async def _run(self, webhook: Webhook, req: AdmissionRequest, *, mutating: bool) -> _Verdict:
        """Call one webhook; what it answered (or how calling it failed) is returned, not raised."""
        warnings: tuple[str, ...] = ()
        try:
            response = await self._call(webhook, req, mutating=mutating)
            warnings = response.warnings
            if not response.allowed:
                return _Verdict(warnings, denial(webhook.name, response.status))
            patch = _decode_patch(webhook, response, req) if mutating else None
        except _CallError as exc:
            if webhook.ignores_failures:
                logger.warning(
                    "Failed calling webhook %s of %s, failing open: %s",
                    webhook.name,
                    webhook.configuration,
                    exc,
                )
                return _Verdict(warnings)
            return _Verdict(warnings, _calling_failed(exc))
        except APIError as exc:
            return _Verdict(warnings, exc)
        return _Verdict(warnings, None, patch)

    async def _call(self, webhook: Webhook, req: AdmissionRequest, *, mutating: bool) -> _Response:
        self._check_dry_run(webhook, req)
        if not webhook.accepts_v1:
            raise _CallError(
                webhook.name,
                "could not create admission objects: "
                "webhook does not accept known AdmissionReview versions (v1)",
            )
        target = self._target(webhook)
        ssl_context = await self._ssl_context(webhook, target)
        review = await self._post(webhook, target, admission_review(req), ssl_context)
        return _parse_response(webhook, review, uid=req.uid, mutating=mutating)

    @staticmethod
    def _check_dry_run(webhook: Webhook, req: AdmissionRequest) -> None:
        if not req.dry_run:
            return
        if webhook.side_effects is None:
            raise _CallError(webhook.name, "Webhook SideEffects is nil")
        if webhook.side_effects not in DRY_RUN_SAFE_SIDE_EFFECTS:
            raise bad_request(f'admission webhook "{webhook.name}" does not support dry run')

    def _target(self, webhook: Webhook) -> _Target:
        config = webhook.client_config
        timeout = {"timeout": f"{webhook.timeout}s"}
        if isinstance(config.get("url"), str):
            url = str(URL(config["url"]).update_query(timeout))
            return _Target(url, url)
        service = config.get("service")
        if not isinstance(service, Mapping):
            raise _CallError(webhook.name, "could not get REST client: no url or service in clientConfig")
        namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
        port, path = int(service.get("port") or 443), str(service.get("path") or "/")
        host = f"{name}.{namespace}.svc"
        # as Go prints the request URL: the port stays, even the default one
        shown = str(URL(f"https://{host}{path}").update_query(timeout)).replace(host, f"{host}:{port}", 1)
        try:
            base = self._resolve_service(namespace, name, port)
        except ResolveError as exc:
            raise _CallError(webhook.name, f'failed to call webhook: Post "{shown}": {exc}') from None
        return _Target(shown, str(URL(base.rstrip("/") + path).update_query(timeout)), host)

    async def _ssl_context(self, webhook: Webhook, target: _Target) -> ssl.SSLContext | None:
        """A context trusting `caBundle` alone, or the system roots without one (built off-loop)."""
        if URL(target.url).scheme != "https":
            return None
        ca_bundle = str(webhook.client_config.get("caBundle") or "")
        context = self._ssl_contexts.get(ca_bundle)
        if context is None:
            try:
                context = await asyncio.to_thread(self._new_ssl_context, ca_bundle)
            except ssl.SSLError as exc:
                raise _CallError(
                    webhook.name, f"could not get REST client: unable to load root certificates: {exc}"
                ) from exc
            self._ssl_contexts[ca_bundle] = context
        return context

    @staticmethod
    def _new_ssl_context(ca_bundle: str) -> ssl.SSLContext:
        if not ca_bundle:
            return ssl.create_default_context()
        return ssl.create_default_context(cadata=_decode_ca_bundle(ca_bundle))

    async def _post(
        self, webhook: Webhook, target: _Target, review: Obj, ssl_context: ssl.SSLContext | None
    ) -> Any:
        if self._session is None:
            self._session = self._session_factory()
        failed = f'failed to call webhook: Post "{target.shown}"'
        try:
            async with asyncio.timeout(webhook.timeout):
                async with self._session.post(
                    target.url,
                    json=review,
                    headers={"Accept": "application/json", "User-Agent": USER_AGENT},
                    ssl=ssl_context if ssl_context is not None else True,
                    server_hostname=target.server_hostname if ssl_context is not None else None,
                ) as answer:
                    status, body = answer.status, await answer.read()
        except TimeoutError as exc:
            raise _CallError(webhook.name, f"{failed}: context deadline exceeded") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise _CallError(webhook.name, f"{failed}: {_connection_error_text(exc)}") from exc
        if not 200 <= status < 300:
            raise _CallError(webhook.name, f"failed to call webhook: {_http_error_text(status, body)}")
        try:
            return json.loads(body)
        except ValueError as exc:
            raise _CallError(webhook.name, f"failed to call webhook: {exc}") from exc
