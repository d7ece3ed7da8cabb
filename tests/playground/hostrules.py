"""The host's nftables ruleset as one playground sees it: other playgrounds' tables left out.

A test that checks `playground down` leaves the host's rules as they were compares this
before and after: other playgrounds on the machine (another pytest-xdist worker's,
another user's) add and remove their bridge tables meanwhile.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from playground.network import names

#: what every playground's bridge table is named after (names.bridge_name)
BRIDGE_TABLE_PREFIX = "table inet pgbr-"


def host_ruleset(state_dir: Path) -> str:
    """`nft list ruleset` but for the bridge tables of state dirs other than `state_dir`."""
    ruleset = subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True, check=True).stdout
    ours = f"table inet {names.bridge_name(state_dir)} {{"
    tables = re.split(r"(?m)^(?=table )", ruleset)
    return "".join(
        table for table in tables if not table.startswith(BRIDGE_TABLE_PREFIX) or table.startswith(ours)
    )
