#!/usr/bin/env python3
"""The SPIR-V modules of a lowered module, as files for spirv-val or spirv-dis.

    spirv_binaries.py MODULE.mlir OUTDIR

MODULE.mlir is mha-opt's output of a Vulkan pipeline (--mha-lower-to-vulkan,
--mha-vulkan-backend), or "-" for standard input. Each SPIR-V object of its
gpu.binary ops (a #gpu.object with a #spirv.target_env) is written to
OUTDIR/NAME.spv, NAME the gpu.binary's symbol (NAME-I.spv where one holds
several), and its path printed. Exit status 1 if the module has none.
"""
import os
import re
import sys


def unescape(text):
    """The bytes of an MLIR string literal's body: \\XX hex escapes, \\\\ and
    \\" as themselves, every other character as its byte."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\":
            if text[i + 1] in "\\\"":
                out.append(ord(text[i + 1]))
                i += 2
            else:
                out.append(int(text[i + 1:i + 3], 16))
                i += 3
        else:
            out.append(ord(text[i]))
            i += 1
    return bytes(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    source, outdir = sys.argv[1:]
    text = sys.stdin.read() if source == "-" else open(source).read()
    os.makedirs(outdir, exist_ok=True)
    written = []
    for binary in re.finditer(r"gpu\.binary @(\w+)\s*(?:<[^>]*>\s*)?\[(.*?)\]\n",
                              text, re.S):
        objects = re.findall(r'#gpu\.object<#spirv\.target_env<.*?>>, '
                             r'"((?:[^"\\]|\\.)*)"', binary.group(2), re.S)
        for i, body in enumerate(objects):
            name = binary.group(1) + (f"-{i}" if len(objects) > 1 else "")
            path = os.path.join(outdir, name + ".spv")
            with open(path, "wb") as f:
                f.write(unescape(body))
            written.append(path)
            print(path)
    if not written:
        sys.exit("spirv_binaries.py: no SPIR-V gpu.binary in " + source)


if __name__ == "__main__":
    main()
