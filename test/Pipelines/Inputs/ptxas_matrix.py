#!/usr/bin/env python3
"""The issue-27 matrix through mha-lower-to-cuda with ptxas: for each element
type (f32, f16, bf16), head dim (64, 80, 96, 128), causal or not, and core
attention (B=2 H=8 S=512) or a whole layer (B=2 S=256 E=8d H=8), lowers with
`format=bin` for each chip given and prints one line:

    TYPE KIND dD causal=C CHIP: OK
    TYPE KIND dD causal=C CHIP: refused: <the first error, without its path>

    ptxas_matrix.py MHA_OPT WORKDIR CHIP...
"""
import itertools
import os
import re
import subprocess
import sys


def case_ir(element, d, causal, kind):
    if kind == "core":
        t = f"tensor<2x8x512x{d}x{element}>"
        attrs = "{causal}" if causal else "{}"
        return (f"func.func @main(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n"
                f"  %init = tensor.empty() : {t}\n"
                f"  %y = mha.attention ins(%q, %k, %v : {t}, {t}, {t}) "
                f"outs(%init : {t}) {attrs} -> {t}\n"
                f"  return %y : {t}\n}}\n")
    x = f"tensor<2x256x{8 * d}x{element}>"
    w = f"tensor<{8 * d}x{8 * d}x{element}>"
    extra = ", causal" if causal else ""
    return (f"func.func @main(%x: {x}, %wq: {w}, %wk: {w}, %wv: {w}, "
            f"%wo: {w}) -> {x} {{\n"
            f"  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo "
            f"{{num_heads = 8 : i64{extra}}}\n"
            f"         : ({x}, {x}, {x}, {w}, {w}, {w}, {w}) -> {x}\n"
            f"  return %y : {x}\n}}\n")


def main():
    mha_opt, workdir, chips = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(workdir, exist_ok=True)
    for element, d, causal, kind in itertools.product(
            ["f32", "f16", "bf16"], [64, 80, 96, 128], [0, 1],
            ["core", "layer"]):
        path = os.path.join(workdir, f"{element}-{kind}-d{d}-c{causal}.mlir")
        with open(path, "w") as f:
            f.write(case_ir(element, d, causal, kind))
        for chip in chips:
            result = subprocess.run(
                [mha_opt, path, f"--mha-lower-to-cuda=chip={chip} format=bin",
                 "-o", os.devnull],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            label = f"{element} {kind} d{d} causal={causal} {chip}"
            if result.returncode == 0:
                print(f"{label}: OK")
                continue
            errors = [re.sub(r"^\S*:\d+:\d+: ", "", line)
                      for line in result.stdout.splitlines() if "error" in line]
            print(f"{label}: refused: " +
                  (errors[0] if errors else result.stdout.strip()[-200:]))


if __name__ == "__main__":
    main()
