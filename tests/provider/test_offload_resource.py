"""`liqo_offload`: validation and planning, then create, read, update, import and destroy against an API server
emulator where a stand-in for the consumer's NamespaceOffloading controller answers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tf.types import Unknown

from provider.kube import Kube
from provider.resources.offload import OffloadResource
from runtime.api.crds import NAMESPACEOFFLOADINGS, NAMESPACEOFFLOADINGSETS
from runtime.api.kinds import NAMESPACES
from runtime.controllers.offloading import namespaceoffloadingset
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, Manager, Settings
from runtime.operations import waits
from runtime.operations.offloadset import set_name

from . import harness
from .harness import Provider
from .runtime_double import OffloadingBehaviour, offloading_controller

NORTH: list[dict[str, Any]] = [
    {"match_expressions": [{"key": "region", "operator": "In", "values": ["north"]}]}
]


def resource(provider: Provider | None = None) -> OffloadResource:
    return OffloadResource(provider or Provider(Kube.unavailable("not configured in this test")))


def config(**values: Any) -> dict[str, Any]:
    return harness.config(OffloadResource, **{"namespace": "liqo-demo", **values})


def requirement(operator: str, *values: str) -> list[dict[str, Any]]:
    return [{"match_expressions": [{"key": "region", "operator": operator, "values": list(values) or None}]}]


# validation and planning


@pytest.mark.parametrize(
    ("values", "summary", "path"),
    [
        ({"namespace": "Liqo_Demo"}, "Invalid namespace", ["namespace"]),
        (
            {"pod_offloading_strategy": "Elsewhere"},
            "Invalid pod_offloading_strategy",
            ["pod_offloading_strategy"],
        ),
        (
            {"namespace_mapping_strategy": "AnyName"},
            "Invalid namespace_mapping_strategy",
            ["namespace_mapping_strategy"],
        ),
        (
            {"namespace_mapping_strategy": "SelectedName"},
            "Missing remote_namespace_name",
            ["remote_namespace_name"],
        ),
        (
            {"namespace_mapping_strategy": "SelectedName", "remote_namespace_name": "kube-system"},
            "Invalid remote_namespace_name",
            ["remote_namespace_name"],
        ),
        (
            {"namespace_mapping_strategy": "DefaultName", "remote_namespace_name": "there"},
            "remote_namespace_name needs SelectedName",
            ["remote_namespace_name"],
        ),
        ({"namespace": None}, "Missing namespace", ["namespace"]),
        (
            {"namespace_selector": "team=blue"},
            "namespace and namespace_selector both set",
            ["namespace_selector"],
        ),
        (
            {"namespace": None, "namespace_selector": "size>1"},
            "Invalid namespace_selector",
            ["namespace_selector"],
        ),
        (
            {
                "namespace": None,
                "namespace_selector": "team=blue",
                "namespace_mapping_strategy": "SelectedName",
                "remote_namespace_name": "teams",
            },
            "SelectedName with namespace_selector",
            ["namespace_mapping_strategy"],
        ),
        (
            {"cluster_selector_terms": requirement("In")},
            "Invalid cluster selector requirement",
            ["cluster_selector_terms", 0, "match_expressions", 0],
        ),
        (
            {"cluster_selector_terms": requirement("Exists", "x")},
            "Invalid cluster selector requirement",
            ["cluster_selector_terms", 0, "match_expressions", 0],
        ),
    ],
    ids=[
        "namespace",
        "pod-strategy",
        "mapping",
        "selected-missing",
        "selected-reserved",
        "name-without-selected",
        "neither-namespace-nor-selector",
        "namespace-and-selector",
        "numeric-selector",
        "selected-name-with-selector",
        "in-without-values",
        "exists-with-values",
    ],
)
def test_an_invalid_input_is_an_error_on_its_attribute(
    values: dict[str, Any], summary: str, path: list[Any]
) -> None:
    [(got, _, got_path)] = harness.validate(resource(), config(**values)).errors
    assert (got, got_path) == (summary, path)


def test_the_liqo_guide_block_is_valid_and_a_create_plan_knows_what_it_can() -> None:
    cfg = config()
    assert harness.validate(resource(), cfg).errors == []
    planned = harness.plan(resource(), cfg).state
    assert planned is not None
    assert planned["id"] == "liqo-demo"
    assert (planned["pod_offloading_strategy"], planned["namespace_mapping_strategy"]) == (
        "LocalAndRemote",
        "DefaultName",
    )
    assert planned["remote_namespace_name"] is Unknown
    assert planned["offloading_phase"] is Unknown
    same = harness.plan(resource(), config(namespace_mapping_strategy="EnforceSameName")).state
    assert same is not None and same["remote_namespace_name"] == "liqo-demo"


def applied_state(**values: Any) -> dict[str, Any]:
    return {
        **config(),
        "id": "liqo-demo",
        "pod_offloading_strategy": "LocalAndRemote",
        "namespace_mapping_strategy": "DefaultName",
        "remote_namespace_name": "liqo-demo-rome",
        "offloading_phase": "Ready",
        "cluster_status": {
            "milan": {"selected": True, "ready": True, "reason": "NamespaceCreated", "message": "ok"}
        },
        **values,
    }


@pytest.mark.parametrize(
    ("change", "replace"),
    [
        ({}, []),
        ({"pod_offloading_strategy": "Remote"}, []),
        ({"cluster_selector_terms": NORTH}, []),
        (
            {"namespace_mapping_strategy": "EnforceSameName"},
            [["namespace_mapping_strategy"], ["remote_namespace_name"]],
        ),
        ({"namespace": "other"}, [["namespace"], ["remote_namespace_name"]]),
    ],
    ids=["nothing", "pod-strategy", "selector", "mapping", "namespace"],
)
def test_strategy_and_selector_change_in_place_the_names_replace(
    change: dict[str, Any], replace: list[list[str]]
) -> None:
    prior = applied_state()
    outcome = harness.plan(resource(), config(**change), prior=prior)
    assert outcome.replace == replace
    assert outcome.state is not None
    if not change:
        assert outcome.state == prior, "a plan right after apply is empty"
    elif replace:
        assert outcome.state["remote_namespace_name"] in (Unknown, "liqo-demo"), "a replacement renames"
    else:
        assert outcome.state["remote_namespace_name"] == "liqo-demo-rome"
        assert outcome.state["offloading_phase"] is Unknown, "the runtime reports on the new spec"


def test_removing_a_strategy_from_the_config_goes_back_to_its_default_with_the_status_unknown() -> None:
    prior = applied_state(pod_offloading_strategy="Remote")
    outcome = harness.plan(resource(), config(), prior=prior)
    assert outcome.state is not None and outcome.replace == []
    assert outcome.state["pod_offloading_strategy"] == "LocalAndRemote"
    assert (outcome.state["offloading_phase"], outcome.state["cluster_status"]) == (Unknown, Unknown)


# against a cluster


@pytest.fixture
async def consumer(with_crds: Client) -> Client:
    await with_crds.create(NAMESPACES, {"metadata": {"name": "liqo-demo"}})
    return with_crds


@pytest.fixture
async def controller(consumer: Client) -> AsyncIterator[OffloadingBehaviour]:
    behaviour = OffloadingBehaviour(clusters={"milan": {"region": "north"}, "naples": {"region": "south"}})
    async with offloading_controller(consumer, behaviour) as running:
        yield running


async def offload(provider: Provider, **values: Any) -> harness.Outcome:
    element = resource(provider)
    cfg = config(**values)
    planned = harness.plan(element, cfg).state
    assert planned is not None
    return await asyncio.to_thread(harness.create, element, planned, cfg)


async def test_create_waits_for_the_twin_namespaces_and_reports_each_cluster(
    provider: Provider, consumer: Client, controller: OffloadingBehaviour
) -> None:
    outcome = await offload(provider, cluster_selector_terms=NORTH, pod_offloading_strategy="Remote")
    assert outcome.errors == []
    state = outcome.state
    assert state is not None
    assert (state["offloading_phase"], state["remote_namespace_name"]) == ("Ready", "liqo-demo-rome")
    assert state["cluster_status"]["milan"]["ready"] is True
    assert state["cluster_status"]["naples"] == {
        "selected": False,
        "ready": False,
        "reason": "ClusterNotSelected",
        "message": "The remote cluster has not been selected through the ClusterSelector field",
    }
    stored = await consumer.get(NAMESPACEOFFLOADINGS, "offloading", namespace="liqo-demo")
    assert stored["spec"]["podOffloadingStrategy"] == "Remote"
    assert stored["spec"]["clusterSelector"] == {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "region", "operator": "In", "values": ["north"]}]}
        ]
    }
    element = resource(provider)
    # read right after apply: no drift
    read = await asyncio.to_thread(harness.read, element, state)
    assert read.state == state
    # in place: another strategy, and Exists without values reads back the same
    terms = requirement("Exists")
    cfg = config(cluster_selector_terms=terms)
    planned = harness.plan(element, cfg, prior=state)
    assert planned.replace == [] and planned.state is not None
    updated = await asyncio.to_thread(harness.update, element, state, planned.state, cfg)
    assert updated.errors == [] and updated.state is not None
    assert updated.state["pod_offloading_strategy"] == "LocalAndRemote"
    assert {k for k, v in updated.state["cluster_status"].items() if v["selected"]} == {"milan", "naples"}
    assert (await asyncio.to_thread(harness.read, element, updated.state)).state == updated.state
    # drift: a selector changed by hand shows; an offloading deleted by hand is gone from the state
    await consumer.patch(
        NAMESPACEOFFLOADINGS,
        "offloading",
        {"spec": {"clusterSelector": {"nodeSelectorTerms": []}}},
        namespace="liqo-demo",
    )
    drifted = await asyncio.to_thread(harness.read, element, updated.state)
    assert drifted.state is not None and drifted.state["cluster_selector_terms"] is None
    # import by namespace
    imported = await asyncio.to_thread(harness.import_, element, "liqo-demo")
    assert imported.state is not None and imported.state["namespace"] == "liqo-demo"
    assert imported.state["remote_namespace_name"] == "liqo-demo-rome"
    # destroy: unoffloaded and waited for
    deleted = await asyncio.to_thread(harness.delete, element, updated.state)
    assert deleted.errors == [] and deleted.warnings == []
    assert (await consumer.list(NAMESPACEOFFLOADINGS, namespace="liqo-demo")).items == []
    assert (await asyncio.to_thread(harness.read, element, updated.state)).state is None


@pytest.mark.slow
async def test_a_failing_offloading_ends_early_with_each_clusters_conditions(
    provider: Provider, consumer: Client, controller: OffloadingBehaviour
) -> None:
    controller.failing = {"milan", "naples"}
    outcome = await offload(provider, namespace_mapping_strategy="EnforceSameName")
    [(summary, detail, _)] = outcome.errors
    assert summary == "Offloading of namespace liqo-demo failed"
    assert (
        "milan: not ready (CreationLoopBackOff): The remote namespace cannot be created: namespace liqo-demo"
        in detail
    )
    assert "naples: not ready (CreationLoopBackOff)" in detail
    assert outcome.state is not None and outcome.state["offloading_phase"] == "AllFailed"


async def test_create_refuses_a_missing_namespace_and_one_offloaded_already(
    provider: Provider, consumer: Client, controller: OffloadingBehaviour
) -> None:
    [(summary, detail, path)] = (await offload(provider, namespace="nowhere")).errors
    assert (summary, path) == ("Namespace not found", ["namespace"])
    assert await offload(provider) is not None
    [(summary, detail, path)] = (await offload(provider)).errors
    assert (summary, path) == ("Namespace already offloaded", ["namespace"])
    assert "terraform import <address of this liqo_offload> liqo-demo" in detail


async def test_destroy_never_hangs(
    provider: Provider, consumer: Client, controller: OffloadingBehaviour
) -> None:
    outcome = await offload(provider)
    assert outcome.state is not None
    controller.stuck = True
    state = {**outcome.state, "timeouts": {"delete": "1s"}}
    deleted = await asyncio.to_thread(harness.delete, resource(provider), state)
    assert deleted.errors == []
    [(summary, detail)] = deleted.warnings
    assert summary == "Namespace liqo-demo was unoffloaded without its clean-up"
    # what held the wait up, and for how long
    assert re.search(r"\(last seen: NamespaceOffloading liqo-demo/offloading: \w+ for \d+s", detail), detail
    assert (await consumer.list(NAMESPACEOFFLOADINGS, namespace="liqo-demo")).items == []


@pytest.mark.slow
async def test_a_create_that_times_out_quotes_what_holds_it_up_and_for_how_long(
    provider: Provider,
    consumer: Client,
    controller: OffloadingBehaviour,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(waits, "LOG_EVERY", 0.5)
    controller.failing = {"milan"}
    outcome = await offload(
        provider,
        namespace_mapping_strategy="EnforceSameName",
        timeouts={"create": "2s", "update": None, "delete": None},
    )
    (summary, detail, _), *_ = outcome.errors
    assert summary == "Timed out waiting for the offloading of namespace liqo-demo (its twin namespaces)"
    assert re.fullmatch(
        r"Still not done after 2s \(the create of the offloading of namespace liqo-demo\): NamespaceOffloading "
        r"liqo-demo/offloading: SomeFailed for \ds: milan: not ready \(CreationLoopBackOff\): .*namespace "
        r"liqo-demo already exists on milan\n\nFix what holds it up and apply again, or raise the bound in the "
        r"resource's `timeouts` block if the cluster is only slow. With TF_LOG=INFO, Terraform's log shows what the "
        r"wait sees every few seconds.",
        detail,
    ), detail
    # meanwhile, TF_LOG=INFO showed it every LOG_EVERY seconds
    logged = [
        r.getMessage() for r in caplog.records if r.name == waits.__name__ and r.levelno == logging.INFO
    ]
    assert logged, caplog.text
    assert re.fullmatch(
        r"waiting for the offloading of namespace liqo-demo \(its twin namespaces\) \(\ds left\): "
        r"NamespaceOffloading liqo-demo/offloading: SomeFailed for \ds: milan: not ready .*",
        logged[-1],
    ), logged


async def test_a_cluster_without_the_runtime_is_told_so(provider: Provider, api: Client) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": "liqo-demo"}})
    [(summary, _, _)] = (await offload(provider)).errors
    assert summary == "Liqo runtime not installed"


async def test_an_unreachable_cluster_fails_the_destroy_and_keeps_the_offloading(gone: Provider) -> None:
    deleted = await asyncio.to_thread(harness.delete, resource(gone), applied_state())

    [(summary, _, path)] = deleted.errors
    assert (summary, path) == (
        "Cannot unoffload namespace liqo-demo: the cluster cannot be reached",
        ["force"],
    )
    assert deleted.warnings == []


async def test_an_unreachable_cluster_drops_the_offloading_from_the_state_when_forced(gone: Provider) -> None:
    deleted = await asyncio.to_thread(harness.delete, resource(gone), {**applied_state(), "force": True})
    assert deleted.errors == []
    [(summary, detail)] = deleted.warnings
    assert summary == "Cluster unreachable: offloading dropped from the state"
    assert detail == (
        f"The cluster of context 'gone' ({gone.kube.host}) cannot be reached: the connection was refused (nothing "
        "listens there). Check that it is running and that its address (host and port) is right. So the "
        "NamespaceOffloading of namespace liqo-demo was not deleted; it is removed from the state, as `force` is "
        "set. If the cluster comes back, delete it there."
    )


def test_a_refresh_of_a_cluster_that_is_gone_says_how_to_destroy_or_forget_it(gone: Provider) -> None:
    outcome = harness.read(resource(gone), applied_state())

    [(summary, detail, _)] = outcome.errors
    assert summary == "Failed to read the offloading of namespace liqo-demo"
    assert detail.startswith(
        f"The cluster of context 'gone' ({gone.kube.host}) cannot be reached: the connection "
    )
    assert detail.endswith(
        "If this cluster is gone for good, set `force = true` on its liqo resources and record it without "
        "reading the cluster (`terraform apply -refresh=false`), then `terraform destroy -refresh=false`: a "
        "forced delete drops a resource whose cluster cannot be reached from the state, and what it made stays "
        "there. Or forget the resource with `terraform state rm <address>` (its address is named above)."
    )


@contextlib.asynccontextmanager
async def set_controller(api: Client) -> AsyncIterator[None]:
    """The runtime's own NamespaceOffloadingSet controller, over `api`."""
    manager = Manager(api, settings=Settings(server=None))
    namespaceoffloadingset.setup(manager, ControllerOptions())
    task = asyncio.create_task(manager.run(), name="NamespaceOffloadingSet controller")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_selector_offloads_what_it_picks_and_refuses_what_is_offloaded_already(
    provider: Provider, consumer: Client, controller: OffloadingBehaviour
) -> None:
    for name in ("shop", "cart"):
        await consumer.create(NAMESPACES, {"metadata": {"name": name, "labels": {"team": "blue"}}})
    element = resource(provider)
    async with set_controller(consumer):
        outcome = await offload(provider, namespace=None, namespace_selector="team=blue")
        assert outcome.errors == [] and outcome.state is not None
        state = outcome.state
        assert state["id"] == set_name("team=blue")
        assert (state["namespaces"], state["conflicts"], state["offloading_phase"]) == (
            ["cart", "shop"],
            {},
            "Ready",
        )
        made = await consumer.get(NAMESPACEOFFLOADINGS, "offloading", namespace="shop")
        assert made["metadata"]["labels"] == {"offloading.liqo.io/namespace-offloading-set": state["id"]}
        assert (await asyncio.to_thread(harness.read, element, state)).state == state
        # the cluster selector changes in place, in every namespace the set offloads
        cfg = config(namespace=None, namespace_selector="team=blue", cluster_selector_terms=NORTH)
        planned = harness.plan(element, cfg, prior=state)
        assert planned.replace == [] and planned.state is not None
        updated = await asyncio.to_thread(harness.update, element, state, planned.state, cfg)
        assert updated.errors == [] and updated.state is not None
        for name in ("cart", "shop"):
            stored = await consumer.get(NAMESPACEOFFLOADINGS, "offloading", namespace=name)
            assert stored["spec"]["clusterSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0][
                "values"
            ] == ["north"]
        # another selector picking the same namespaces, and the same selector again, are refused
        [(summary, detail, path)] = (
            await offload(provider, namespace=None, namespace_selector="team in (blue)")
        ).errors
        assert (summary, path) == ("Namespaces already offloaded", ["namespace_selector"])
        assert f"cart (by NamespaceOffloadingSet {state['id']}), shop (by NamespaceOffloadingSet" in detail
        assert "never takes one over" in detail
        [(summary, detail, path)] = (
            await offload(provider, namespace=None, namespace_selector="team==blue")
        ).errors
        assert (summary, path) == ("Namespaces already offloaded by this selector", ["namespace_selector"])
        assert f"terraform import <address of this liqo_offload> {state['id']}" in detail
        # import by the set's name
        imported = await asyncio.to_thread(harness.import_, element, state["id"])
        assert imported.state is not None and imported.state["namespace_selector"] == "team=blue"
        assert imported.state["namespaces"] == ["cart", "shop"]
        # destroy: every namespace unoffloaded, the set gone
        deleted = await asyncio.to_thread(harness.delete, element, updated.state)
        assert deleted.errors == [] and deleted.warnings == []
        assert (await consumer.list(NAMESPACEOFFLOADINGS)).items == []
        assert (await consumer.list(NAMESPACEOFFLOADINGSETS)).items == []
