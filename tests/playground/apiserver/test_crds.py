"""CustomResourceDefinition validation, defaulting, served types and established status."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from playground.apiserver import crds
from playground.apiserver.resources.base import PrinterColumn, ScaleSubresource, Strategy

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
ROOT = "spec.validation.openAPIV3Schema"

Crd = dict[str, Any]


def version(name: str = "v1", *, storage: bool = True, served: bool = True, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "served": served,
        "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
    }
    body.update(extra)
    return body


def make_crd(**spec: Any) -> Crd:
    body: Crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [version()],
        },
    }
    body["spec"].update(spec)
    return body


def with_schema(doc: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"versions": [version(schema={"openAPIV3Schema": doc}, **extra)]}


def root(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def checked(crd: Crd) -> list[tuple[str, str]]:
    crds.defaults_for_crd(crd)
    return [(c.field, c.message) for c in crds.validate_crd(crd)]


# -- validate_crd ------------------------------------------------------------------------------

CRD_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("valid", {}, []),
    (
        "group-without-dot",
        {"group": "example"},
        [
            (
                "metadata.name",
                'Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group',
            ),
            ("spec.group", 'Invalid value: "example": should be a domain with at least one dot'),
        ],
    ),
    (
        "scope-unknown",
        {"scope": "Global"},
        [("spec.scope", 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"')],
    ),
    ("scope-missing", {"scope": ""}, [("spec.scope", "Required value")]),
    (
        "names-not-dns-labels",
        {"names": {"plural": "widgets", "kind": "Wid_get", "shortNames": ["W"], "listKind": "Wid_getList"}},
        [
            ("spec.names.singular", f'Invalid value: "wid_get": {DNS1035}'),
            (
                "spec.names.kind",
                f'Invalid value: "Wid_get": may have mixed case, but should otherwise match: {DNS1035}',
            ),
            (
                "spec.names.listKind",
                f'Invalid value: "Wid_getList": may have mixed case, but should otherwise match: {DNS1035}',
            ),
            ("spec.names.shortNames[0]", f'Invalid value: "W": {DNS1035}'),
        ],
    ),
    (
        "kind-equals-list-kind",
        {"names": {"plural": "widgets", "kind": "Widget", "listKind": "Widget"}},
        [("spec.names.listKind", 'Invalid value: "Widget": kind and listKind may not be the same')],
    ),
    (
        "version-name-not-a-dns-label",
        {"versions": [version("V1")]},
        [
            ("spec.versions[0].name", f'Invalid value: "V1": {DNS1035}'),
            ("spec.version", f'Invalid value: "V1": {DNS1035}'),
        ],
    ),
    (
        "no-storage-version",
        {"versions": [version(storage=False)]},
        [
            (
                "spec.versions",
                "Invalid value: []apiextensions.CustomResourceDefinitionVersion{"
                'apiextensions.CustomResourceDefinitionVersion{Name:"v1", Served:true, Storage:false, '
                "Deprecated:false, DeprecationWarning:(*string)(nil), "
                "Schema:(*apiextensions.CustomResourceValidation)(nil), "
                "Subresources:(*apiextensions.CustomResourceSubresources)(nil), "
                "AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), "
                "SelectableFields:[]apiextensions.SelectableField(nil)}}: "
                "must have exactly one version marked as storage version",
            ),
        ],
    ),
    (
        "no-versions",
        {"versions": []},
        [
            (
                "spec.versions",
                "Invalid value: []apiextensions.CustomResourceDefinitionVersion{}: "
                "must have exactly one version marked as storage version",
            )
        ],
    ),
    (
        "missing-schema",
        {"versions": [version(), version("v2", storage=False, schema=None)]},
        [("spec.versions[1].schema.openAPIV3Schema", "Required value")],
    ),
    (
        "field-without-type",
        with_schema(root(spec={"properties": {"a": {"type": "string"}}})),
        [(f"{ROOT}.properties[spec].type", "Required value: must not be empty for specified object fields")],
    ),
    (
        "array-without-items",
        with_schema(root(spec={"type": "object", "properties": {"a": {"type": "array"}}})),
        [(f"{ROOT}.properties[spec].properties[a].items", "Required value: must be specified")],
    ),
    (
        "root-not-an-object",
        with_schema({"type": "array", "items": {"type": "string"}}),
        [(f"{ROOT}.type", 'Invalid value: "array": must be object at the root')],
    ),
    (
        "additional-properties-with-properties",
        with_schema(
            root(
                spec={
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": {"type": "string"},
                }
            )
        ),
        [
            (
                f"{ROOT}.properties[spec].additionalProperties",
                "Forbidden: additionalProperties and properties are mutual exclusive",
            )
        ],
    ),
    (
        "unknown-type",
        with_schema(root(spec={"type": "map"})),
        [
            (
                f"{ROOT}.properties[spec].type",
                'Unsupported value: "map": supported values: '
                '"array", "boolean", "integer", "number", "object", "string"',
            )
        ],
    ),
    (
        "metadata-beyond-name",
        with_schema(root(metadata={"type": "object", "properties": {"labels": {"type": "object"}}})),
        [
            (
                f"{ROOT}.properties[metadata]",
                "Forbidden: must not specify anything other than name and generateName, "
                "but metadata is implicitly specified",
            )
        ],
    ),
    (
        "metadata-name-constraints-allowed",
        with_schema(
            root(metadata={"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}})
        ),
        [],
    ),
    (
        "default-of-wrong-type",
        with_schema(
            root(spec={"type": "object", "properties": {"size": {"type": "integer", "default": "big"}}})
        ),
        [
            (
                f"{ROOT}.properties[spec].properties[size].default",
                'Invalid value: "string":  in body must be of type integer: "string"',
            )
        ],
    ),
    (
        "default-with-unknown-fields",
        with_schema(
            root(
                spec={
                    "type": "object",
                    "properties": {
                        "policy": {
                            "type": "object",
                            "properties": {"a": {"type": "string"}},
                            "default": {"b": "x"},
                        }
                    },
                }
            )
        ),
        [
            (
                f"{ROOT}.properties[spec].properties[policy].default",
                'Invalid value: map[string]interface {}{"b":"x"}: must not have unknown fields',
            )
        ],
    ),
    (
        "default-in-top-level-metadata",
        with_schema(root(metadata={"type": "object", "default": {"name": "x"}})),
        [(f"{ROOT}.properties[metadata].default", "Forbidden: must not be set in top-level metadata")],
    ),
    (
        "nested-junction-with-type",
        with_schema(root(spec={"type": "object", "anyOf": [{"type": "object"}]})),
        [(f"{ROOT}.properties[spec].anyOf[0].type", "Forbidden: must be empty to be structural")],
    ),
    (
        "junction-field-missing-from-schema",
        with_schema(
            {
                "type": "object",
                "anyOf": [{"properties": {"spec": {"required": ["a"]}, "extra": {}}}],
                "properties": {"spec": {"type": "object"}},
            }
        ),
        [
            (
                f"{ROOT}.properties[extra]",
                f"Required value: because it is defined in {ROOT}.anyOf[0].properties[extra]",
            )
        ],
    ),
    (
        "nullable-root",
        with_schema({"type": "object", "nullable": True}),
        [(f"{ROOT}.nullable", "Forbidden: nullable cannot be true at the root")],
    ),
    (
        "map-list-without-keys",
        with_schema(
            root(
                spec={
                    "type": "object",
                    "properties": {
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "items": {"type": "object"},
                        }
                    },
                }
            )
        ),
        [
            (
                f"{ROOT}.properties[spec].properties[ports].x-kubernetes-list-map-keys",
                "Required value: must not be empty if x-kubernetes-list-type is map",
            )
        ],
    ),
    (
        "map-list-key-neither-required-nor-defaulted",
        with_schema(
            root(
                spec={
                    "type": "object",
                    "properties": {
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                        }
                    },
                }
            )
        ),
        [
            (
                f"{ROOT}.properties[spec].properties[ports].items.properties[name].default",
                "Required value: this property is in x-kubernetes-list-map-keys, "
                "so it must have a default or be a required property",
            )
        ],
    ),
    (
        "empty-cel-rule",
        with_schema(root(spec={"type": "object", "x-kubernetes-validations": [{"rule": " "}]})),
        [
            (
                f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule",
                "Required value: rule is not specified",
            )
        ],
    ),
    (
        "bad-scale-paths",
        {
            "versions": [
                version(
                    subresources={
                        "scale": {"specReplicasPath": "spec.replicas", "statusReplicasPath": ".spec.x"}
                    }
                )
            ]
        },
        [
            (
                "spec.subresources.scale.specReplicasPath",
                'Invalid value: "spec.replicas": must be a simple json path starting with .',
            ),
            (
                "spec.subresources.scale.statusReplicasPath",
                'Invalid value: ".spec.x": should be a json path under .status',
            ),
        ],
    ),
    (
        "bad-printer-columns",
        {
            "versions": [
                version(
                    additionalPrinterColumns=[
                        {"name": "Size", "type": "int", "format": "hex", "jsonPath": ".spec.size"},
                        {"name": "", "type": "string", "jsonPath": ""},
                    ]
                )
            ]
        },
        [
            (
                "spec.additionalPrinterColumns[0].type",
                'Invalid value: "int": must be one of boolean,date,integer,number,string',
            ),
            (
                "spec.additionalPrinterColumns[0].format",
                'Invalid value: "hex": must be one of byte,date,date-time,double,float,int32,int64,password',
            ),
            ("spec.additionalPrinterColumns[1].name", "Required value"),
            ("spec.additionalPrinterColumns[1].JSONPath", "Required value"),
        ],
    ),
    (
        "per-version-paths-when-versions-differ",
        {
            "versions": [
                version(additionalPrinterColumns=[{"name": "A", "type": "string", "jsonPath": "a"}]),
                version(
                    "v2",
                    storage=False,
                    schema={"openAPIV3Schema": root(spec={"properties": {}})},
                ),
            ]
        },
        [
            (
                "spec.versions[0].additionalPrinterColumns[0].JSONPath",
                'Invalid value: "a": must be a simple json path starting with .',
            ),
            (
                "spec.versions[1].schema.openAPIV3Schema.properties[spec].type",
                "Required value: must not be empty for specified object fields",
            ),
        ],
    ),
    (
        "unknown-conversion-strategy",
        {"conversion": {"strategy": "Magic"}},
        [("spec.conversion.strategy", 'Unsupported value: "Magic": supported values: "None", "Webhook"')],
    ),
    (
        "webhook-conversion-without-client",
        {"conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}},
        [("spec.conversion.webhookClientConfig", "Required value: required when strategy is set to Webhook")],
    ),
    (
        "preserve-unknown-fields-at-spec-level",
        {"preserveUnknownFields": True},
        [
            (
                "spec.preserveUnknownFields",
                "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true "
                "in spec.versions[*].schema instead",
            )
        ],
    ),
]


@pytest.mark.parametrize(("spec", "expected"), [c[1:] for c in CRD_CASES], ids=[c[0] for c in CRD_CASES])
def test_validate_crd_reports_what_kube_apiserver_reports(
    spec: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert checked(make_crd(**spec)) == expected


def test_validate_crd_requires_name_plural_dot_group() -> None:
    crd = make_crd()
    crd["metadata"]["name"] = "gadgets.example.com"
    assert checked(crd) == [
        ("metadata.name", 'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group')
    ]


def test_validate_crd_reports_cause_reasons() -> None:
    crd = make_crd(scope="", group="example")
    crds.defaults_for_crd(crd)
    causes = crds.validate_crd(crd)
    assert [c.reason for c in causes] == ["FieldValueInvalid", "FieldValueInvalid", "FieldValueRequired"]


def test_validate_crd_expects_defaulted_names() -> None:
    causes = crds.validate_crd(make_crd())
    assert [(c.field, c.message) for c in causes] == [
        ("spec.names.singular", "Required value"),
        ("spec.names.listKind", "Required value"),
    ]


def test_validate_crd_requires_api_approval_in_kubernetes_groups() -> None:
    crd = make_crd(group="widgets.k8s.io")
    crd["metadata"]["name"] = "widgets.widgets.k8s.io"
    assert checked(crd) == [
        (
            "metadata.annotations[api-approved.kubernetes.io]",
            'Required value: protected groups must have approval annotation "api-approved.kubernetes.io", '
            "see https://github.com/kubernetes/enhancements/pull/1111",
        )
    ]
    crd["metadata"]["annotations"] = {
        "api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"
    }
    assert checked(crd) == []


def test_validate_crd_keeps_the_storage_version_in_stored_versions() -> None:
    crd = make_crd(versions=[version("v1", storage=False), version("v2")])
    crd["status"] = {"storedVersions": ["v1"]}
    assert checked(crd) == [
        ("status.storedVersions", 'Invalid value: []string{"v1"}: must have the storage version v2')
    ]


# -- defaults_for_crd ----------------------------------------------------------------------------


def test_defaults_for_crd_fills_names_conversion_and_stored_versions() -> None:
    crd = make_crd(versions=[version("v1beta1", storage=False), version("v1")])
    crds.defaults_for_crd(crd)
    assert crd["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["status"] == {"storedVersions": ["v1"]}


def test_defaults_for_crd_keeps_explicit_values() -> None:
    crd = make_crd(
        names={"plural": "widgets", "kind": "Widget", "singular": "wdg", "listKind": "Widgets"},
        conversion={
            "strategy": "Webhook",
            "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}},
        },
    )
    crd["status"] = {"storedVersions": ["v0", "v1"]}
    before = copy.deepcopy(crd["spec"]["versions"])
    crds.defaults_for_crd(crd)
    assert crd["spec"]["names"]["singular"] == "wdg"
    assert crd["spec"]["names"]["listKind"] == "Widgets"
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443
    assert crd["status"]["storedVersions"] == ["v0", "v1"]
    assert crd["spec"]["versions"] == before


# -- resource_types ------------------------------------------------------------------------------


def multi_version_crd() -> Crd:
    return make_crd(
        scope="Cluster",
        names={"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
        versions=[
            version("v1alpha1", storage=False, served=False),
            version("v1beta1", storage=False),
            version(
                "v1",
                subresources={
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                additionalPrinterColumns=[
                    {
                        "name": "Replicas",
                        "type": "integer",
                        "jsonPath": ".spec.replicas",
                        "priority": 1,
                        "description": "wanted",
                    },
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            ),
        ],
    )


def test_resource_types_serve_each_served_version_from_one_storage() -> None:
    calls: list[tuple[str, str]] = []

    def factory(crd: dict[str, Any], served: dict[str, Any]) -> Strategy:
        calls.append((crd["metadata"]["name"], served["name"]))
        return Strategy()

    types = crds.resource_types(multi_version_crd(), strategy_factory=factory)
    assert [(rt.api_version, rt.storage_version) for rt in types] == [
        ("example.com/v1beta1", False),
        ("example.com/v1", True),
    ]
    assert calls == [("widgets.example.com", "v1beta1"), ("widgets.example.com", "v1")]
    assert {rt.storage_key for rt in types} == {"widgets.example.com"}
    for rt in types:
        assert (rt.kind, rt.plural, rt.singular, rt.namespaced) == ("Widget", "widgets", "widget", False)
        assert (rt.short_names, rt.categories, rt.crd) == (("wd",), ("all",), "widgets.example.com")


def test_resource_types_carry_schema_subresources_scale_and_columns() -> None:
    beta, stable = crds.resource_types(multi_version_crd(), strategy_factory=lambda crd, v: Strategy())
    assert beta.subresources == () and beta.scale is None and beta.printer_columns == ()
    assert beta.schema == {"type": "object", "properties": {"spec": {"type": "object"}}}
    assert stable.subresources == ("status", "scale")
    assert stable.scale == ScaleSubresource(".spec.replicas", ".status.replicas", ".status.selector")
    assert stable.printer_columns == (
        PrinterColumn("Replicas", "integer", ".spec.replicas", description="wanted", priority=1),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    )


# -- established_status --------------------------------------------------------------------------

NOW = datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=datetime.UTC)


def test_established_status_accepts_names_and_establishes() -> None:
    crd = make_crd(names={"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]})
    assert crds.established_status(crd, now=NOW) == {
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": "2024-05-01T12:00:00Z",
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": "2024-05-01T12:00:00Z",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "acceptedNames": {
            "plural": "widgets",
            "singular": "widget",
            "shortNames": ["wd"],
            "kind": "Widget",
            "listKind": "WidgetList",
        },
        "storedVersions": ["v1"],
    }


def test_established_status_is_stable_once_reported() -> None:
    crd = make_crd()
    crd["status"] = crds.established_status(crd, now=NOW)
    later = NOW + datetime.timedelta(hours=1)
    assert crds.established_status(crd, now=later) == crd["status"]


def test_established_status_keeps_previously_stored_versions() -> None:
    crd = make_crd(versions=[version("v1", storage=False), version("v2")])
    crd["status"] = {"storedVersions": ["v1"]}
    assert crds.established_status(crd, now=NOW)["storedVersions"] == ["v1", "v2"]
