"""Checks mha_importers.torch_compile's backend against PyTorch 2 itself:
models compiled with backend=mha_backend, run under torch.no_grad(), are
compared with the same modules' eager forward (and one with PyTorch's own
torch.compile), at the suite's f32 tolerances; the attention must have
been replaced (a CompiledAttention node in the graph) where it maps, and
left to PyTorch, with a warning, where it does not. Prints one line per
check. Needs PyTorch 2 and $MHA_AOT.

Usage: torch_compile_check.py FIXTURES_SCRIPT_DIR
"""
import sys
import warnings

import torch
import torch._dynamo
import torch.nn as nn

sys.path.insert(0, sys.argv[1])
from torch_export_fixtures import Block, GPTJ, Llama, MHASelf  # noqa: E402
from mha_importers import torch_compile as tc  # noqa: E402

torch.manual_seed(7)
graphs = []
_compile = tc._compile


def spy(gm, example_inputs, pipeline):
    compiled = _compile(gm, example_inputs, pipeline)
    graphs.append(compiled)
    return compiled


tc._compile = spy


def replaced():
    return sum(1 for g in graphs if hasattr(g, "graph")
               for n in g.graph.nodes
               if isinstance(n.target, tc.CompiledAttention))


def check(name, model, *args, atol=1e-5, rtol=1e-4, expect=1):
    torch._dynamo.reset()
    graphs.clear()
    model.eval()
    with torch.no_grad(), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        eager = model(*args)
        ours = torch.compile(model, backend=tc.mha_backend)(*args)
    eager = eager[0] if isinstance(eager, tuple) else eager
    ours = ours[0] if isinstance(ours, tuple) else ours
    err = (ours - eager).abs().max().item()
    ok = torch.allclose(ours, eager, atol=atol, rtol=rtol)
    notes = [str(x.message) for x in w if "mha_backend" in str(x.message)]
    print(f"{'PASS' if ok and replaced() == expect else 'FAIL'} {name}: "
          f"max abs error {err:.3e}, {replaced()} attention(s) replaced")
    for n in notes:
        print(f"  warning: {n.splitlines()[0]}")
    return ours


class Stack(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(n)])

    def forward(self, x):
        return self.blocks(x)


class WithWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x):
        return self.m(x, x, x)[0]


class WithWeightsReturned(WithWeights):
    def forward(self, x):
        y, w = self.m(x, x, x)
        return y + w.sum() * 0  # the weights used outside the attention


x = torch.randn(2, 8, 32)
check("two decoder blocks (norm, Llama attention, residual, MLP)", Stack(2),
      x, expect=2)
check("Llama block", Llama(), x)
check("GPT-J block with a mask", GPTJ(), torch.randn(2, 6, 32),
      torch.rand(2, 1, 6, 6) < 0.8)
check("nn.MultiheadAttention, need_weights=False", MHASelf(32, 4,
      batch_first=True), x)
check("nn.MultiheadAttention, need_weights=True, weights unused",
      WithWeights(), x)
check("nn.MultiheadAttention, need_weights=True, weights returned (left to "
      "PyTorch)", WithWeightsReturned(), x, expect=0)

# The same block through PyTorch's own torch.compile (inductor).
torch._dynamo.reset()
model = Stack(1).eval()
with torch.no_grad():
    ours = check("one block, against inductor too", model, x)
    torch._dynamo.reset()
    inductor = torch.compile(model)(x)
err = (ours - inductor).abs().max().item()
print(f"{'PASS' if torch.allclose(ours, inductor, atol=1e-5, rtol=1e-4) else 'FAIL'}"
      f" inductor: max abs error {err:.3e}")

# Refused at call time: gradients, and parameters changed after compiling.
torch._dynamo.reset()
model = Llama().eval()
compiled = torch.compile(model, backend=tc.mha_backend)
with torch.no_grad():
    compiled(x)
for what, run in (
        ("grad", lambda: compiled(x)),
        ("changed parameter", lambda: (model.q.weight.mul_(2),
                                       compiled(x)))):
    try:
        if what == "changed parameter":
            with torch.no_grad():
                run()
        else:
            run()
        print(f"FAIL {what}: no error")
    except Exception as e:  # noqa: BLE001
        print(f"PASS {what}: {str(e).splitlines()[-1]}")
