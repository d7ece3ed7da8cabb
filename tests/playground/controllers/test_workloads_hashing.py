"""Content hashes: FNV as Go's hash/fnv computes it, kube's SafeEncodeString, Go-style JSON."""

from __future__ import annotations

import pytest

from playground.controllers.workloads.hashing import (
    controller_revision_hash,
    fnv32,
    fnv32a,
    go_json,
    pod_template_hash,
    safe_encode,
)

TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
}


@pytest.mark.parametrize(
    ("data", "one", "one_a"),
    # the golden values of Go's hash/fnv tests (fnv_test.go: golden32, golden32a)
    [
        (b"", 0x811C9DC5, 0x811C9DC5),
        (b"a", 0x050C5D7E, 0xE40C292C),
        (b"ab", 0x70772D38, 0x4D2505CA),
        (b"abc", 0x439C2F4B, 0x1A47E90B),
    ],
)
def test_fnv_matches_go(data: bytes, one: int, one_a: int) -> None:
    assert fnv32(data) == one
    assert fnv32a(data) == one_a


def test_safe_encode_maps_digits_like_kube() -> None:
    # '0' is code point 48 and 48 % 27 == 21: the alphabet's 22nd character, '4'
    assert safe_encode("0123456789") == "456789bcdf"


def test_go_json_sorts_keys_and_escapes_html() -> None:
    assert (
        go_json({"b": 1, "a": ["<&>"], "c": "é"}) == '{"a":["\\u003c\\u0026\\u003e"],"b":1,"c":"é"}'.encode()
    )


def test_pod_template_hash_of_a_known_template() -> None:
    # FNV-1a over b"{}": 0x811c9dc5 ^ 0x7b = 0x811c9dbe, * 16777619 -> 0xfe0c521a;
    # ^ 0x7d, * 16777619 -> 0x5465b825 = 1415952421, whose digits encode to 5859f96865
    assert pod_template_hash({}) == "5859f96865"


def test_the_collision_count_changes_the_hash() -> None:
    hashes = {pod_template_hash(TEMPLATE), pod_template_hash(TEMPLATE, 0), pod_template_hash(TEMPLATE, 1)}
    assert len(hashes) == 3
    assert pod_template_hash(TEMPLATE) == pod_template_hash(
        {"spec": TEMPLATE["spec"], "metadata": TEMPLATE["metadata"]}
    )
    assert set("".join(hashes)) <= set("456789bcdf")


def test_controller_revision_hash_appends_the_collision_count_in_decimal() -> None:
    data = {"spec": {"template": {"$patch": "replace"}}}
    raw = b'{"spec":{"template":{"$patch":"replace"}}}'
    assert controller_revision_hash(data) == safe_encode(str(fnv32(raw)))
    assert controller_revision_hash(data, 12) == safe_encode(str(fnv32(b"12", fnv32(raw))))
