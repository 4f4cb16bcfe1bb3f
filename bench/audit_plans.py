#!/usr/bin/env python3
"""Compiles every plan bench_shapes.py would time (bench/plan_list.py) with `kiln compile --no-cache --json`
on this machine (no GPU needed) and reports the kernels with spills or with ptxas performance notes (C7512 /
C7513: wgmma serialized; ptxas prints those as info lines, so they are easy to miss: docs/performance.md).
Exit status 1 when any kernel has one.

  KILN_TUNING_DEVICE=h200 python3 bench/audit_plans.py [--shapes bench/shapes.json] [--jobs 2]
      [--kiln build/tools/kiln] [--only dense|moe]

KILN_TUNING_DEVICE picks the pre-tuned table the plans read (h200: the H200's), as bench/precompile.py does.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plan_list  # noqa: E402


def audit_one(kiln, plan):
    spec, n, k, m = plan
    cmd = [kiln, "compile", spec, "--arch", "sm_90a", "--m", str(m), "--n", str(n), "--k", str(k),
           "--no-cache", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return plan, None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    try:
        return plan, json.loads(r.stdout), None
    except json.JSONDecodeError as e:
        return plan, None, f"unreadable JSON: {e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "shapes.json"),
                    help="default: bench/shapes.json")
    ap.add_argument("--kiln", default="build/tools/kiln")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", choices=("dense", "moe"))
    args = ap.parse_args()
    with open(args.shapes) as f:
        shapes = json.load(f)
    plans = plan_list.plans(shapes, only=args.only)
    flagged, failed, done = [], [], 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for plan, report, error in pool.map(lambda p: audit_one(args.kiln, p), plans):
            done += 1
            if error is not None:
                failed.append((plan, error))
            else:
                notes = report.get("ptxas_notes") or []
                spills = max(report.get("spill_stores") or 0, report.get("spill_loads") or 0)
                if notes or spills:
                    flagged.append((plan, report, notes, spills))
            print(f"\r{done}/{len(plans)} compiled, {len(flagged)} flagged, {len(failed)} failed", end="",
                  file=sys.stderr, flush=True)
    print(file=sys.stderr)
    for (spec, n, k, m), report, notes, spills in flagged:
        print(f"{spec} M={m} N={n} K={k} [{report['family']} {report['config_name']}]: "
              f"spills {spills} B; {'; '.join(notes) if notes else 'no ptxas notes'}")
    for (spec, n, k, m), error in failed:
        print(f"{spec} M={m} N={n} K={k}: did not compile: {error}")
    print(f"{len(plans)} plans: {len(plans) - len(flagged) - len(failed)} clean, {len(flagged)} with spills or "
          f"ptxas performance notes, {len(failed)} failed")
    return 1 if flagged or failed else 0


if __name__ == "__main__":
    sys.exit(main())
