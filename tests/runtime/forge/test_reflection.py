"""Reflection options: validation, and the same flags on every command line."""

from __future__ import annotations

import argparse

import pytest

from runtime.forge import reflection
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
