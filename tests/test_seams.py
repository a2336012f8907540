#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon's global functions that only tests call (tests/check_layers.sh
runs this; issue 62).

A global function of crypto/, config/, tun/ or overlay/ that no other
object of the daemon uses (nm, on the objects in build/plain/) and that
its own source file names only where it defines it is dead code to the
daemon: it must be a test seam, said so in its header, where the comment
right above its declaration (or the declaration's line) holds the words
"test seam" (the comment's paragraph: the lines above it up to a blank
line, so that one comment may cover a group of declarations), or be
removed, or be used where the daemon should. Prints
one line per function that is none of these and exits 1; exits 2 when an
object is missing or older than its source (make check-layers builds
them first)."""
import os
import re
import subprocess
import sys

OBJ_ROOT = "build/plain"
TOPS = ("crypto", "config", "tun", "overlay")


def sources():
    for top in TOPS:
        for d, _, files in os.walk(top):
            for f in files:
                if f.endswith(".c"):
                    yield os.path.join(d, f)


def headers():
    for top in TOPS:
        for d, _, files in os.walk(top):
            for f in files:
                if f.endswith(".h"):
                    yield os.path.join(d, f)


def nm(obj):
    out = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 2 and p[0] == "U":
            used.add(p[1])
        elif len(p) == 3 and p[1] == "T":
            defined.add(p[2])
    return defined, used


def declared_as_seam(name, texts):
    """Whether a header declares name under a comment saying "test seam"."""
    decl = re.compile(r"\b" + re.escape(name) + r"\s*\(")
    for text in texts:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if not decl.search(line) or line.lstrip().startswith(("*", "/*")):
                continue
            said = [line]
            j = i - 1
            while j >= 0:
                prev = lines[j].rstrip()
                if not prev or prev.startswith("#"):
                    break
                said.append(prev)
                j -= 1
            if "test seam" in " ".join(said).lower():
                return True
    return False


def main():
    defs, used_by = {}, {}
    for src in sources():
        obj = os.path.join(OBJ_ROOT, src[:-2] + ".o")
        if not os.path.exists(obj) or os.path.getmtime(obj) < os.path.getmtime(src):
            print(f"test_seams: {obj} missing or older than {src}: make check-layers builds it")
            return 2
        d, u = nm(obj)
        for s in d:
            defs[s] = src
        for s in u:
            used_by.setdefault(s, set()).add(src)
    texts = [open(h, encoding="utf-8").read() for h in headers()]
    bad = 0
    for name, src in sorted(defs.items()):
        if name == "main" or used_by.get(name, set()) - {src}:
            continue
        body = open(src, encoding="utf-8").read()
        if len(re.findall(r"\b" + re.escape(name) + r"\b", body)) > 1:
            continue   # its own file calls it (static would do, but it is used)
        if declared_as_seam(name, texts):
            continue
        print(f"{src}: {name} is called by no code of the daemon: remove it, use it, or say "
              f"\"test seam\" in the comment above its declaration")
        bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
