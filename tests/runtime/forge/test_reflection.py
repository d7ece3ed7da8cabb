"""Reflection options: validation, and the same flags on every command line."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

from runtime.forge import reflection
from runtime.forge.install import InstallOptionsError, install_options, placeholder_options
from runtime.forge.meta import is_skipped
from runtime.forge.reflection import ReflectionOptions, ReflectionOptionsError


def test_the_options_round_trip_through_the_flags() -> None:
    options = ReflectionOptions(secret_workers=0, event_workers=7, ingress_classes={"nginx": "haproxy"})
    parser = argparse.ArgumentParser()
    reflection.add_arguments(parser)
    assert reflection.from_arguments(parser.parse_args(options.args())) == options
    assert reflection.from_arguments(parser.parse_args([])) == ReflectionOptions()


def test_every_kind_has_its_liqo_flag() -> None:
    flags = {arg.split("=")[0] for arg in ReflectionOptions().args()}
    assert flags == {f"--{kind}-reflection-workers" for kind in reflection.KINDS} | {
        f"--{kind}-reflection-type" for kind in reflection.TYPED_KINDS
    } | {"--api-server-support"}


def test_the_api_server_support_round_trips_and_an_unknown_one_is_refused() -> None:
    options = ReflectionOptions(api_server_support="Disabled")
    assert "--api-server-support=Disabled" in options.args()
    assert reflection.from_command_line(options.args()) == options
    assert reflection.from_values({"api_server_support": "Disabled"}) == options
    with pytest.raises(ReflectionOptionsError, match="TokenAPI") as error:
        reflection.from_values({"api_server_support": "Legacy"})
    assert error.value.option == "api_server_support"


@pytest.mark.parametrize(
    ("options", "option"),
    [
        (ReflectionOptions(configmap_workers=-1), "configmap_workers"),
        (ReflectionOptions(pod_workers=100_000), "pod_workers"),
        (ReflectionOptions(ingress_classes={"Nginx!": "x"}), "ingress_classes"),
    ],
    ids=["negative", "too-many", "bad-class"],
)
def test_invalid_options_name_the_option(options: ReflectionOptions, option: str) -> None:
    with pytest.raises(ReflectionOptionsError) as error:
        options.validate()
    assert error.value.option == option


def test_a_malformed_ingress_class_flag_is_refused() -> None:
    with pytest.raises(ReflectionOptionsError, match="consumer class"):
        reflection.from_flags({}, ["nginx"])


def test_plain_values_round_trip_as_a_front_end_holds_them() -> None:
    options = ReflectionOptions(secret_workers=0, event_workers=7, ingress_classes={"nginx": "haproxy"})
    assert reflection.from_values(dataclasses.asdict(options)) == options
    # another language's numbers arrive as floats; missing and None fields are the defaults
    assert reflection.from_values({"secret_workers": 0.0, "event_workers": None}) == ReflectionOptions(
        secret_workers=0
    )


@pytest.mark.parametrize(
    ("values", "option"),
    [
        ({"secrets_workers": 1}, "secrets_workers"),
        ({"pod_workers": 1.5}, "pod_workers"),
        ({"pod_workers": True}, "pod_workers"),
        ({"pod_workers": -2}, "pod_workers"),
        ({"ingress_classes": ["nginx"]}, "ingress_classes"),
    ],
    ids=["unknown", "fraction", "bool", "negative", "not-a-map"],
)
def test_invalid_values_name_the_option(values: dict[str, object], option: str) -> None:
    with pytest.raises(ReflectionOptionsError) as error:
        reflection.from_values(values)
    assert error.value.option == option


def test_install_options_from_plain_values_carry_the_reflection_options() -> None:
    options = dataclasses.replace(placeholder_options(), reflection=ReflectionOptions(ingress_workers=0))
    assert install_options(dataclasses.asdict(options)) == options
    with pytest.raises(InstallOptionsError) as error:
        install_options({**dataclasses.asdict(options), "reflection": {"ingress_workers": -1}})
    assert error.value.attribute == "reflection.ingress_workers"


# the policy: reflection types, the two annotations, keys never reflected


def _object(**annotations: str) -> dict[str, object]:
    return {"metadata": {"name": "x", "annotations": annotations}}


@pytest.mark.parametrize(
    ("kind_type", "annotations", "reflected"),
    [
        ("DenyList", {}, True),
        ("DenyList", {"liqo.io/skip-reflection": "true"}, False),
        ("DenyList", {"liqo.io/skip-reflection": "false"}, True),
        ("AllowList", {}, False),
        ("AllowList", {"liqo.io/allow-reflection": ""}, True),
        ("AllowList", {"liqo.io/allow-reflection": "false"}, False),
        ("AllowList", {"liqo.io/allow-reflection": "true", "liqo.io/skip-reflection": "true"}, False),
    ],
    ids=["deny", "deny-skipped", "deny-skip-false", "allow", "allow-annotated", "allow-false", "skip-wins"],
)
def test_a_kind_s_type_and_the_object_s_annotations_decide_its_reflection(
    kind_type: str, annotations: dict[str, str], reflected: bool
) -> None:
    options = ReflectionOptions(secret_type=kind_type)  # type: ignore[arg-type]
    assert options.reflects("secret", _object(**annotations)) is reflected
    # another kind keeps its own type (DenyList)
    assert options.reflects("configmap", _object(**annotations)) is not is_skipped(_object(**annotations))


def test_endpointslices_follow_the_service_type_and_pods_are_never_allow_listed() -> None:
    options = ReflectionOptions(service_type="AllowList")
    assert options.type_of("endpointslice") == "AllowList"
    assert options.type_of("pod") == "DenyList"
    assert options.reflects("pod", _object())


def test_keys_never_reflected_are_stripped_and_the_original_is_left_alone() -> None:
    options = ReflectionOptions(
        labels_not_reflected=("team",), annotations_not_reflected=("example.com/secret",)
    )
    local: dict[str, Any] = {
        "metadata": {
            "name": "x",
            "labels": {"team": "a", "app": "b"},
            "annotations": {"example.com/secret": "s", "note": "n"},
        },
        "data": {"k": "v"},
    }
    stripped = options.stripped(local)
    assert stripped["metadata"]["labels"] == {"app": "b"}
    assert stripped["metadata"]["annotations"] == {"note": "n"}
    assert stripped["data"] == {"k": "v"}
    assert local["metadata"]["labels"] == {"team": "a", "app": "b"}, "the cached object must not change"


def test_the_policy_round_trips_through_the_flags_and_the_plain_values() -> None:
    options = ReflectionOptions(
        secret_type="AllowList",
        ingress_type="AllowList",
        labels_not_reflected=("team", "example.com/owner"),
        annotations_not_reflected=("example.com/secret",),
    )
    parser = argparse.ArgumentParser()
    reflection.add_arguments(parser)
    assert reflection.from_arguments(parser.parse_args(options.args())) == options
    assert reflection.from_command_line(["--other", *options.args()]) == options
    assert "--secret-reflection-type=AllowList" in options.args()
    assert reflection.from_values(dataclasses.asdict(options)) == options
    assert reflection.from_values({"labels_not_reflected": ["team"]}) == ReflectionOptions(
        labels_not_reflected=("team",)
    )


@pytest.mark.parametrize(
    ("values", "option", "says"),
    [
        ({"pod_type": "AllowList"}, "pod_type", "pods follow the reflection's own logic"),
        ({"event_type": "DenyList"}, "event_type", "events follow the reflection's own logic"),
        ({"endpointslice_type": "AllowList"}, "endpointslice_type", "follow their Service (service_type)"),
        ({"widget_type": "AllowList"}, "widget_type", "'widget' is not a reflected kind"),
        ({"secret_type": "Allowlist"}, "secret_type", "'Allowlist' is not a reflection type"),
        ({"labels_not_reflected": ["bad key!"]}, "labels_not_reflected", "is not a label or annotation key"),
        ({"annotations_not_reflected": "team"}, "annotations_not_reflected", "is not a list"),
    ],
    ids=["pod", "event", "endpointslice", "unknown-kind", "bad-type", "bad-key", "not-a-list"],
)
def test_an_invalid_policy_names_the_option_and_says_why(
    values: dict[str, object], option: str, says: str
) -> None:
    with pytest.raises(ReflectionOptionsError) as error:
        reflection.from_values(values)
    assert error.value.option == option
    assert says in str(error.value)


def test_a_type_flag_for_a_kind_without_a_type_is_refused() -> None:
    with pytest.raises(ReflectionOptionsError, match="pod_type"):
        reflection.from_flags({}, types={"pod": "AllowList"})
