#!/usr/bin/env python3
"""Writes the seeds for mha-fuzz that come from the lit tests.

    test_seeds.py TEST_DIR OUT_DIR [--all]

Each part of a .mlir test (split at `// -----`) that mentions mha becomes
seeds: without its comment lines (RUN and CHECK lines and prose are most of a
test's bytes, and mutating them changes nothing but the hash that draws the
input's pipeline), and one seed per function where the part is a list of
functions that do not call each other (each with all of the part's
aliases). mha-fuzz lowers an input whole, so every valid mutation of a file of
twelve functions would pay for twelve.

Seeds with more than MAX_MHA_OPS mha ops are left out unless --all is
given: a pipeline's time grows with the number of ops it lowers (ops.mlir's
38 took 10 s through mha-lower-to-cpu before the split), and not with the
tensors' sizes (BERT-base's layer, S=128 E=768, lowers as fast as one of
E=64; docs/Reliability.md has the measurements).
"""

import os
import re
import sys

MAX_MHA_OPS = 6

MHA_OP = re.compile(r"(?:^|[\s=(\"])mha\.[a-z_]+")
CALL = re.compile(r"\bcall @")


def is_large(text):
    return len(MHA_OP.findall(text)) > MAX_MHA_OPS


def functions(part):
    """The part as one seed per top-level func.func, each after all of the
    part's attribute and type aliases; the part whole where it holds
    anything else at the top level (a module, a transform schedule, globals)
    or a call."""
    lines = part.splitlines(keepends=True)
    top = [i for i, l in enumerate(lines) if l.strip() and not l[0].isspace()
           and not l.startswith("}")]
    items = ["".join(lines[b:e]) for b, e in zip(top, top[1:] + [len(lines)])]
    aliases = [i for i in items if i.startswith(("#", "!"))]
    funcs = [i for i in items if i.startswith("func.func ")]
    if (len(funcs) < 2 or CALL.search(part) or
            len(aliases) + len(funcs) != len(items)):
        return [part]
    head = "".join(aliases)
    return [head + f for f in funcs]


def main():
    root, out = sys.argv[1], sys.argv[2]
    keep_all = "--all" in sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    kept = large = 0
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".mlir"):
                continue
            with open(os.path.join(d, f)) as src:
                text = src.read()
            for part in text.split("// -----"):
                if "mha." not in part:
                    continue
                part = "".join(line for line in part.splitlines(keepends=True)
                               if not line.lstrip().startswith("//"))
                for seed in functions(part):
                    if not keep_all and is_large(seed):
                        large += 1
                        continue
                    path = os.path.join(out, f"test-{kept:04d}.mlir")
                    with open(path, "w") as o:
                        o.write(seed)
                    kept += 1
    print(f"seeds from test/: {kept} (left out as large: {large})")


if __name__ == "__main__":
    main()
