"""Our resource types reach tf only through the adapter: tf's contexts in, ours out."""

from __future__ import annotations

from tf import iface
from tf.utils import Diagnostics

from provider.framework.resource import ImportContext, ReadContext
from provider.framework.tfadapter import ServedResource, product, served
from provider.kube import Kube
from provider.provider import LiqoProvider
from tests.provider.harness import Provider
from tests.provider.test_servicer import Peer


def test_every_resource_type_the_provider_serves_goes_through_the_adapter() -> None:
    resources = LiqoProvider(environ={}).get_resources()
    assert [kind.get_name() for kind in resources] == ["install", "generate", "peer", "offload"]
    assert all(issubclass(kind, ServedResource) for kind in resources)


def test_tf_contexts_are_handed_over_as_ours() -> None:
    seen: list[object] = []

    class Recording(Peer):
        def read(self, ctx: ReadContext, current: dict[str, object]) -> dict[str, object]:
            seen.append(ctx)
            return current

    tf_side = served(Recording)(Provider(Kube.unavailable("not needed")))
    diagnostics = Diagnostics()
    assert tf_side.read(iface.ReadContext(diagnostics, "liqo_peer"), {"cluster_id": "x"}) == {
        "cluster_id": "x"
    }
    assert seen == [ReadContext(diagnostics, "liqo_peer")]
    assert isinstance(product(tf_side), Recording)


def test_a_type_without_import_says_so_at_import() -> None:
    diagnostics = Diagnostics()
    assert (
        Peer(Provider(Kube.unavailable("not needed"))).import_(ImportContext(diagnostics, "liqo_peer"), "x")
        is None
    )
    [error] = diagnostics.diagnostics
    assert error.summary == "liqo_peer cannot be imported"


def test_an_upgrade_keeps_a_version_0_state() -> None:
    tf_side = served(Peer)(Provider(Kube.unavailable("not needed")))
    old = {"cluster_id": "x"}
    assert tf_side.upgrade(iface.UpgradeContext(Diagnostics(), "liqo_peer"), 0, old) == old
