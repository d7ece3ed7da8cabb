"""CustomResourceDefinitions: their validation, defaults, served types and status.

kube-apiserver's apiextensions part decides whether a CRD is acceptable, fills in the
fields the API defaults, serves one resource per served version and then reports the CRD
as established. This module does each of those on the JSON-shaped CRD (apiextensions.k8s.io/v1)
without touching storage, so the registry and the CRD controller can call it directly.

Validation mirrors the internal API the real server validates: when every version has
the same schema (or subresources, or printer columns) those are checked once, at the
top-level paths `spec.validation.openAPIV3Schema...`, `spec.subresources...` and
`spec.additionalPrinterColumns[i]`, exactly as kube-apiserver reports them; only when
versions differ do errors point into `spec.versions[i]`. Messages follow apimachinery's
field errors word for word. CEL rules (`x-kubernetes-validations`) are checked for shape
only, never compiled.
"""

from __future__ import annotations

import copy
import datetime
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import Cause
from .resources.base import Obj, PrinterColumn, ResourceType, ScaleSubresource, Strategy
from .schema import (
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
    LIST_MAP_KEYS,
    LIST_TYPE,
    PRESERVE_UNKNOWN,
    RESOURCE_META_FIELDS,
    GoLiteral,
    compile_pattern,
    dns1035_label_errors,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    go_quote,
    go_syntax,
    index,
    json_equal,
    key,
    prune_unknown,
    validate_embedded,
    validate_value,
)

StrategyFactory = Callable[[Obj, Obj], Strategy]

MAP_TYPE = "x-kubernetes-map-type"
VALIDATIONS = "x-kubernetes-validations"
API_APPROVAL = "api-approved.kubernetes.io"
#: where CRDs are stored
STORAGE_KEY = "customresourcedefinitions.apiextensions.k8s.io"

_OPENAPI_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
_COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
_COLUMN_FORMATS = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"]
_RULE_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]
_REVIEW_VERSIONS = ("v1", "v1beta1")
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]

#: schema keys a structural schema does not keep, so metadata may carry them
_UNSTRUCTURED_KEYS = frozenset({"example", "externalDocs"})
#: keys the root schema may use when the status subresource is enabled, in JSONSchemaProps order
_ROOT_KEYS = (
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "nullable",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    PRESERVE_UNKNOWN,
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
    LIST_MAP_KEYS,
    LIST_TYPE,
    MAP_TYPE,
    VALIDATIONS,
)
_ROOT_ALLOWED_WITH_STATUS = frozenset(
    {
        "description",
        "type",
        "format",
        "title",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "required",
        "items",
        "properties",
        "externalDocs",
        "example",
        PRESERVE_UNKNOWN,
        VALIDATIONS,
    }
)
_UNSUPPORTED_KEYWORDS = (
    ("id", "id is not supported"),
    ("additionalItems", "additionalItems is not supported"),
    ("patternProperties", "patternProperties is not supported"),
    ("definitions", "definitions is not supported"),
    ("dependencies", "dependencies is not supported"),
    ("$ref", "$ref is not supported"),
)
#: keywords that count as used as soon as they are set, even to false or {}
_SET_MEANS_USED = frozenset({"additionalItems", "dependencies", "$ref", "additionalProperties", "default"})
#: what a schema inside allOf/anyOf/oneOf/not may not say, and how the apiserver says so
_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    (PRESERVE_UNKNOWN, "must be false to be structural"),
    (EMBEDDED_RESOURCE, "must be false to be structural"),
    (INT_OR_STRING, "must be false to be structural"),
    (LIST_MAP_KEYS, "must be empty to be structural"),
    (LIST_TYPE, "must be undefined to be structural"),
    (MAP_TYPE, "must be undefined to be structural"),
    (VALIDATIONS, "must be empty to be structural"),
)
_TYPE_REQUIRED = {
    "root": "must not be empty at the root",
    "item": "must not be empty for specified array items",
    "field": "must not be empty for specified object fields",
}

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


# -- small helpers ----------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _is_zero(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(_SUBDOMAIN_MESSAGE)
    return errs


def _string_slice(values: Any) -> GoLiteral:
    if values is None:
        return GoLiteral("[]string(nil)")
    return GoLiteral("[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}")


def _versions(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [_mapping(v) for v in spec.get("versions") or []]


def _storage_version(spec: Mapping[str, Any]) -> str:
    return next((_text(v.get("name")) for v in _versions(spec) if v.get("storage") is True), "")


# -- where per-version parts are validated ----------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """The internal API's view of a v1 CRD: parts all versions share move to the top level."""

    shared_schema: bool
    shared_subresources: bool
    shared_columns: bool
    schema: Mapping[str, Any] | None
    subresources: Mapping[str, Any] | None
    columns: list[Any]

    def version_schema(self, version: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return None if self.shared_schema else version.get("schema")

    def version_subresources(self, version: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return self.subresources if self.shared_subresources else version.get("subresources")

    def any_status(self, versions: list[Mapping[str, Any]]) -> bool:
        shared = self.shared_subresources and "status" in _mapping(self.subresources)
        return shared or any("status" in _mapping(self.version_subresources(v)) for v in versions)


def _layout(versions: list[Mapping[str, Any]]) -> _Layout:
    if not versions:
        return _Layout(False, False, False, None, None, [])
    first = versions[0]
    same_schema = all(v.get("schema") == first.get("schema") for v in versions)
    same_subresources = all(v.get("subresources") == first.get("subresources") for v in versions)
    columns = list(first.get("additionalPrinterColumns") or [])
    same_columns = all(list(v.get("additionalPrinterColumns") or []) == columns for v in versions)
    return _Layout(
        same_schema,
        same_subresources,
        same_columns,
        first.get("schema") if same_schema else None,
        first.get("subresources") if same_subresources else None,
        columns if same_columns else [],
    )


def _versions_literal(spec: Mapping[str, Any], layout: _Layout) -> GoLiteral:
    """How Go prints the internal versions slice (%#v), per-version parts already hoisted."""
    if spec.get("versions") is None:
        return GoLiteral("[]apiextensions.CustomResourceDefinitionVersion(nil)")
    items = ", ".join(_version_literal(v, layout) for v in _versions(spec))
    return GoLiteral("[]apiextensions.CustomResourceDefinitionVersion{" + items + "}")


def _version_literal(version: Mapping[str, Any], layout: _Layout) -> str:
    def pointer(type_name: str, present: bool) -> str:
        return f"(*{type_name})(0xc000a3e000)" if present else f"(*{type_name})(nil)"

    columns = None if layout.shared_columns else version.get("additionalPrinterColumns")
    fields = [
        f"Name:{go_quote(_text(version.get('name')))}",
        f"Served:{go_syntax(version.get('served') is True)}",
        f"Storage:{go_syntax(version.get('storage') is True)}",
        f"Deprecated:{go_syntax(version.get('deprecated') is True)}",
        "DeprecationWarning:" + pointer("string", version.get("deprecationWarning") is not None),
        "Schema:"
        + pointer("apiextensions.CustomResourceValidation", layout.version_schema(version) is not None),
        "Subresources:"
        + pointer(
            "apiextensions.CustomResourceSubresources",
            not layout.shared_subresources and version.get("subresources") is not None,
        ),
        "AdditionalPrinterColumns:"
        + _columns_literal(columns if isinstance(columns, list) and columns else None),
        "SelectableFields:[]apiextensions.SelectableField(nil)",
    ]
    return "apiextensions.CustomResourceDefinitionVersion{" + ", ".join(fields) + "}"


def _columns_literal(columns: list[Any] | None) -> str:
    if columns is None:
        return "[]apiextensions.CustomResourceColumnDefinition(nil)"
    items = []
    for column in columns:
        col = _mapping(column)
        items.append(
            "apiextensions.CustomResourceColumnDefinition{"
            f"Name:{go_quote(_text(col.get('name')))}, Type:{go_quote(_text(col.get('type')))}, "
            f"Format:{go_quote(_text(col.get('format')))}, "
            f"Description:{go_quote(_text(col.get('description')))}, "
            f"Priority:{int(col.get('priority') or 0)}, JSONPath:{go_quote(_text(col.get('jsonPath')))}"
            "}"
        )
    return "[]apiextensions.CustomResourceColumnDefinition{" + ", ".join(items) + "}"


# -- validate_crd -----------------------------------------------------------------------------


def validate_crd(crd: Mapping[str, Any]) -> list[Cause]:
    """The causes kube-apiserver's CustomResourceDefinition validation reports.

    Run it after `defaults_for_crd`, as the server validates decoded (defaulted) objects.
    Generic ObjectMeta checks (name syntax, labels, annotations) are left to the shared
    metadata validation; only the CRD's own naming rule is checked here.
    """
    meta, spec, status = _mapping(crd.get("metadata")), _mapping(crd.get("spec")), _mapping(crd.get("status"))
    causes = _metadata_causes(meta, spec)
    causes += _spec_causes(spec)
    if "acceptedNames" in status:
        causes += _names_causes(_mapping(status.get("acceptedNames")), "status.acceptedNames")
    if "storedVersions" in status:
        causes += _stored_versions_causes(status.get("storedVersions"), _versions(spec))
    causes += _approval_causes(meta, spec)
    if spec.get("preserveUnknownFields") is True:
        causes.append(
            field_invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
            )
        )
    return causes


def _metadata_causes(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> list[Cause]:
    names = _mapping(spec.get("names"))
    required = f"{_text(names.get('plural'))}.{_text(spec.get('group'))}"
    detail = 'must be spec.names.plural+"."+spec.group'
    causes = []
    generate_name, name = _text(meta.get("generateName")), _text(meta.get("name"))
    if generate_name and generate_name != required:
        causes.append(field_invalid("metadata.generateName", generate_name, detail))
    if name and name != required:
        causes.append(field_invalid("metadata.name", name, detail))
    return causes


def _spec_causes(spec: Mapping[str, Any]) -> list[Cause]:
    versions = _versions(spec)
    layout = _layout(versions)
    causes = _group_causes(spec.get("group"))
    causes += _scope_causes(spec.get("scope"))
    causes += _schema_presence_causes(versions, layout)
    if spec.get("preserveUnknownFields") is True and _has_defaults(versions):
        causes.append(
            field_invalid(
                "spec.preserveUnknownFields", True, "must be false in order to use defaults in the schema"
            )
        )
    for i, version in enumerate(versions):
        causes += _version_causes(version, layout, f"spec.versions[{i}]")
    causes += _version_set_causes(spec, versions, layout)
    causes += _required_names_causes(_mapping(spec.get("names")))
    causes += _names_causes(_mapping(spec.get("names")), "spec.names")
    if layout.shared_schema:
        causes += _validation_causes(
            layout.schema, "spec.validation", status_enabled=layout.any_status(versions)
        )
    if layout.shared_subresources:
        causes += _subresources_causes(layout.subresources, "spec.subresources")
    if layout.shared_columns:
        for i, column in enumerate(layout.columns):
            causes += _column_causes(_mapping(column), f"spec.additionalPrinterColumns[{i}]")
    causes += _conversion_causes(spec)
    return causes


def _group_causes(group: Any) -> list[Cause]:
    group = _text(group)
    if not group:
        return [field_required("spec.group")]
    errs = _subdomain_errors(group)
    if errs:
        return [field_invalid("spec.group", group, ",".join(errs))]
    if "." not in group:
        return [field_invalid("spec.group", group, "should be a domain with at least one dot")]
    return []


def _scope_causes(scope: Any) -> list[Cause]:
    scope = _text(scope)
    if not scope:
        return [field_required("spec.scope")]
    if scope not in ("Cluster", "Namespaced"):
        return [field_not_supported("spec.scope", scope, ["Cluster", "Namespaced"])]
    return []


def _has_openapi_schema(container: Any) -> bool:
    return _mapping(container).get("openAPIV3Schema") is not None


def _schema_presence_causes(versions: list[Mapping[str, Any]], layout: _Layout) -> list[Cause]:
    if layout.shared_schema and _has_openapi_schema(layout.schema):
        return []
    return [
        field_required(f"spec.versions[{i}].schema.openAPIV3Schema")
        for i, version in enumerate(versions)
        if not _has_openapi_schema(layout.version_schema(version))
    ]


def _has_defaults(versions: list[Mapping[str, Any]]) -> bool:
    return any(_schema_has_default(_mapping(v.get("schema")).get("openAPIV3Schema")) for v in versions)


def _schema_has_default(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return False
    if node.get("default") is not None:
        return True
    return any(_schema_has_default(sub) for sub in _subschemas(node))


def _subschemas(node: Mapping[str, Any]) -> list[Any]:
    """Every schema nested directly in `node`, wherever the keyword puts it."""
    subs: list[Any] = []
    items = node.get("items")
    subs += items if isinstance(items, list) else [items]
    for keyword in ("allOf", "anyOf", "oneOf"):
        subs += list(node.get(keyword) or [])
    subs += [node.get("not"), node.get("additionalProperties"), node.get("additionalItems")]
    for keyword in ("properties", "patternProperties", "definitions", "dependencies"):
        subs += list(_mapping(node.get(keyword)).values())
    return subs


def _version_causes(version: Mapping[str, Any], layout: _Layout, path: str) -> list[Cause]:
    name = _text(version.get("name"))
    errs = dns1035_label_errors(name)
    causes = [field_invalid(f"{path}.name", name, ",".join(errs))] if errs else []
    causes += _deprecation_causes(version, f"{path}.deprecationWarning")
    status_enabled = "status" in _mapping(layout.version_subresources(version))
    causes += _validation_causes(
        layout.version_schema(version), f"{path}.schema", status_enabled=status_enabled
    )
    if not layout.shared_subresources:
        causes += _subresources_causes(version.get("subresources"), f"{path}.subresources")
    if not layout.shared_columns:
        for i, column in enumerate(version.get("additionalPrinterColumns") or []):
            causes += _column_causes(_mapping(column), f"{path}.additionalPrinterColumns[{i}]")
    return causes


def _deprecation_causes(version: Mapping[str, Any], path: str) -> list[Cause]:
    warning = version.get("deprecationWarning")
    if warning is None:
        return []
    warning = str(warning)
    if version.get("deprecated") is not True:
        return [field_invalid(path, warning, "can only be set for deprecated versions")]
    problems = []
    if len(warning.encode()) > 256:
        problems.append("must be <= 256 characters long")
    if not warning:
        problems.append("must not be an empty string")
    offset = 0
    for ch in warning:
        if not ch.isprintable():
            problems.append(
                "must only contain printable UTF-8 characters; "
                f"non-printable character found at index {offset}"
            )
            break
        offset += len(ch.encode())
    return [field_invalid(path, warning, problem) for problem in problems]


def _version_set_causes(
    spec: Mapping[str, Any], versions: list[Mapping[str, Any]], layout: _Layout
) -> list[Cause]:
    names = [_text(v.get("name")) for v in versions]
    causes = []
    if len(set(names)) != len(names):
        causes.append(
            field_invalid(
                "spec.versions", _versions_literal(spec, layout), "must contain unique version names"
            )
        )
    if sum(v.get("storage") is True for v in versions) != 1:
        causes.append(
            field_invalid(
                "spec.versions",
                _versions_literal(spec, layout),
                "must have exactly one version marked as storage version",
            )
        )
    if names and names[0]:
        errs = dns1035_label_errors(names[0])
        if errs:
            causes.append(field_invalid("spec.version", names[0], ",".join(errs)))
    return causes


def _required_names_causes(names: Mapping[str, Any]) -> list[Cause]:
    return [
        field_required(f"spec.names.{name}")
        for name in ("plural", "singular", "kind", "listKind")
        if not _text(names.get(name))
    ]


def _names_causes(names: Mapping[str, Any], path: str) -> list[Cause]:
    causes = []
    for name in ("plural", "singular"):
        value = _text(names.get(name))
        errs = dns1035_label_errors(value) if value else []
        if errs:
            causes.append(field_invalid(f"{path}.{name}", value, ",".join(errs)))
    for name in ("kind", "listKind"):
        value = _text(names.get(name))
        errs = dns1035_label_errors(value.lower()) if value else []
        if errs:
            detail = "may have mixed case, but should otherwise match: " + ",".join(errs)
            causes.append(field_invalid(f"{path}.{name}", value, detail))
    causes += _label_list_causes(names.get("shortNames"), f"{path}.shortNames")
    kind, list_kind = _text(names.get("kind")), _text(names.get("listKind"))
    if kind and kind == list_kind:
        causes.append(field_invalid(f"{path}.listKind", list_kind, "kind and listKind may not be the same"))
    causes += _label_list_causes(names.get("categories"), f"{path}.categories")
    return causes


def _label_list_causes(values: Any, path: str) -> list[Cause]:
    causes = []
    for i, value in enumerate(values or []):
        errs = dns1035_label_errors(_text(value))
        if errs:
            causes.append(field_invalid(f"{path}[{i}]", value, ",".join(errs)))
    return causes


def _stored_versions_causes(stored: Any, versions: list[Mapping[str, Any]]) -> list[Cause]:
    path = "status.storedVersions"
    names = [_text(v) for v in stored or []]
    if not names:
        return [field_invalid(path, _string_slice(stored), "must have at least one stored version")]
    causes = []
    positions = {name: i for i, name in enumerate(names)}
    for version in versions:
        name = _text(version.get("name"))
        if version.get("storage") is True and name not in positions:
            causes.append(field_invalid(path, _string_slice(names), "must have the storage version " + name))
        positions.pop(name, None)
    for name, i in positions.items():
        detail = (
            f"missing from spec.versions; {name} was previously a storage version, and must remain in "
            f"spec.versions until a storage migration ensures no data remains persisted in {name} and "
            f"removes {name} from status.storedVersions"
        )
        causes.append(field_invalid(index(path, i), name, detail))
    return causes


def _approval_causes(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> list[Cause]:
    group = _text(spec.get("group"))
    protected = any(group == g or group.endswith("." + g) for g in ("k8s.io", "kubernetes.io"))
    if not protected:
        return []
    path = key("metadata.annotations", API_APPROVAL)
    approval = _text(_mapping(meta.get("annotations")).get(API_APPROVAL))
    if not approval:
        detail = (
            f'protected groups must have approval annotation "{API_APPROVAL}", '
            "see https://github.com/kubernetes/enhancements/pull/1111"
        )
        return [field_required(path, detail)]
    if approval.startswith("unapproved") or re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*:\S*|/\S*)$", approval):
        return []
    detail = (
        f'protected groups must have approval annotation "{API_APPROVAL}" with either a URL or a reason '
        'starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111'
    )
    return [field_invalid(path, approval, detail)]


# -- subresources, printer columns, conversion ------------------------------------------------


def _simple_json_path_causes(value: str, path: str) -> list[Cause]:
    if not value:
        return [field_invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [field_invalid(path, value, "must be a simple json path starting with .")]
    return []


def _subresources_causes(subresources: Any, path: str) -> list[Cause]:
    scale = _mapping(subresources).get("scale")
    if not isinstance(scale, Mapping):
        return []
    causes = []
    for name, under in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")):
        value, field = _text(scale.get(name)), f"{path}.scale.{name}"
        if not value:
            causes.append(field_required(field))
            continue
        errs = _simple_json_path_causes(value, field)
        if not errs and not value.startswith(under):
            errs = [field_invalid(field, value, f"should be a json path under {under.rstrip('.')}")]
        causes += errs
    selector = _text(scale.get("labelSelectorPath"))
    if selector:
        field = f"{path}.scale.labelSelectorPath"
        errs = _simple_json_path_causes(selector, field)
        if not errs and not selector.startswith((".spec.", ".status.")):
            errs = [field_invalid(field, selector, "should be a json path under either .spec or .status")]
        causes += errs
    return causes


def _column_causes(column: Mapping[str, Any], path: str) -> list[Cause]:
    causes = [] if _text(column.get("name")) else [field_required(f"{path}.name")]
    column_type, types = _text(column.get("type")), "must be one of " + ",".join(_COLUMN_TYPES)
    if not column_type:
        causes.append(field_required(f"{path}.type", types))
    elif column_type not in _COLUMN_TYPES:
        causes.append(field_invalid(f"{path}.type", column_type, types))
    column_format = _text(column.get("format"))
    if column_format and column_format not in _COLUMN_FORMATS:
        causes.append(
            field_invalid(f"{path}.format", column_format, "must be one of " + ",".join(_COLUMN_FORMATS))
        )
    json_path = _text(column.get("jsonPath"))
    if not json_path:
        causes.append(field_required(f"{path}.JSONPath"))
    else:
        causes += _simple_json_path_causes(json_path, f"{path}.JSONPath")
    return causes


def _conversion_causes(spec: Mapping[str, Any]) -> list[Cause]:
    conversion = spec.get("conversion")
    if not isinstance(conversion, Mapping):
        return []
    strategy = _text(conversion.get("strategy"))
    causes = []
    if strategy and strategy != "None" and spec.get("preserveUnknownFields") is True:
        causes.append(
            field_invalid(
                "spec.conversion.strategy", strategy, "must be None if spec.preserveUnknownFields is true"
            )
        )
    if not strategy:
        return [*causes, field_required("spec.conversion.strategy")]
    if strategy not in ("None", "Webhook"):
        causes.append(field_not_supported("spec.conversion.strategy", strategy, ["None", "Webhook"]))
    webhook = _mapping(conversion.get("webhook"))
    if strategy == "Webhook":
        return causes + _webhook_causes(webhook)
    if webhook.get("clientConfig") is not None:
        causes.append(
            field_forbidden(
                "spec.conversion.webhookClientConfig", "should not be set when strategy is not set to Webhook"
            )
        )
    if webhook.get("conversionReviewVersions"):
        causes.append(
            field_forbidden(
                "spec.conversion.conversionReviewVersions",
                "should not be set when strategy is not set to Webhook",
            )
        )
    return causes


def _webhook_causes(webhook: Mapping[str, Any]) -> list[Cause]:
    config = webhook.get("clientConfig")
    causes = []
    if not isinstance(config, Mapping):
        causes.append(
            field_required("spec.conversion.webhookClientConfig", "required when strategy is set to Webhook")
        )
    elif (config.get("url") is None) == (config.get("service") is None):
        causes.append(
            field_required("spec.conversion.webhookClientConfig", "exactly one of url or service is required")
        )
    return causes + _review_versions_causes(webhook.get("conversionReviewVersions"))


def _review_versions_causes(versions: Any) -> list[Cause]:
    path = "spec.conversion.conversionReviewVersions"
    if not versions:
        return [field_required(path)]
    causes, seen = [], set()
    for i, version in enumerate(versions):
        version = _text(version)
        if version in seen:
            causes.append(field_invalid(index(path, i), version, "duplicate version"))
            continue
        seen.add(version)
        causes += [field_invalid(index(path, i), version, err) for err in dns1035_label_errors(version)]
    if not seen & set(_REVIEW_VERSIONS):
        causes.append(
            field_invalid(
                path, _string_slice(versions), "must include at least one of " + ", ".join(_REVIEW_VERSIONS)
            )
        )
    return causes


# -- the openAPIV3Schema of a version --------------------------------------------------------


def _validation_causes(container: Any, path: str, *, status_enabled: bool) -> list[Cause]:
    schema = _mapping(container).get("openAPIV3Schema")
    if not isinstance(schema, Mapping):
        return []
    root = f"{path}.openAPIV3Schema"
    causes = _status_root_causes(schema, root) if status_enabled else []
    if schema.get("nullable") is True:
        causes.append(field_forbidden(f"{root}.nullable", "nullable cannot be true at the root"))
    if _convertible(schema):
        causes += _structural_causes(schema, root) or _default_causes(schema, root)
    causes += _SchemaDocRules().causes(schema, root, is_root=True)
    return causes


def _status_root_causes(schema: Mapping[str, Any], root: str) -> list[Cause]:
    for name in _ROOT_KEYS:
        if _is_zero(schema.get(name)):
            continue
        if name == "type":
            if schema["type"] != "object":
                detail = (
                    'only "object" is allowed as the type at the root of the schema '
                    "if the status subresource is enabled"
                )
                return [field_invalid(f"{root}.type", schema["type"], detail)]
            continue
        if name not in _ROOT_ALLOWED_WITH_STATUS:
            allowed = "[" + " ".join(_GO_ROOT_FIELDS) + "]"
            detail = (
                f"only {allowed} fields are allowed at the root of the schema "
                "if the status subresource is enabled"
            )
            return [field_invalid(root, dict(schema), detail)]
    return []


_GO_ROOT_FIELDS = (
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
)


def _convertible(node: Any) -> bool:
    """Whether the apiserver can build a structural schema from `node` at all."""
    if not isinstance(node, Mapping):
        return True
    unsupported = (
        "id",
        "$schema",
        "$ref",
        "patternProperties",
        "dependencies",
        "additionalItems",
        "definitions",
    )
    if any(not _is_zero(node.get(name)) for name in unsupported):
        return False
    if isinstance(node.get("items"), list) or node.get(PRESERVE_UNKNOWN) is False:
        return False
    nested = [node.get("items"), node.get("not"), node.get("additionalProperties")]
    nested += list(_mapping(node.get("properties")).values())
    for keyword in ("allOf", "anyOf", "oneOf"):
        nested += list(node.get(keyword) or [])
    return all(_convertible(sub) for sub in nested)


# structural schema invariants


def _structural_causes(schema: Mapping[str, Any], root: str) -> list[Cause]:
    causes = _invariant_causes(schema, "root", root) + _completeness_causes(schema, schema, root, root)
    return sorted(causes, key=lambda c: f"{c.field}: {c.message}")


def _invariant_causes(node: Mapping[str, Any], level: str, path: str) -> list[Cause]:
    node_type, props = _text(node.get("type")), _mapping(node.get("properties"))
    items, extra = node.get("items"), node.get("additionalProperties")
    causes = []
    if node_type == "array" and items is None:
        causes.append(field_required(f"{path}.items", "must be specified"))
    if isinstance(items, Mapping):
        causes += _invariant_causes(items, "item", f"{path}.items")
    for name, prop in props.items():
        causes += _invariant_causes(_mapping(prop), "field", key(f"{path}.properties", name))
    if extra is not None:
        if level == "root":
            causes.append(field_forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(extra, Mapping):
            causes += _invariant_causes(extra, "field", f"{path}.additionalProperties")
    causes += _extension_causes(node, path)
    first_all_of = _mapping((node.get("allOf") or [None])[0])
    causes += _value_validation_causes(
        node,
        level,
        path,
        skip_any_of=_is_int_or_string_any_of(node),
        skip_first_all_of_any_of=_is_int_or_string_any_of(first_all_of),
    )
    causes += _type_invariant_causes(node, level, path)
    causes += _resource_meta_invariant_causes(node, level, path)
    return causes


def _is_int_or_string_any_of(node: Mapping[str, Any]) -> bool:
    return node.get("anyOf") == _INT_OR_STRING_ANY_OF


def _extension_causes(node: Mapping[str, Any], path: str) -> list[Cause]:
    if not node.get(INT_OR_STRING):
        return []
    causes = []
    for name in (PRESERVE_UNKNOWN, EMBEDDED_RESOURCE):
        if node.get(name):
            causes.append(
                field_invalid(f"{path}.{name}", True, "must be false if x-kubernetes-int-or-string is true")
            )
    return causes


def _type_invariant_causes(node: Mapping[str, Any], level: str, path: str) -> list[Cause]:
    node_type, embedded = _text(node.get("type")), bool(node.get(EMBEDDED_RESOURCE))
    causes = []
    if embedded and node_type != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        causes.append(
            field_invalid(f"{path}.type", node_type, detail)
            if node_type
            else field_required(f"{path}.type", detail)
        )
    elif not node_type and not node.get(INT_OR_STRING) and not node.get(PRESERVE_UNKNOWN):
        causes.append(field_required(f"{path}.type", _TYPE_REQUIRED[level]))
    if embedded and node.get("additionalProperties") is not None:
        causes.append(
            field_forbidden(
                f"{path}.additionalProperties", "must not be used if x-kubernetes-embedded-resource is set"
            )
        )
    if level == "root" and node_type and node_type != "object":
        causes.append(field_invalid(f"{path}.type", node_type, "must be object at the root"))
    return causes


def _resource_meta_invariant_causes(node: Mapping[str, Any], level: str, path: str) -> list[Cause]:
    props, embedded = _mapping(node.get("properties")), bool(node.get(EMBEDDED_RESOURCE))
    check_meta = level == "root" or embedded
    causes = []
    for name in ("kind", "apiVersion"):
        if check_meta and name in props and _mapping(props[name]).get("type") != "string":
            field = key(f"{path}.properties", name) + ".type"
            causes.append(field_invalid(field, _text(_mapping(props[name]).get("type")), "must be string"))
    if "metadata" in props:
        causes += _metadata_invariant_causes(
            _mapping(props["metadata"]), check_meta, level, key(f"{path}.properties", "metadata")
        )
    if embedded and not node.get(PRESERVE_UNKNOWN) and not props:
        detail = (
            "must not be empty if x-kubernetes-embedded-resource is true "
            "without x-kubernetes-preserve-unknown-fields"
        )
        causes.append(field_required(f"{path}.properties", detail))
    return causes


def _metadata_invariant_causes(meta: Mapping[str, Any], check: bool, level: str, path: str) -> list[Cause]:
    causes = []
    if check and meta.get("type") != "object":
        causes.append(field_invalid(f"{path}.type", _text(meta.get("type")), "must be object"))
    if level != "root":
        return causes
    rest = {
        name: value
        for name, value in meta.items()
        if name not in ("type", "default") and name not in _UNSTRUCTURED_KEYS and not _is_zero(value)
    }
    props = _mapping(rest.get("properties"))
    if props and set(props) <= {"name", "generateName"}:
        rest.pop("properties")
    if rest:
        detail = (
            "must not specify anything other than name and generateName, but metadata is implicitly specified"
        )
        causes.append(field_forbidden(path, detail))
    return causes


def _value_validation_causes(
    node: Mapping[str, Any],
    level: str,
    path: str,
    *,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool = False,
) -> list[Cause]:
    causes = []
    if not skip_any_of:
        for i, alternative in enumerate(node.get("anyOf") or []):
            causes += _nested_causes(_mapping(alternative), level, f"{path}.anyOf[{i}]", skip_any_of=False)
    for i, part in enumerate(node.get("allOf") or []):
        skip = skip_first_all_of_any_of and i == 0
        causes += _nested_causes(_mapping(part), level, f"{path}.allOf[{i}]", skip_any_of=skip)
    for i, alternative in enumerate(node.get("oneOf") or []):
        causes += _nested_causes(_mapping(alternative), level, f"{path}.oneOf[{i}]", skip_any_of=False)
    if isinstance(node.get("not"), Mapping):
        causes += _nested_causes(node["not"], level, f"{path}.not", skip_any_of=False)
    pattern = node.get("pattern")
    if isinstance(pattern, str) and pattern:
        compiled = compile_pattern(pattern)
        if isinstance(compiled, str):
            detail = f"must be a valid regular expression, but isn't: {compiled}"
            causes.append(field_invalid(f"{path}.pattern", pattern, detail))
    return causes


def _nested_causes(nested: Mapping[str, Any], level: str, path: str, *, skip_any_of: bool) -> list[Cause]:
    causes = _value_validation_causes(nested, level, path, skip_any_of=skip_any_of)
    if isinstance(nested.get("items"), Mapping):
        causes += _nested_causes(nested["items"], level, f"{path}.items", skip_any_of=False)
    props = _mapping(nested.get("properties"))
    for name, prop in props.items():
        causes += _nested_causes(_mapping(prop), "field", key(f"{path}.properties", name), skip_any_of=False)
    for name, detail in _NESTED_FORBIDDEN:
        value = nested.get(name)
        if (value is not None) if name in _SET_MEANS_USED else not _is_zero(value):
            causes.append(field_forbidden(f"{path}.{name}", detail))
    if "metadata" in props:
        causes.append(
            field_forbidden(
                key(f"{path}.properties", "metadata"), "must not be specified in a nested context"
            )
        )
    return causes


def _completeness_causes(
    junctions: Mapping[str, Any], node: Mapping[str, Any] | None, node_path: str, junction_path: str
) -> list[Cause]:
    """Fields and items named under allOf/anyOf/oneOf/not must exist in the schema itself."""
    causes = []
    if isinstance(junctions.get("not"), Mapping):
        causes += _nested_completeness_causes(junctions["not"], node, node_path, f"{junction_path}.not")
    for keyword in ("allOf", "anyOf", "oneOf"):
        for i, part in enumerate(junctions.get(keyword) or []):
            causes += _nested_completeness_causes(
                _mapping(part), node, node_path, f"{junction_path}.{keyword}[{i}]"
            )
    return causes


def _nested_completeness_causes(
    nested: Mapping[str, Any], node: Mapping[str, Any] | None, node_path: str, nested_path: str
) -> list[Cause]:
    if node is None:
        return [field_required(node_path, f"because it is defined in {nested_path}")]
    causes = _completeness_causes(nested, node, node_path, nested_path)
    if isinstance(nested.get("items"), Mapping):
        items = node.get("items")
        causes += _nested_completeness_causes(
            nested["items"],
            items if isinstance(items, Mapping) else None,
            f"{node_path}.items",
            f"{nested_path}.items",
        )
    props = _mapping(node.get("properties"))
    for name, prop in _mapping(nested.get("properties")).items():
        field, source = key(f"{node_path}.properties", name), key(f"{nested_path}.properties", name)
        if name in props:
            causes += _nested_completeness_causes(_mapping(prop), _mapping(props[name]), field, source)
        else:
            causes.append(field_required(field, f"because it is defined in {source}"))
    return causes


# defaults in the schema


def _default_causes(schema: Mapping[str, Any], root: str) -> list[Cause]:
    return _node_default_causes({**schema, EMBEDDED_RESOURCE: True}, root, inside_meta=False)


def _node_default_causes(node: Mapping[str, Any], path: str, *, inside_meta: bool) -> list[Cause]:
    embedded = bool(node.get(EMBEDDED_RESOURCE))
    inside_meta = inside_meta and not embedded
    causes = []
    default = node.get("default")
    if default is not None and not inside_meta:
        causes += _default_value_causes(default, node, f"{path}.default")
    if isinstance(node.get("items"), Mapping):
        causes += _node_default_causes(node["items"], f"{path}.items", inside_meta=inside_meta)
    for name, prop in _mapping(node.get("properties")).items():
        sub_meta = inside_meta or (embedded and name in RESOURCE_META_FIELDS)
        causes += _node_default_causes(_mapping(prop), key(f"{path}.properties", name), inside_meta=sub_meta)
    return causes


def _default_value_causes(default: Any, node: Mapping[str, Any], path: str) -> list[Cause]:
    pruned = copy.deepcopy(default)
    prune_unknown(pruned, node, resource_root=bool(node.get(EMBEDDED_RESOURCE)))
    causes = (
        [] if json_equal(pruned, default) else [field_invalid(path, default, "must not have unknown fields")]
    )
    return causes + (
        validate_embedded(default, node, field_prefix=path)
        or validate_value(default, node, field_prefix=path)
    )


# the schema document itself


@dataclass(frozen=True)
class _SchemaDocRules:
    """The OpenAPI v3 subset a CRD schema may use; how strict depends on where we are."""

    defaults_forbidden: str | None = None
    inside_meta: bool = False

    def forbid_defaults(self, reason: str) -> _SchemaDocRules:
        return _SchemaDocRules(reason, self.inside_meta)

    def in_meta(self) -> _SchemaDocRules:
        return _SchemaDocRules(self.defaults_forbidden, True)

    def causes(self, node: Mapping[str, Any], path: str, *, is_root: bool = False) -> list[Cause]:
        causes = self._keyword_causes(node, path)
        if node.get("uniqueItems") is True:
            detail = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            causes.append(field_forbidden(f"{path}.uniqueItems", detail))
        causes += self._nested(node, path, is_root=is_root)
        causes += _extension_doc_causes(node, path)
        causes += _list_doc_causes(node, path)
        causes += _map_list_key_causes(node, path)
        causes += _rule_causes(node.get(VALIDATIONS), f"{path}.{VALIDATIONS}")
        return causes

    def _keyword_causes(self, node: Mapping[str, Any], path: str) -> list[Cause]:
        causes = []
        node_type = node.get("type")
        if isinstance(node_type, str) and node_type and node_type not in _OPENAPI_TYPES:
            causes.append(field_not_supported(f"{path}.type", node_type, _OPENAPI_TYPES))
        if node.get("default") is not None and self.defaults_forbidden is not None:
            detail = "must not be set" + (f" {self.defaults_forbidden}" if self.defaults_forbidden else "")
            causes.append(field_forbidden(f"{path}.default", detail))
        for name, detail in _UNSUPPORTED_KEYWORDS:
            present = node.get(name) is not None if name in _SET_MEANS_USED else not _is_zero(node.get(name))
            if present:
                causes.append(field_forbidden(f"{path}.{name}", detail))
        if node_type == "null":
            causes.append(
                field_forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative")
            )
        if isinstance(node.get("items"), list) and node["items"]:
            causes.append(field_forbidden(f"{path}.items", "items must be a schema object and not an array"))
        if self.inside_meta and node.get(EMBEDDED_RESOURCE):
            causes.append(
                field_forbidden(f"{path}.{EMBEDDED_RESOURCE}", "must not be used inside of resource meta")
            )
        return causes

    def _nested(self, node: Mapping[str, Any], path: str, *, is_root: bool) -> list[Cause]:
        causes = []
        props, extra = _mapping(node.get("properties")), node.get("additionalProperties")
        if extra is not None:
            if props and (extra is False or isinstance(extra, Mapping)):
                detail = "additionalProperties and properties are mutual exclusive"
                causes.append(field_forbidden(f"{path}.additionalProperties", detail))
            if isinstance(extra, Mapping):
                rules = (
                    self.forbid_defaults("inside additionalProperties applying to object metadata")
                    if self.inside_meta
                    else self
                )
                causes += rules.causes(extra, f"{path}.additionalProperties")
        for name, prop in props.items():
            causes += self._property_rules(node, name, is_root=is_root).causes(
                _mapping(prop), key(f"{path}.properties", name)
            )
        if isinstance(node.get("not"), Mapping):
            causes += self.causes(node["not"], f"{path}.not")
        for keyword in ("allOf", "oneOf", "anyOf"):
            for i, part in enumerate(node.get(keyword) or []):
                causes += self.causes(_mapping(part), f"{path}.{keyword}[{i}]")
        for name, definition in _mapping(node.get("definitions")).items():
            causes += self.causes(_mapping(definition), key(f"{path}.definitions", name))
        items = node.get("items")
        if isinstance(items, Mapping):
            causes += self.causes(items, f"{path}.items")
        elif isinstance(items, list):
            for i, item in enumerate(items):
                causes += self.causes(_mapping(item), f"{path}.items[{i}]")
        for name, dependency in _mapping(node.get("dependencies")).items():
            if isinstance(dependency, Mapping):
                causes += self.causes(dependency, key(f"{path}.dependencies", name))
        return causes

    def _property_rules(self, node: Mapping[str, Any], name: str, *, is_root: bool) -> _SchemaDocRules:
        if not (is_root or node.get(EMBEDDED_RESOURCE)) or name not in RESOURCE_META_FIELDS:
            return self
        rules = self.in_meta()
        return rules.forbid_defaults(f"in top-level {name}") if is_root else rules


def _extension_doc_causes(node: Mapping[str, Any], path: str) -> list[Cause]:
    causes = []
    if node.get(PRESERVE_UNKNOWN) is False:
        causes.append(field_invalid(f"{path}.{PRESERVE_UNKNOWN}", False, "must be true or undefined"))
    map_type, node_type = node.get(MAP_TYPE), _text(node.get("type"))
    if map_type is not None and node_type != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        causes.append(
            field_invalid(f"{path}.type", node_type, detail)
            if node_type
            else field_required(f"{path}.type", detail)
        )
    if map_type is not None and map_type not in ("atomic", "granular"):
        causes.append(field_not_supported(f"{path}.{MAP_TYPE}", map_type, ["atomic", "granular"]))
    return causes


def _list_doc_causes(node: Mapping[str, Any], path: str) -> list[Cause]:
    list_type, node_type, items = node.get(LIST_TYPE), _text(node.get("type")), node.get("items")
    causes = []
    if list_type is not None and node_type != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        causes.append(
            field_invalid(f"{path}.type", node_type, detail)
            if node_type
            else field_required(f"{path}.type", detail)
        )
    elif list_type == "set" and isinstance(items, Mapping):
        causes += _set_item_causes(items, f"{path}.items")
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        causes.append(field_not_supported(f"{path}.{LIST_TYPE}", list_type, ["atomic", "set", "map"]))
    map_keys = node.get(LIST_MAP_KEYS) or []
    if map_keys and list_type is None:
        causes.append(
            field_required(f"{path}.{LIST_TYPE}", "must be map if x-kubernetes-list-map-keys is non-empty")
        )
    elif map_keys and list_type != "map":
        causes.append(
            field_invalid(
                f"{path}.{LIST_TYPE}", list_type, "must be map if x-kubernetes-list-map-keys is non-empty"
            )
        )
    if list_type == "map":
        causes += _map_list_doc_causes(items, [_text(k) for k in map_keys], path)
    return causes


def _set_item_causes(items: Mapping[str, Any], path: str) -> list[Cause]:
    detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
    if items.get("type") == "array" and items.get(LIST_TYPE) not in (None, "atomic"):
        return [field_invalid(f"{path}.{LIST_TYPE}", items.get(LIST_TYPE), detail)]
    if items.get("type") == "object" and items.get(MAP_TYPE) != "atomic":
        return [field_invalid(f"{path}.{MAP_TYPE}", items.get(LIST_TYPE), detail)]
    return []


def _map_list_doc_causes(items: Any, map_keys: list[str], path: str) -> list[Cause]:
    causes = []
    if not map_keys:
        causes.append(
            field_required(f"{path}.{LIST_MAP_KEYS}", "must not be empty if x-kubernetes-list-type is map")
        )
    if items is None:
        return [
            *causes,
            field_required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"),
        ]
    if not isinstance(items, Mapping):
        detail = "must only have a single schema if x-kubernetes-list-type is map"
        return [*causes, field_invalid(f"{path}.items", items, detail)]
    item_type = _text(items.get("type"))
    if item_type != "object":
        detail = "must be object if parent array's x-kubernetes-list-type is map"
        return [*causes, field_invalid(f"{path}.items.type", item_type, detail)]
    props, seen = _mapping(items.get("properties")), set()
    for name in map_keys:
        if name not in props:
            detail = "entries must all be names of item properties"
            causes.append(field_invalid(f"{path}.{LIST_MAP_KEYS}", _string_slice(map_keys), detail))
        elif _mapping(props[name]).get("type") in ("array", "object"):
            detail = "must be a scalar type if parent array's x-kubernetes-list-type is map"
            causes.append(field_invalid(key(f"{path}.items.properties", name) + ".type", item_type, detail))
        if name in seen:
            detail = "must not contain duplicate entries"
            causes.append(field_invalid(f"{path}.{LIST_MAP_KEYS}", _string_slice(map_keys), detail))
        seen.add(name)
    return causes


def _map_list_key_causes(node: Mapping[str, Any], path: str) -> list[Cause]:
    items, list_type = node.get("items"), node.get(LIST_TYPE)
    if not isinstance(items, Mapping) or list_type not in ("set", "map"):
        return []
    causes = []
    if items.get("nullable") is True:
        causes.append(
            field_forbidden(
                f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is {list_type}"
            )
        )
    if list_type != "map":
        return causes
    props, required = _mapping(items.get("properties")), set(items.get("required") or [])
    for name in node.get(LIST_MAP_KEYS) or []:
        if name not in props:
            continue
        prop, field = _mapping(props[name]), key(f"{path}.items.properties", name)
        if name not in required and prop.get("default") is None:
            detail = (
                "this property is in x-kubernetes-list-map-keys, "
                "so it must have a default or be a required property"
            )
            causes.append(field_required(f"{field}.default", detail))
        if prop.get("nullable") is True:
            detail = "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
            causes.append(field_forbidden(f"{field}.nullable", detail))
    return causes


def _rule_causes(rules: Any, path: str) -> list[Cause]:
    causes = []
    for i, raw in enumerate(rules or []):
        rule = _mapping(raw)
        causes += _rule_text_causes(rule, index(path, i))
        reason = rule.get("reason")
        if reason is not None and reason not in _RULE_REASONS:
            causes.append(field_not_supported(f"{index(path, i)}.reason", reason, _RULE_REASONS))
        field_path = rule.get("fieldPath")
        if isinstance(field_path, str) and field_path and not field_path.strip():
            causes.append(
                field_invalid(f"{index(path, i)}.fieldPath", field_path, "must be non-empty if specified")
            )
        if isinstance(field_path, str) and re.search(r"[\n\r]", field_path):
            causes.append(
                field_invalid(f"{index(path, i)}.fieldPath", field_path, "must not contain line breaks")
            )
    return causes


def _rule_text_causes(rule: Mapping[str, Any], path: str) -> list[Cause]:
    text, message = _text(rule.get("rule")).strip(), _text(rule.get("message"))
    causes = []
    if not text:
        causes.append(field_required(f"{path}.rule", "rule is not specified"))
    elif message and not message.strip():
        causes.append(field_invalid(f"{path}.message", message, "must be non-empty if specified"))
    elif re.search(r"[\n\r]", message.strip()):
        causes.append(field_invalid(f"{path}.message", message, "must not contain line breaks"))
    elif re.search(r"[\n\r]", text) and not message.strip():
        causes.append(
            field_required(f"{path}.message", "message must be specified if rule contains line breaks")
        )
    expression = _text(rule.get("messageExpression"))
    if expression and not expression.strip():
        causes.append(
            field_required(f"{path}.messageExpression", "messageExpression must be non-empty if specified")
        )
    return causes


# -- defaults, served types, status ---------------------------------------------------------


def defaults_for_crd(crd: Obj) -> None:
    """The v1 API's defaults: singular and listKind names, conversion None, storedVersions.

    Versions, their schemas and subresources are left as sent.
    """
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = _text(names.get("kind"))
        if not names.get("singular") and kind:
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = kind + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}
    service = _mapping(_mapping(_mapping(spec["conversion"]).get("webhook")).get("clientConfig")).get(
        "service"
    )
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443
    storage = _storage_version(spec)
    status = crd.get("status")
    if storage and (status is None or (isinstance(status, dict) and not status.get("storedVersions"))):
        crd["status"] = {**(status or {}), "storedVersions": [storage]}


def resource_types(crd: Mapping[str, Any], *, strategy_factory: StrategyFactory) -> list[ResourceType]:
    """One ResourceType per served version; all share the CRD's storage (`<plural>.<group>`)."""
    spec = _mapping(crd.get("spec"))
    names = _mapping(spec.get("names"))
    group, plural, kind = _text(spec.get("group")), _text(names.get("plural")), _text(names.get("kind"))
    crd_name = _text(_mapping(crd.get("metadata")).get("name"))
    served = [v for v in _versions(spec) if v.get("served") is True]
    return [
        ResourceType(
            group=group,
            version=_text(version.get("name")),
            kind=kind,
            plural=plural,
            namespaced=spec.get("scope") == "Namespaced",
            singular=_text(names.get("singular")) or kind.lower(),
            short_names=tuple(_text(n) for n in names.get("shortNames") or []),
            categories=tuple(_text(c) for c in names.get("categories") or []),
            subresources=_served_subresources(version),
            strategy=strategy_factory(dict(crd), dict(version)),
            storage=f"{plural}.{group}",
            storage_version=version.get("storage") is True,
            crd=crd_name,
            schema=_mapping(version.get("schema")).get("openAPIV3Schema"),
            printer_columns=_printer_columns(version),
            scale=_scale(version),
        )
        for version in served
    ]


def _served_subresources(version: Mapping[str, Any]) -> tuple[str, ...]:
    subresources = _mapping(version.get("subresources"))
    return tuple(name for name in ("status", "scale") if subresources.get(name) is not None)


def _printer_columns(version: Mapping[str, Any]) -> tuple[PrinterColumn, ...]:
    return tuple(
        PrinterColumn(
            name=_text(col.get("name")),
            type=_text(col.get("type")),
            json_path=_text(col.get("jsonPath")),
            description=_text(col.get("description")),
            format=_text(col.get("format")),
            priority=int(col.get("priority") or 0),
        )
        for col in map(_mapping, version.get("additionalPrinterColumns") or [])
    )


def _scale(version: Mapping[str, Any]) -> ScaleSubresource | None:
    scale = _mapping(version.get("subresources")).get("scale")
    if not isinstance(scale, Mapping):
        return None
    return ScaleSubresource(
        spec_replicas_path=_text(scale.get("specReplicasPath")),
        status_replicas_path=_text(scale.get("statusReplicasPath")),
        label_selector_path=_text(scale.get("labelSelectorPath")),
    )


_ESTABLISHED_CONDITIONS = (
    ("NamesAccepted", "NoConflicts", "no conflicts found"),
    ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
)


def established_status(crd: Mapping[str, Any], *, now: datetime.datetime | None = None) -> Obj:
    """The status the naming and establishing controllers give a CRD once it is served.

    Conditions that are already True keep their lastTransitionTime, so calling this again
    on the result changes nothing. storedVersions keeps every version ever stored and
    gains the current storage version.
    """
    spec, status = _mapping(crd.get("spec")), _mapping(crd.get("status"))
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    existing = {_mapping(c).get("type"): _mapping(c) for c in status.get("conditions") or []}
    conditions = []
    for condition_type, reason, message in _ESTABLISHED_CONDITIONS:
        previous = existing.get(condition_type, {})
        since = previous.get("lastTransitionTime") if previous.get("status") == "True" else None
        conditions.append(
            {
                "type": condition_type,
                "status": "True",
                "lastTransitionTime": since or stamp,
                "reason": reason,
                "message": message,
            }
        )
    stored = [_text(v) for v in status.get("storedVersions") or []]
    storage = _storage_version(spec)
    if storage and storage not in stored:
        stored.append(storage)
    return {"conditions": conditions, "acceptedNames": _accepted_names(spec), "storedVersions": stored}


def condition_true(crd: Mapping[str, Any], condition_type: str) -> bool:
    status = _mapping(crd.get("status"))
    return any(
        _mapping(c).get("type") == condition_type and _mapping(c).get("status") == "True"
        for c in status.get("conditions") or []
    )


def with_condition(
    crd: Mapping[str, Any],
    condition_type: str,
    status: str,
    reason: str,
    message: str,
    *,
    now: datetime.datetime | None = None,
) -> Obj:
    """A copy of `crd` whose condition `condition_type` is set, as `SetCRDCondition` does.

    lastTransitionTime changes only when the condition's status does.
    """
    updated = copy.deepcopy(dict(crd))
    conditions: list[Obj] = updated.setdefault("status", {}).setdefault("conditions", [])
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {"type": condition_type, "status": status, "reason": reason, "message": message}
    for position, previous in enumerate(conditions):
        if previous.get("type") == condition_type:
            same = previous.get("status") == status and previous.get("lastTransitionTime")
            condition["lastTransitionTime"] = previous["lastTransitionTime"] if same else stamp
            conditions[position] = condition
            return updated
    condition["lastTransitionTime"] = stamp
    conditions.append(condition)
    return updated


def _accepted_names(spec: Mapping[str, Any]) -> Obj:
    names = _mapping(spec.get("names"))
    kind = _text(names.get("kind"))
    accepted: Obj = {"plural": _text(names.get("plural"))}
    singular = _text(names.get("singular")) or kind.lower()
    if singular:
        accepted["singular"] = singular
    if names.get("shortNames"):
        accepted["shortNames"] = list(names["shortNames"])
    accepted["kind"] = kind
    list_kind = _text(names.get("listKind")) or (kind + "List" if kind else "")
    if list_kind:
        accepted["listKind"] = list_kind
    if names.get("categories"):
        accepted["categories"] = list(names["categories"])
    return accepted
