"""The virtual kubelet's reflection metrics, served on its `/metrics` (Prometheus, `prometheus_client`).

Liqo's two metrics keep Liqo's names and labels (`namespace`, `reflector_resource`,
`cluster_id` of the provider, `node_name` of the virtual node):

- `liqo_virtual_kubelet_reflection_item_counter`: the objects reflected now (a gauge: it
  falls when copies are removed, as Liqo's documentation describes it);
- `liqo_virtual_kubelet_reflection_error_counter`: transient errors of reflection (a
  counter; `prometheus_client` exposes counters with the `_total` suffix, so the series is
  `liqo_virtual_kubelet_reflection_error_counter_total`).

Ours besides: `liqo_virtual_kubelet_reflection_latency_seconds{reflector_resource}`, from
the moment a change reached the reflector's queue to the end of its handle, and
`liqo_virtual_kubelet_offloaded_pods{phase}`, the pods bound to the virtual node by phase,
read from the pod cache at each scrape. Queue depths are the core's
`workqueue_depth{name="<kind>-reflection"}`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from runtime.api.objects import JSON, nested

LABELS: Final = ("namespace", "reflector_resource", "cluster_id", "node_name")
#: from a local change applied in a few milliseconds to a burst of thousands taking seconds
LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
POD_PHASES: Final = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


class ReflectionMetrics:
    """The reflection metrics of one virtual kubelet (one provider), in the registry given."""

    def __init__(self, registry: CollectorRegistry, *, cluster_id: str, node_name: str) -> None:
        self._cluster_id = cluster_id
        self._node_name = node_name
        self.items = Gauge(
            "liqo_virtual_kubelet_reflection_item_counter",
            "The objects reflected to the provider now, per namespace and kind",
            LABELS,
            registry=registry,
        )
        self.errors = Counter(
            "liqo_virtual_kubelet_reflection_error_counter",
            "Transient errors of reflection (retried), per namespace and kind",
            LABELS,
            registry=registry,
        )
        self.latency = Histogram(
            "liqo_virtual_kubelet_reflection_latency_seconds",
            "Seconds from a change reaching the reflector's queue to the end of its reflection",
            ["reflector_resource"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

    def labels(self, namespace: str, kind: str) -> tuple[str, str, str, str]:
        return (namespace, kind, self._cluster_id, self._node_name)


class OffloadedPods(Collector):
    """`liqo_virtual_kubelet_offloaded_pods{phase}`: the pods bound to the virtual node, by phase, at scrape time."""

    def __init__(self, pods: Callable[[], Iterable[JSON]], *, node_name: str) -> None:
        self._pods = pods
        self._node_name = node_name

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = dict.fromkeys(POD_PHASES, 0)
        for pod in self._pods():
            phase = str(nested(pod, "status", "phase") or "Pending")
            counts[phase] = counts.get(phase, 0) + 1
        family = GaugeMetricFamily(
            "liqo_virtual_kubelet_offloaded_pods",
            "Pods bound to the virtual node, by phase",
            labels=["node_name", "phase"],
        )
        for phase, count in counts.items():
            family.add_metric([self._node_name, phase], count)
        yield family
