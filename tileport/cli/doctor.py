"""`tileport doctor [--json] [--for WORK ...]`: one line per toolchain part, with the fix."""

from __future__ import annotations

import argparse
import json

from tileport.service.environment import doctor
from tileport.cli._common import config_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check the toolchain, one line per part",
                       description="Check every toolchain part; exit 1 if one the requested work needs is missing.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--for", dest="work", action="append", choices=sorted(doctor.NEEDS),
                   help="work to check for (repeatable; default: analyze and build-rust)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = config_from(args)
    work = args.work or ["analyze", "build-rust"]
    checks = doctor.run_checks(config)
    bad = doctor.failing(checks, work)
    if args.json:
        print(json.dumps({"work": work, "ok": not bad, "checks": doctor.as_json(checks)}, indent=2))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            line = f"{c.name:<{width}}  {c.status:<7}  {c.detail}"
            if c.fix:
                line += f"  -> {c.fix}"
            print(line)
        print(f"\n{'ready' if not bad else 'NOT ready'} for: {', '.join(work)}"
              + (f" (fix: {', '.join(c.name for c in bad)})" if bad else ""))
    return 1 if bad else 0
