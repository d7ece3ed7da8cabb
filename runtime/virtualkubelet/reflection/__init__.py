"""Reflection: the consumer's objects carried into their twin namespaces on the provider, and their status back.

The layout follows Liqo's (`pkg/virtualKubelet/reflection/`), on the one `runtime.core` engine:

| module | job |
| --- | --- |
| `generic.py` | `Reflector`: one kind, one keyed queue, local and remote informers, one `handle` per key |
| `manager.py` | `ReflectionManager`: the remote informers of each local/remote namespace pair, started and stopped for every reflector at once |
| `namespacemap.py` | which pairs exist: the NamespaceMap of this virtual kubelet's provider, as its status says |
| `workload.py` | pods as ShadowPods (spec out, status back), with their ServiceAccount token Secrets |

A kind that needs reflecting (ConfigMaps, Secrets, Services, EndpointSlices, Events) is
one more `Reflector` subclass: its remote kinds, a local informer, and `handle`.
"""
