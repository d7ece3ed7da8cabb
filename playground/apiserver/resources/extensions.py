"""Strategies for API-extension kinds: CRDs, custom resources, webhook configurations,
and plain kinds that only track generation."""

from __future__ import annotations

from .. import crds, schema
from ..errors import Cause
from .base import Obj, Strategy


class GenerationStrategy(Strategy):
    has_generation = True


class WebhookConfigurationStrategy(Strategy):
    has_generation = True

    def default(self, obj: Obj) -> None:
        for hook in obj.get("webhooks") or []:
            if not isinstance(hook, dict):
                continue
            hook.setdefault("failurePolicy", "Fail")
            hook.setdefault("matchPolicy", "Equivalent")
            hook.setdefault("namespaceSelector", {})
            hook.setdefault("objectSelector", {})
            hook.setdefault("timeoutSeconds", 10)
            if obj.get("kind") == "MutatingWebhookConfiguration":
                hook.setdefault("reinvocationPolicy", "Never")
            for rule in hook.get("rules") or []:
                if isinstance(rule, dict):
                    rule.setdefault("scope", "*")
            service = (hook.get("clientConfig") or {}).get("service")
            if isinstance(service, dict):
                service.setdefault("port", 443)

    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        names: set[str] = set()
        for i, hook in enumerate(obj.get("webhooks") or []):
            field = f"webhooks[{i}]"
            name = hook.get("name") if isinstance(hook, dict) else None
            if not name or name.count(".") < 2:
                causes.append(
                    Cause(
                        f"{field}.name",
                        f'Invalid value: "{name}": should be a domain with at least three segments separated by dots',
                    )
                )
            elif name in names:
                causes.append(Cause(f"{field}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
            names.add(str(name))
            if not isinstance(hook, dict):
                continue
            if not hook.get("sideEffects"):
                causes.append(
                    Cause(
                        f"{field}.sideEffects",
                        'Unsupported value: "": supported values: "None", "NoneOnDryRun"',
                        "FieldValueNotSupported",
                    )
                )
            if not hook.get("admissionReviewVersions"):
                causes.append(
                    Cause(
                        f"{field}.admissionReviewVersions",
                        "Required value: must specify one of v1, v1beta1",
                        "FieldValueRequired",
                    )
                )
            config = hook.get("clientConfig") or {}
            if bool(config.get("url")) == bool(config.get("service")):
                causes.append(
                    Cause(
                        f"{field}.clientConfig",
                        "Required value: exactly one of url or service is required",
                        "FieldValueRequired",
                    )
                )
        return causes


CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


class CRDStrategy(Strategy):
    has_generation = True
    name_rule = "subdomain"

    def default(self, obj: Obj) -> None:
        crds.defaults_for_crd(obj)

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        """Status starts with the storage version; the cleanup finalizer removes the objects on delete."""
        versions = (obj.get("spec") or {}).get("versions") or []
        stored = [v.get("name") for v in versions if isinstance(v, dict) and v.get("storage")]
        obj["status"] = {"storedVersions": stored}
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)

    def validate(self, obj: Obj) -> list[Cause]:
        return crds.validate_crd(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = crds.validate_crd(new)
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        for key in ("group", "scope"):
            if old_spec.get(key) != new_spec.get(key):
                causes.append(
                    Cause(f"spec.{key}", f'Invalid value: "{new_spec.get(key)}": field is immutable')
                )
        old_plural = (old_spec.get("names") or {}).get("plural")
        new_plural = (new_spec.get("names") or {}).get("plural")
        if old_plural != new_plural:
            causes.append(Cause("spec.names.plural", f'Invalid value: "{new_plural}": field is immutable'))
        return causes


class CustomResourceStrategy(Strategy):
    """Custom resources: defaulting, pruning and validation from the version's structural schema."""

    has_generation = True

    def __init__(self, schema_doc: Obj | None, *, kind: str) -> None:
        self.schema = schema_doc
        self.kind = kind

    def default(self, obj: Obj) -> None:
        if self.schema:
            schema.prune(obj, self.schema)
            schema.apply_defaults(obj, self.schema)

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        """Unlike built-in kinds, a custom resource has no status until one is written."""
        if status_subresource:
            obj.pop("status", None)

    def validate(self, obj: Obj) -> list[Cause]:
        if not self.schema:
            return []
        body = {k: v for k, v in obj.items() if k != "metadata"}
        return schema.validate(body, _without_metadata(self.schema))


def _without_metadata(doc: Obj) -> Obj:
    """metadata is validated as ObjectMeta, not by the CRD's schema."""
    props = dict(doc.get("properties") or {})
    props.pop("metadata", None)
    out = dict(doc)
    if props or "properties" in doc:
        out["properties"] = props
    out["required"] = [r for r in doc.get("required") or [] if r != "metadata"]
    if not out["required"]:
        out.pop("required")
    return out
