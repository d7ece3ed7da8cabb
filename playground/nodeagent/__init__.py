"""The playground's node agent: one process per node, in place of kind's kubelet.

An ordinary API client on `runtime.core` (it works against the emulator and a real API
server): it registers its Node, heartbeats its Lease, runs the pods bound to it
(the runtime's own image as local processes, every other image simulated) and writes
their status, and serves the kubelet API for logs. `python -m playground.nodeagent`.
"""

from .agent import NodeAgent
from .options import NodeAgentOptions, Taint

__all__ = ["NodeAgent", "NodeAgentOptions", "Taint"]
