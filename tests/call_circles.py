#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The call circles of overlay/ (tests/check_layers.sh runs this).

Builds the file-level call graph from the objects the Makefile builds
(build/plain/overlay/**/*.o): file A calls file B when A's object uses a
global symbol that B's defines (nm). A circle is a strongly connected
component of that graph: files that all reach each other through calls.
Prints one line per circle larger than MAX files, naming them, and exits 1;
exits 2 when an object is missing or older than its source (the caller
builds them first: make check-layers). Calls through function pointers
(struct core_ops, loop_handlers) are no edges: a table of them is named
once, by whoever hands it over."""
import os
import subprocess
import sys

MAX = int(os.environ.get("CALL_CIRCLE_MAX", "5"))
OBJ_ROOT = "build/plain"


def sources(top):
    for d, _, files in os.walk(top):
        for f in files:
            if f.endswith(".c"):
                yield os.path.join(d, f)


def symbols(obj):
    out = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 2 and p[0] == "U":
            used.add(p[1])
        elif len(p) == 3 and p[1] in "TDBRGSVWC":
            defined.add(p[2])
    return defined, used


def circles(edges):
    """Tarjan's strongly connected components, without recursion."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges[w])))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def main():
    srcs = sorted(sources(sys.argv[1] if len(sys.argv) > 1 else "overlay"))
    defs, uses, stale = {}, {}, []
    for src in srcs:
        obj = os.path.join(OBJ_ROOT, src[:-2] + ".o")
        if not os.path.exists(obj) or os.path.getmtime(obj) < os.path.getmtime(src):
            stale.append(src)
            continue
        defined, used = symbols(obj)
        uses[src] = used
        for s in defined:
            defs[s] = src
    if stale:
        for s in stale:
            print(f"{s}: no object newer than it under {OBJ_ROOT}/ (make check-layers builds them)")
        return 2
    edges = {f: sorted({defs[s] for s in u if s in defs and defs[s] != f}) for f, u in uses.items()}
    bad = 0
    for comp in circles(edges):
        if len(comp) > MAX:
            print(f"a call circle of {len(comp)} files, more than {MAX}: {' '.join(comp)}")
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
