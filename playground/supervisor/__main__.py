"""`python -m playground.supervisor --plan PLAN --state STATE --held HELD [--log LOG]`

Runs the plan until SIGTERM or SIGINT (see the package docstring), writing its state to
STATE; SIGHUP rereads HELD. LOG is only recorded (the launcher sends stdout and stderr
there). Exit codes: 0 stopped, 2 bad arguments or plan.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from .plan import Plan
from .supervisor import Supervisor, own_record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m playground.supervisor", description=__doc__)
    parser.add_argument("--plan", type=Path, required=True, help="the processes to run (JSON)")
    parser.add_argument("--state", type=Path, required=True, help="where the state is written")
    parser.add_argument("--held", type=Path, required=True, help="the roles to keep stopped (JSON list)")
    parser.add_argument("--log", default="", help="this supervisor's log, for its record")
    args = parser.parse_args(argv)
    try:
        plan = Plan.from_json(json.loads(args.plan.read_text()))
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"--plan {args.plan}: {exc}")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    supervisor = Supervisor(plan, state_path=args.state, held_path=args.held, record=own_record(args.log))
    asyncio.run(supervisor.run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
