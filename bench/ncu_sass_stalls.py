"""Summarize an Nsight Compute source page (SASS) as exported by
    ncu -i REPORT.ncu-rep --page source --csv --print-source sass > page.csv
Prints the stall samples by reason, executed instructions by opcode, and the top instructions by stall
samples (address, samples, executed count, SASS). Usage: python3 bench/ncu_sass_stalls.py page.csv [--top 30]
"""
import argparse, collections, csv, io, sys


def number(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    text = open(args.csv, errors="replace").read()
    # ncu may print lines before the table: start at the header (the first line naming "Address").
    start = text.find('"Address"')
    if start < 0:
        sys.exit(f"{args.csv}: no source-page table (no \"Address\" column); first bytes: {text[:200]!r}")
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    if not rows:
        sys.exit(f"{args.csv}: empty table")
    cols = list(rows[0].keys())
    src = next((c for c in cols if c.lower() == "source"), None)
    samples = next((c for c in cols if "warp stall sampling (all" in c.lower()), None)
    executed = next((c for c in cols if c.lower().startswith("instructions executed")), None)
    reasons = [c for c in cols if c.lower().startswith("stall_") or c.lower().startswith("smsp__pcsamp")]
    if src is None or samples is None:
        sys.exit(f"{args.csv}: columns not found; have: {cols}")
    total = sum(number(r[samples]) for r in rows) or 1.0
    if reasons:
        by_reason = {c: sum(number(r[c]) for r in rows) for c in reasons}
        s = sum(by_reason.values()) or 1.0
        print("stall samples by reason:")
        for c, v in sorted(by_reason.items(), key=lambda kv: -kv[1])[:14]:
            print(f"  {c:28s} {int(v):8d} {100 * v / s:5.1f}%")
    else:
        print(f"(no per-reason columns; columns: {cols})")
    if executed:
        ops = collections.Counter()
        for r in rows:
            op = r[src].split()
            op = [t for t in op if not t.startswith("@")]
            if op:
                ops[op[0].split(".")[0]] += number(r[executed])
        n = sum(ops.values()) or 1.0
        print("executed instructions by opcode (%):",
              [(k, round(100 * v / n, 1)) for k, v in ops.most_common(16)])
    print(f"top {args.top} instructions by stall samples of {int(total)} (address, samples, executed, SASS):")
    for r in sorted(rows, key=lambda r: -number(r[samples]))[: args.top]:
        ex = number(r[executed]) if executed else 0
        print(f"  {r.get('Address', '?'):>8s} {int(number(r[samples])):7d} {ex / 1e6:6.2f}M  {r[src].strip()}")


if __name__ == "__main__":
    main()
