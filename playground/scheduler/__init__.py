"""The playground's scheduler: binds pending pods to nodes the way kube-scheduler's default profile does.

An ordinary API client on `runtime.core`, run by the control plane's manager through
`setup(manager, options)`, so it works against the emulator and against a real API server
alike. `scheduler.py` is the reconciler (passes, assumed placements, bindings, status and
events); the decisions are pure functions: `filters.py` (predicates and kube's messages),
`scoring.py`, `affinity.py` (pod affinity terms; label and node selectors are
`runtime.api.selectors`), `interpod.py` (pod affinity), `taints.py` (also the DaemonSet and
node lifecycle controllers'), `resources.py` (what pods request), over the snapshot in `nodeinfo.py`.
"""

from .scheduler import setup

__all__ = ["setup"]
