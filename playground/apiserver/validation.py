"""Validation every kind shares: object names, label and annotation syntax, metadata.

The messages follow k8s.io/apimachinery's validation package word for word, because
users and tests match on them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import Cause

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

TOTAL_ANNOTATION_SIZE = 256 * 1024


def invalid_value(value: Any) -> str:
    return f'Invalid value: "{value}"' if isinstance(value, str) else f"Invalid value: {value}"


def dns_label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(value):
        errs.append(LABEL_MSG)
    return errs


def dns_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(SUBDOMAIN_MSG)
    return errs


def path_segment_errors(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    for bad in ("/", "%"):
        if bad in value:
            return [f"may not contain '{bad}'"]
    return []


NAME_RULES = {"label": dns_label_errors, "subdomain": dns_subdomain_errors, "path": path_segment_errors}


def qualified_name_errors(value: str) -> list[str]:
    """Label and annotation keys: optional DNS-subdomain prefix, '/', a name part of at most 63."""
    prefix, _, name = value.rpartition("/")
    errs = []
    if "/" in value and not prefix:
        errs.append("prefix part must be non-empty")
    elif prefix:
        errs.extend(f"prefix part {e}" for e in dns_subdomain_errors(prefix))
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME.match(name):
        errs.append(QUALIFIED_MSG)
    return errs


def label_value_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        errs.append(LABEL_VALUE_MSG)
    return errs


def validate_labels(labels: Any, field: str) -> list[Cause]:
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [Cause(field, f"Invalid value: {labels!r}: must be a map of strings", "FieldValueTypeInvalid")]
    causes = []
    for key, value in labels.items():
        for err in qualified_name_errors(str(key)):
            causes.append(Cause(field, f'Invalid value: "{key}": {err}'))
        if not isinstance(value, str):
            causes.append(
                Cause(f"{field}", f"Invalid value: {value!r}: must be a string", "FieldValueTypeInvalid")
            )
            continue
        for err in label_value_errors(value):
            causes.append(Cause(field, f'Invalid value: "{value}": {err}'))
    return causes


def validate_annotations(annotations: Any, field: str) -> list[Cause]:
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return [
            Cause(field, f"Invalid value: {annotations!r}: must be a map of strings", "FieldValueTypeInvalid")
        ]
    causes = []
    total = 0
    for key, value in annotations.items():
        for err in qualified_name_errors(str(key).lower()):
            causes.append(Cause(field, f'Invalid value: "{key}": {err}'))
        if not isinstance(value, str):
            causes.append(
                Cause(field, f"Invalid value: {value!r}: must be a string", "FieldValueTypeInvalid")
            )
            continue
        total += len(key) + len(value)
    if total > TOTAL_ANNOTATION_SIZE:
        causes.append(
            Cause(field, f"Too long: must have at most {TOTAL_ANNOTATION_SIZE} bytes", "FieldValueTooLong")
        )
    return causes


def validate_metadata(meta: Mapping[str, Any], *, name_rule: str, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    name = meta.get("name")
    if not name:
        causes.append(
            Cause("metadata.name", "Required value: name or generateName is required", "FieldValueRequired")
        )
    elif not isinstance(name, str):
        causes.append(
            Cause("metadata.name", invalid_value(name) + ": must be a string", "FieldValueTypeInvalid")
        )
    else:
        for err in NAME_RULES[name_rule](name):
            causes.append(Cause("metadata.name", f"{invalid_value(name)}: {err}"))
    if namespaced and not meta.get("namespace"):
        causes.append(Cause("metadata.namespace", "Required value", "FieldValueRequired"))
    causes += validate_labels(meta.get("labels"), "metadata.labels")
    causes += validate_annotations(meta.get("annotations"), "metadata.annotations")
    finalizers = meta.get("finalizers") or []
    if not isinstance(finalizers, list):
        causes.append(
            Cause("metadata.finalizers", "Invalid value: must be a list of strings", "FieldValueTypeInvalid")
        )
    else:
        for i, fin in enumerate(finalizers):
            if not isinstance(fin, str) or qualified_name_errors(fin):
                causes.append(Cause(f"metadata.finalizers[{i}]", f"{invalid_value(fin)}: {QUALIFIED_MSG}"))
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        for key in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref, Mapping) or not ref.get(key):
                causes.append(
                    Cause(f"metadata.ownerReferences[{i}].{key}", "Required value", "FieldValueRequired")
                )
    return causes


def immutable(field: str, new: Any, old: Any) -> list[Cause]:
    if new == old:
        return []
    return [Cause(field, f"{invalid_value(new)}: field is immutable")]
