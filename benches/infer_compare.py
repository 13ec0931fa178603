#!/usr/bin/env python3
"""Compare inferred harnesses with hand-written ones, field by field.

usage: infer_compare.py UNITS.jsonl INFERRED_DIR HAND_DIR

For every pair in UNITS.jsonl that has a hand-written harness in HAND_DIR (found by the
same names `harness::locate` tries: <bench>.<kernel>.<variant>.toml, <bench>.<kernel>.toml,
<bench>.<variant>.toml, <bench>.toml) and an inferred one (INFERRED_DIR/<pair-id>.toml),
print one markdown row: sizes, buffer lengths, roles and launches, each as agreeing/total,
with TODOs counted apart, and the first disagreement as the reason. Lengths and launch
dimensions are compared by value (each harness's expressions evaluated over its own
default sizes; where an inferred size is a TODO under the hand harness's name, the hand
value stands in, so the expression's structure is still compared), so `n * n` and
`(n * n)` agree.
"""
import json
import math
import re
import sys
import tomllib
from pathlib import Path


def ceil_div(a, b):
    return -(-a // b)


def ternary(e):
    """C's `c ? a : b` (nested, parenthesized) as Python's `(a if c else b)`; None if unbalanced."""
    e = e.strip()
    # Parenthesized groups first, innermost out.
    out, depth, start = "", 0, None
    i = 0
    while i < len(e):
        ch = e[i]
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                inner = ternary(e[start + 1:i])
                if inner is None:
                    return None
                out += "(" + inner + ")"
                i += 1
                continue
        elif depth == 0:
            out += ch
        i += 1
    if depth != 0:
        return None
    # Now no parentheses at the top level hold a `?`: split at the first `?` and its `:`.
    depth, q = 0, None
    for j, ch in enumerate(out):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "?" and depth == 0:
            q = j
            break
    if q is None:
        return out
    depth, nested = 0, 0
    for j in range(q + 1, len(out)):
        ch = out[j]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and ch == "?":
            nested += 1
        elif depth == 0 and ch == ":":
            if nested == 0:
                c, a, b = out[:q], ternary(out[q + 1:j]), ternary(out[j + 1:])
                if a is None or b is None:
                    return None
                return f"(({a}) if ({c}) else ({b}))"
            nested -= 1
    return None


def evaluate(expr, scope):
    if isinstance(expr, (int, float)):
        return expr
    if not isinstance(expr, str) or "TODO" in expr:
        return None
    e = expr.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"(?<![=!<>])!(?!=)", " not ", e)
    # C ternary c ? a : b → Python (a if c else b).
    if "?" in e:
        e = ternary(e)
        if e is None:
            return None
    e = re.sub(r"(?<![/])/(?![/])", "//", e)
    env = dict(scope)
    env.update(ceil_div=ceil_div, min=min, max=max, round_up=lambda a, b: ceil_div(a, b) * b,
               log2=lambda a: int(math.log2(a)), pow2=lambda a: 1 << a,
               sm_count=132, warp_size=32, max_threads_per_block=1024, l2_bytes=50 << 20)
    try:
        return eval(e, {"__builtins__": {}}, env)
    except Exception:
        return None


def scope_of(h):
    s = {k: v for k, v in h.get("sizes", {}).items() if isinstance(v, int)}
    for _ in range(4):
        for k, v in h.get("derived", {}).items():
            x = evaluate(v, s)
            if x is not None:
                s[k] = x
    return s


def launch_of(h):
    if h.get("launch"):
        return h["launch"][0]
    v = h.get("variants", {}).get("fast", {}).get("launch")
    return v[0] if v else None


def dims(d):
    if d is None:
        return []
    return d if isinstance(d, list) else [d]


def main():
    units, inferred, hand = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    pairs = [json.loads(l)["data"] for l in units.open() if '"type":"pair"' in l.replace(" ", "")]
    print("| pair | benchmark/kernel | hand file | sizes | lengths | roles | launch | TODOs | first difference |")
    print("|---|---|---|---|---|---|---|---|---|")
    totals = [0] * 9
    for p in pairs:
        k, v, b = p["fast"]["kernel"], p["fast"]["variant"], p["benchmark"]
        names = [f"{b}.{k}.{v}.toml", f"{b}.{k}.toml"] + ([f"{b}.{v}.toml"] if v else []) + [f"{b}.toml"]
        hf = next((hand / n for n in names if (hand / n).is_file()), None)
        inf = inferred / f"{p['id']}.toml"
        if hf is None or not inf.is_file():
            continue
        H = tomllib.loads(hf.read_text())
        try:
            I = tomllib.loads(inf.read_text())
        except tomllib.TOMLDecodeError as e:
            print(f"| {p['id']} | {b}/{k} | {hf.name} | - | - | - | - | - | inferred file does not parse: {e} |")
            continue
        hs = scope_of(H)
        # Inferred expressions are evaluated over the hand sizes where the inferred harness
        # leaves a size open (a TODO) but names it the same: the structure is compared.
        is_ = {**hs, **scope_of(I)}
        todos = inf.read_text().count('"TODO"')
        first = []
        # Sizes by name and value.
        s_ok = sum(1 for n, x in H.get("sizes", {}).items() if I.get("sizes", {}).get(n) == x)
        s_tot = len(H.get("sizes", {}))
        if s_ok < s_tot:
            n = next(n for n, x in H.get("sizes", {}).items() if I.get("sizes", {}).get(n) != x)
            first.append(f"size {n}: hand {H['sizes'][n]}, inferred {I.get('sizes', {}).get(n, 'absent')}")
        # Args by position: lengths by value, roles by text.
        ha, ia = H.get("args", []), I.get("args", [])
        l_ok = l_tot = r_ok = r_tot = 0
        for i, a in enumerate(ha):
            b_ = ia[i] if i < len(ia) else {}
            if "len" in a:
                l_tot += 1
                x, y = evaluate(a["len"], hs), evaluate(b_.get("len"), is_)
                if x is not None and x == y:
                    l_ok += 1
                elif not first or len(first) < 2:
                    first.append(f"len {a['name']}: hand {a['len']}={x}, inferred {b_.get('len')}={y}")
            if "role" in a:
                r_tot += 1
                if a["role"] == b_.get("role"):
                    r_ok += 1
                elif len(first) < 3:
                    first.append(f"role {a['name']}: hand {a['role']}, inferred {b_.get('role')}")
        # Launch of the fast kernel: grid, block, shared memory by value.
        hl, il = launch_of(H), launch_of(I)
        g_ok = g_tot = 0
        if hl:
            for key in ["grid", "block", "shared_mem"]:
                if key not in hl:
                    continue
                g_tot += 1
                hv = [evaluate(x, hs) for x in dims(hl.get(key))]
                iv = [evaluate(x, is_) for x in dims((il or {}).get(key))]
                strip = lambda l: [x for x in l] + [1] * (3 - len(l)) if key != "shared_mem" else l
                if None not in hv and strip(hv) == strip(iv):
                    g_ok += 1
                elif len(first) < 4:
                    first.append(f"{key}: hand {hv}, inferred {iv}")
        for j, x in enumerate([s_ok, s_tot, l_ok, l_tot, r_ok, r_tot, g_ok, g_tot, todos]):
            totals[j] += x
        why = "; ".join(first[:2]).replace("|", "\\|") or "all agree"
        print(f"| {p['id'][:8]} | {b}/{k} | {hf.name} | {s_ok}/{s_tot} | {l_ok}/{l_tot} | {r_ok}/{r_tot} | {g_ok}/{g_tot} | {todos} | {why} |")
    t = totals
    print(f"| **total** | | | {t[0]}/{t[1]} | {t[2]}/{t[3]} | {t[4]}/{t[5]} | {t[6]}/{t[7]} | {t[8]} | |")


if __name__ == "__main__":
    main()
