#!/usr/bin/env python3
"""What the CUDA kernels of a lowered module are made of.

    ptx_report.py MODULE.mlir [--chip sm_90] [--ptxas PATH] [--ptx-out FILE]

MODULE.mlir is mha-opt's output of --mha-lower-to-cuda="format=isa ..." (or
any module whose gpu.binary ops hold PTX text). For each kernel: ptxas -v's
registers, spill bytes and shared memory for the chip, and the count of the
instructions that say how the kernel computes (tensor-core mma.sync,
ldmatrix, cp.async, shuffles, shared and global loads and stores, barriers,
ex2), in the whole kernel and in its innermost loop with mma.sync (the key
loop of an attention kernel). One line per kernel:

    kernel NAME: registers R, spill stores S, spill loads L, shared B bytes,
        mma.sync M (loop Ml), ldmatrix ..., ...

A kernel the host launches with dynamic shared memory (over the 48 KiB
CUDA allows statically) says `shared B bytes (dynamic)`, B from its
gpu.launch_func's dynamic_shared_memory_size.

Exit status 1 if ptxas refuses a kernel (its message, not the module).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

COUNTED = ["mma.sync", "ldmatrix", "cp.async", "shfl.sync", "ld.shared",
           "st.shared", "ld.global", "st.global", "bar.sync", "ex2.approx"]


def ptx_modules(text):
    """(name, PTX text) of the module's gpu.binary ops."""
    modules = []
    for match in re.finditer(r'gpu\.binary @(\w+).*?assembly = '
                             r'"((?:[^"\\]|\\.)*)"', text, re.S):
        ptx = re.sub(r"\\([0-9A-Fa-f]{2})",
                     lambda m: chr(int(m.group(1), 16)), match.group(2))
        modules.append((match.group(1), ptx.replace("\\\\", "\\")))
    return modules


def dynamic_shared_bytes(text):
    """{(module, kernel): bytes} of the launches with dynamic shared memory,
    each size a constant of the host function that launches it."""
    sizes = {}
    for function in text.split("llvm.func @")[1:]:
        constants = dict(re.findall(
            r"(%\w+) = llvm\.mlir\.constant\((\d+) : i32\)", function))
        for module, kernel, value in re.findall(
                r"gpu\.launch_func .*?@(\w+)::@(\w+) .*?"
                r"dynamic_shared_memory_size (%\w+)", function):
            if value in constants:
                key = (module, kernel)
                sizes[key] = max(sizes.get(key, 0), int(constants[value]))
    return sizes


def kernels(ptx):
    """(name, body) of each .entry."""
    found = []
    for match in re.finditer(r"\.entry\s+(\w+)\s*\(", ptx):
        start = match.end()
        depth, i = 0, ptx.index("{", start)
        for j in range(i, len(ptx)):
            depth += {"{": 1, "}": -1}.get(ptx[j], 0)
            if depth == 0:
                found.append((match.group(1), ptx[i:j + 1]))
                break
    return found


def innermost_mma_loop(body):
    """The instructions between the label and the backward branch of the
    innermost loop that holds an mma.sync ("" if none)."""
    lines = body.splitlines()
    labels = {line.strip()[:-1]: i for i, line in enumerate(lines)
              if re.match(r"^\$?\w+:$", line.strip())}
    best = ""
    for i, line in enumerate(lines):
        branch = re.search(r"\bbra(?:\.uni)?\s+(\$?\w+);", line)
        if not branch or branch.group(1) not in labels:
            continue
        start = labels[branch.group(1)]
        if start >= i:
            continue
        loop = "\n".join(lines[start:i + 1])
        if "mma.sync" in loop and (not best or len(loop) < len(best)):
            best = loop
    return best


def count(text, op):
    return len(re.findall(r"^\s*(?:@!?%p\d+\s+)?" + re.escape(op) + r"\b",
                          text, re.M))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module")
    parser.add_argument("--chip", default="sm_90")
    parser.add_argument("--ptxas", default=None)
    parser.add_argument("--ptx-out", help="also write the PTX here")
    args = parser.parse_args()
    ptxas = args.ptxas or ("/usr/local/cuda/bin/ptxas"
                           if os.path.exists("/usr/local/cuda/bin/ptxas")
                           else "ptxas")
    with open(args.module) as f:
        text = f.read()
    modules = ptx_modules(text)
    dynamic = dynamic_shared_bytes(text)
    if not modules:
        print(f"{args.module}: no PTX (lower with format=isa)",
              file=sys.stderr)
        return 1
    status = 0
    for module, ptx in modules:
        if args.ptx_out:
            with open(args.ptx_out, "a") as f:
                f.write(ptx)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kernels.ptx")
            with open(path, "w") as f:
                f.write(ptx)
            result = subprocess.run(
                [ptxas, "-v", f"--gpu-name={args.chip}", path, "-o",
                 os.path.join(tmp, "kernels.cubin")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode:
            errors = [line for line in result.stdout.splitlines()
                      if "error" in line or "fatal" in line]
            print("ptxas refused the kernels: " +
                  ("; ".join(errors[:3]) or result.stdout[-400:]))
            status = 1
            continue
        # ptxas -v: per function, "Compiling entry function 'NAME'", then
        # spills, then registers and shared memory.
        info = {}
        current = None
        for line in result.stdout.splitlines():
            entry = re.search(r"entry function '(\w+)'", line)
            if entry:
                current = info.setdefault(entry.group(1), {})
            elif current is not None:
                spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes "
                                  r"spill loads", line)
                if spill:
                    current["spill_stores"] = int(spill.group(1))
                    current["spill_loads"] = int(spill.group(2))
                regs = re.search(r"Used (\d+) registers", line)
                if regs:
                    current["registers"] = int(regs.group(1))
                smem = re.search(r"(\d+) bytes smem", line)
                if smem:
                    current["shared"] = int(smem.group(1))
        for name, body in kernels(ptx):
            i = info.get(name, {})
            loop = innermost_mma_loop(body)
            counts = ", ".join(
                f"{op} {count(body, op)}" +
                (f" (loop {count(loop, op)})" if loop else "")
                for op in COUNTED)
            shared = (f"{dynamic[(module, name)]} bytes (dynamic)"
                      if (module, name) in dynamic
                      else f"{i.get('shared', 0)} bytes")
            print(f"kernel {name}: registers {i.get('registers', '?')}, "
                  f"spill stores {i.get('spill_stores', 0)}, spill loads "
                  f"{i.get('spill_loads', 0)}, shared {shared}, {counts}")
    return status


if __name__ == "__main__":
    sys.exit(main())
