"""What `kubectl get foreignclusters` prints in Liqo's documentation, for tests that compare with it."""

from __future__ import annotations

#: the header, split on whitespace as the tests split kubectl's output
FOREIGNCLUSTERS_HEADER = [
    "NAME",
    "TYPE",
    "OUTGOING",
    "PEERING",
    "INCOMING",
    "PEERING",
    "NETWORKING",
    "AUTHENTICATION",
    "AGE",
]
#: the first six cells of an out-of-band peering with milan, established, without the network fabric
MILAN_ESTABLISHED = ["milan", "OutOfBand", "Established", "None", "None", "Established"]
#: the same with the network fabric up, as Liqo's quick start shows it
MILAN_NETWORKED = ["milan", "OutOfBand", "Established", "None", "Established", "Established"]
