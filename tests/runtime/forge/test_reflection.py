"""Reflection options: validation, and the same flags on every command line."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from runtime.forge import reflection
from runtime.forge.install import InstallOptionsError, install_options, placeholder_options
from runtime.forge.reflection import ReflectionOptions, ReflectionOptionsError


def test_the_options_round_trip_through_the_flags() -> None:
    options = ReflectionOptions(secret_workers=0, event_workers=7, ingress_classes={"nginx": "haproxy"})
    parser = argparse.ArgumentParser()
    reflection.add_arguments(parser)
    assert reflection.from_arguments(parser.parse_args(options.args())) == options
    assert reflection.from_arguments(parser.parse_args([])) == ReflectionOptions()


def test_every_kind_has_its_liqo_flag() -> None:
    flags = {arg.split("=")[0] for arg in ReflectionOptions().args()}
    assert flags == {f"--{kind}-reflection-workers" for kind in reflection.KINDS}


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
