#!/usr/bin/env python3
"""The CUDA objects of a build that a change makes stale: Meson gives nvcc no depfiles, so ninja
rebuilds a .cu.o when its .cu changes, never when a header it includes does. Prints the objects
(paths from here) of every .cu whose own file or any header it includes, directly or through other
headers of the repository, is among the FILEs given (paths from the repository root), or, with
--newer, is newer than the object (what a depfile would have told ninja). Quoted includes are
resolved against the including file's folder and the -I folders of its compile command.
Usage: scripts/stale-cuda-objects.py BUILD [--delete] FILE...   (e.g. $(git diff --name-only A B))
       scripts/stale-cuda-objects.py BUILD [--delete] --newer
--delete removes each object it prints, so the next ninja rebuilds it."""
import json
import os
import re
import shlex
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def includes_of(path, dirs, seen):
    """Every repository file `path` includes, transitively (absolute paths)."""
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return
    for name in INCLUDE.findall(text):
        for d in [os.path.dirname(path)] + dirs:
            candidate = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(candidate):
                if candidate not in seen:
                    seen.add(candidate)
                    includes_of(candidate, dirs, seen)
                break


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build, rest = argv[0], argv[1:]
    delete = "--delete" in rest
    newer = "--newer" in rest
    rest = [f for f in rest if f not in ("--delete", "--newer")]
    if not newer and not rest:
        print(__doc__, file=sys.stderr)
        return 2
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    changed = {os.path.normpath(os.path.join(repo, f)) for f in rest}
    try:
        entries = json.load(open(os.path.join(build, "compile_commands.json")))
    except OSError as e:
        print(f"no compile_commands.json in {build}: {e}", file=sys.stderr)
        return 2
    for e in entries:
        if not e["file"].endswith(".cu"):
            continue
        where = e["directory"]
        source = os.path.normpath(os.path.join(where, e["file"]))
        words = shlex.split(e["command"])
        dirs = []
        for i, w in enumerate(words):
            if w == "-I" and i + 1 < len(words):
                dirs.append(words[i + 1])
            elif w.startswith("-I") and len(w) > 2:
                dirs.append(w[2:])
        dirs = [os.path.normpath(os.path.join(where, d)) for d in dirs]
        seen = {source}
        includes_of(source, dirs, seen)
        obj = os.path.join(where, e["output"])
        if newer:
            built = os.path.getmtime(obj) if os.path.exists(obj) else None
            stale = built is not None and max(os.path.getmtime(f) for f in seen) > built
        else:
            stale = bool(seen & changed)
        if stale:
            print(os.path.relpath(obj))
            if delete and os.path.exists(obj):
                os.remove(obj)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
