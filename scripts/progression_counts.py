#!/usr/bin/env python3
"""Progression pairs per file in an `extract` output (JSONL): counts by rule, the pairs,
and the kernels the progression rules left out (unpaired with a reason).

usage: scripts/progression_counts.py units.jsonl [--pairs]
"""
import collections
import json
import sys

RULES = ("progression_step", "progression_from_first", "naming_pair", "version_step",
         "version_from_first")


def main():
    path = sys.argv[1]
    show = "--pairs" in sys.argv
    per_file = collections.defaultdict(collections.Counter)
    pairs = collections.defaultdict(list)
    left = collections.defaultdict(list)
    for line in open(path):
        rec = json.loads(line)
        d = rec["data"]
        if rec["type"] == "pair" and d["rule"] in RULES:
            f = d["fast"]["path"]
            per_file[f][d["rule"]] += 1
            per_file[f]["identical"] += d.get("identical", False)
            pairs[f].append((d["slow"]["unit"]["kernel"], d["fast"]["kernel"], d["rule"]))
        elif rec["type"] == "unpaired":
            left[d["path"]].append((d["kernel"], d["reason"]))
    total = collections.Counter()
    print(f"{'file':<70} {'step':>5} {'first':>5} {'name':>5} {'vstep':>5} {'vfrst':>5} {'ident':>5}")
    for f in sorted(per_file):
        c = per_file[f]
        total.update(c)
        print(f"{f:<70} {c['progression_step']:>5} {c['progression_from_first']:>5} "
              f"{c['naming_pair']:>5} {c['version_step']:>5} {c['version_from_first']:>5} "
              f"{c['identical']:>5}")
        if show:
            for s, fa, r in pairs[f]:
                print(f"    {s} -> {fa}  [{r}]")
    print(f"{'total (' + str(len(per_file)) + ' files)':<70} {total['progression_step']:>5} "
          f"{total['progression_from_first']:>5} {total['naming_pair']:>5} "
          f"{total['version_step']:>5} {total['version_from_first']:>5} {total['identical']:>5}")
    n = sum(total[r] for r in RULES)
    print(f"progression pairs: {n}")
    if left:
        print("\nleft out by the progression rules:")
        for f in sorted(left):
            for k, why in left[f]:
                print(f"  {f}: {k}: {why}")


if __name__ == "__main__":
    main()
