"""torch.nn.MultiheadAttention (PyTorch 1.13's) to MHA-MLIR.

    from mha_importers.torch_mha import import_module
    import_module(mha, "out", batch=2, q_len=16, kv_len=16)

writes out/main.mlir, out/main.weights/*.npy and out/main.rsp. What maps to
what (docs/Integration.md):
- in_proj_weight [3E, E] (or q/k/v_proj_weight [E, kdim|vdim]) is split and
  transposed to mha's [in, out]; in_proj_bias is split; out_proj likewise.
- batch_first=False: the function takes [S, B, E] and transposes around
  the layer.
- key_padding_mask [B, Sk] and attn_mask [Sq, Sk] or [B*H, Sq, Sk], boolean
  (true: not attended, PyTorch's convention, negated on import) or float
  (added), are function arguments combined into mha's mask inside it.
- need_weights: the function returns the weights too (return_weights).
- Not supported (an error says so): add_bias_kv, add_zero_attn.
"""
import numpy as np

from .layer import Layer, MaskInput, write


def _to_numpy(t):
    """A torch tensor or an array-like as a numpy array."""
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def _configure(layer, batch, q_len, kv_len, batch_first, self_attention,
               key_padding_mask, attn_mask):
    """Sets the sizes, layout and masks of `layer` as PyTorch's forward
    takes them: each mask None or (dtype 'bool'|'float', shape with None for
    dynamic dims); attn_mask [Sq, Sk] or [B*H, Sq, Sk]."""
    layer.batch, layer.q_len, layer.kv_len = batch, q_len, kv_len
    layer.seq_first = not batch_first
    layer.self_attention = self_attention
    if key_padding_mask is not None:
        dtype, shape = key_padding_mask
        layer.masks.append(MaskInput("key_padding_mask", tuple(shape), "BK",
                                     dtype == "bool", true_attends=False))
    if attn_mask is not None:
        dtype, shape = attn_mask
        dims = "QK" if len(shape) == 2 else "NQK"
        layer.masks.append(MaskInput("attn_mask", tuple(shape), dims,
                                     dtype == "bool", true_attends=False))


def layer_from_state(state, embed_dim, num_heads, kdim=None, vdim=None,
                     prefix=""):
    """A Layer from nn.MultiheadAttention's state dict (tensors or arrays)."""
    def get(name):
        t = state.get(prefix + name)
        return None if t is None else _to_numpy(t)
    if get("bias_k") is not None or get("bias_v") is not None:
        raise ValueError("add_bias_kv is not supported")
    kdim, vdim = kdim or embed_dim, vdim or embed_dim
    w = get("in_proj_weight")
    if w is not None:
        wq, wk, wv = np.split(w, 3, axis=0)
    else:
        wq, wk, wv = get("q_proj_weight"), get("k_proj_weight"), \
            get("v_proj_weight")
    if wq is None:
        raise ValueError(f"no in_proj_weight or q_proj_weight under "
                         f"'{prefix}'")
    b = get("in_proj_bias")
    bq = bk = bv = None
    if b is not None:
        bq, bk, bv = np.split(b, 3)
    layer = Layer(num_heads=num_heads, num_kv_heads=num_heads,
                  w_q=wq.T.copy(), w_k=wk.T.copy(), w_v=wv.T.copy(),
                  w_o=get("out_proj.weight").T.copy(),
                  b_q=bq, b_k=bk, b_v=bv, b_o=get("out_proj.bias"))
    if (layer.w_k.shape[0], layer.w_v.shape[0]) != (kdim, vdim):
        raise ValueError("kdim/vdim do not match the weights")
    return layer


def import_module(mha, out_dir, name="main", batch=None, q_len=None,
                  kv_len=None, self_attention=False, key_padding_mask=None,
                  attn_mask=None, need_weights=False,
                  average_attn_weights=True, inputs=None):
    """Imports `mha` (nn.MultiheadAttention).

    `batch`, `q_len`, `kv_len`: static sizes (None: dynamic).
    `key_padding_mask`, `attn_mask`: None, or (dtype, shape) of the mask the
    caller will pass ('bool' or 'float'; shape with None for dynamic dims),
    as PyTorch takes them. `need_weights`, `average_attn_weights`: as
    forward's; with need_weights the function also returns the attention
    weights ([B, Sq, Sk] averaged, else [B, H, Sq, Sk]). `inputs`: arrays to
    save for the runtime arguments (by name: query, key, value,
    key_padding_mask, attn_mask).
    """
    if getattr(mha, "add_zero_attn", False):
        raise ValueError("add_zero_attn is not supported")
    layer = layer_from_state(mha.state_dict(), mha.embed_dim, mha.num_heads,
                             mha.kdim, mha.vdim)
    _configure(layer, batch, q_len, kv_len, getattr(mha, "batch_first", False),
               self_attention, key_padding_mask, attn_mask)
    if need_weights:
        layer.return_weights = "average" if average_attn_weights else \
            "per_head"
    if inputs is not None:
        inputs = {k: _to_numpy(v) for k, v in inputs.items()}
    return write(layer, out_dir, name, inputs)


def main(argv=None):
    """python3 -m mha_importers.torch_mha STATE_DICT --prefix P ... -o DIR"""
    import argparse
    import torch
    p = argparse.ArgumentParser(
        prog="python3 -m mha_importers.torch_mha",
        description="Import the nn.MultiheadAttention whose tensors a state "
                    "dict holds under PREFIX (e.g. 'layers.0.self_attn.') "
                    "into DIR/NAME.mlir, DIR/NAME.weights/ and DIR/NAME.rsp.")
    p.add_argument("state_dict", help="a file torch.save wrote: a state dict, "
                   "or a module whose state_dict() is taken")
    p.add_argument("--prefix", default="", help="the tensors' name prefix")
    p.add_argument("--embed-dim", type=int, required=True)
    p.add_argument("--num-heads", type=int, required=True)
    p.add_argument("--kdim", type=int)
    p.add_argument("--vdim", type=int)
    p.add_argument("--batch-first", action="store_true",
                   help="inputs are [B, S, E] (default: PyTorch's [S, B, E])")
    p.add_argument("--self-attention", action="store_true",
                   help="one input for query, key and value")
    p.add_argument("--batch", type=int, help="static batch (default dynamic)")
    p.add_argument("--q-len", type=int, help="static query length")
    p.add_argument("--kv-len", type=int, help="static key length")
    p.add_argument("--key-padding-mask", choices=["bool", "float"],
                   help="the function takes a key padding mask [B, Sk]")
    p.add_argument("--attn-mask", choices=["bool", "float"],
                   help="the function takes an attention mask")
    p.add_argument("--attn-mask-rank", type=int, choices=[2, 3], default=2,
                   help="[Sq, Sk] (2) or [B*H, Sq, Sk] (3)")
    p.add_argument("-o", "--output", required=True, help="output directory")
    p.add_argument("--name", default="main", help="entry function name")
    args = p.parse_args(argv)
    state = torch.load(args.state_dict, map_location="cpu")
    if hasattr(state, "state_dict"):
        state = state.state_dict()
    layer = layer_from_state(state, args.embed_dim, args.num_heads,
                             args.kdim, args.vdim, args.prefix)
    b, sq, sk = args.batch, args.q_len, args.kv_len
    key_padding_mask = attn_mask = None
    if args.key_padding_mask:
        key_padding_mask = (args.key_padding_mask, (b, sk))
    if args.attn_mask:
        attn_mask = (args.attn_mask, (sq, sk) if args.attn_mask_rank == 2 else
                     (None if b is None else b * args.num_heads, sq, sk))
    _configure(layer, b, sq, sk, args.batch_first, args.self_attention,
               key_padding_mask, attn_mask)
    print(write(layer, args.output, args.name))


if __name__ == "__main__":
    main()
