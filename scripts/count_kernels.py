#!/usr/bin/env python3
"""Independent count of __global__ kernel definitions in a tree (regex, not tree-sitter),
to cross-check `kernelpair extract`. Usage: count_kernels.py DIR [--list] [--ext .cu,.cuh]"""
import re, sys, os

def strip_comments(t):
    return re.sub(r'//[^\n]*|/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), t, flags=re.S)

def kernels(text):
    t = strip_comments(text)
    out = []
    for m in re.finditer(r'\b__global__\b', t):
        # the name is the last identifier before the first '(' after __global__,
        # skipping __launch_bounds__(...)
        rest = t[m.end():]
        rest2 = re.sub(r'^\s*(\w+\s+)*?__launch_bounds__\s*\([^)]*\)', lambda x: ' ' * len(x.group(0)), rest)
        p = rest2.find('(')
        if p < 0:
            continue
        name = re.findall(r'[A-Za-z_]\w*', rest2[:p])
        if not name:
            continue
        depth, i = 0, p
        while i < len(rest2):
            if rest2[i] == '(':
                depth += 1
            elif rest2[i] == ')':
                depth -= 1
                if depth == 0:
                    break
            i += 1
        after = rest2[i + 1:].lstrip()
        if after.startswith('{'):
            out.append((name[-1], t[:m.start()].count('\n') + 1))
    return out

def main():
    root = sys.argv[1]
    exts = ('.cu', '.cuh')
    for a in sys.argv[2:]:
        if a.startswith('--ext='):
            exts = tuple(a[6:].split(','))
    total, rows = 0, []
    for d, _, fs in os.walk(root):
        for f in sorted(fs):
            if not f.endswith(exts):
                continue
            p = os.path.join(d, f)
            try:
                text = open(p, encoding='utf-8', errors='replace').read()
            except OSError:
                continue
            ks = kernels(text)
            total += len(ks)
            rows += [(os.path.relpath(p, root), k, l) for k, l in ks]
    if '--list' in sys.argv:
        for r in sorted(rows):
            print(*r, sep='\t')
    print(total)

main()
