"""Independent numpy reference for the `mha` ops (docs/Semantics.md).

Written from the specification only, in float64, with none of the project's
lowering code: the integration tests hold every lowering to these numbers.

    multi_head_attention(query, key, value, w_q, w_k, w_v, w_o,
                         biases=None, mask=None, num_heads=H,
                         num_kv_heads=None, scale=None, causal=False,
                         softcap=None, window_left=None, window_right=None,
                         key_lengths=None, kv_cache=None, rotary=None)
    attention(q, k, v, mask=None, scale=None, causal=False,
              causal_offset=None, softcap=None, window_left=None,
              window_right=None, key_lengths=None)
    rotary(x, cos, sin, positions, interleaved=False)
"""

import numpy as np


def _broadcast_mask(mask, b, h, sq, sk):
    """Returns the mask as [B, H, Sq, Sk] (rank 2: [Sq, Sk], rank 3: [B, Sq, Sk],
    rank 4: [B|1, H|1, Sq|1, Sk|1])."""
    mask = np.asarray(mask)
    if mask.ndim == 2:
        mask = mask[None, None, :, :]
    elif mask.ndim == 3:
        mask = mask[:, None, :, :]
    elif mask.ndim != 4:
        raise ValueError("mask must have rank 2, 3 or 4")
    return np.broadcast_to(mask, (b, h, sq, sk))


def attention(q, k, v, mask=None, scale=None, causal=False,
              causal_offset=None, softcap=None, window_left=None,
              window_right=None, key_lengths=None):
    """Scaled dot-product attention on head-split arrays.

    q [B, H, Sq, dk], k [B, Hkv, Sk, dk], v [B, Hkv, Sk, dv] -> [B, H, Sq, dv].
    Query head h reads kv head h // (H // Hkv). Scores s = (q . k) * scale
    (default 1/sqrt(dk)); with softcap c > 0, s = c * tanh(s / c), before any
    mask. A float mask is then added to the scores; a bool mask is True
    where attention is allowed.

    Query i of batch b sees key j iff every condition given holds, with the
    diagonal D_b = causal_offset (+ key_lengths[b] when key lengths are
    given) or, without causal_offset, key_lengths[b] - Sq (key lengths
    given) or Sk - Sq (bottom-right aligned):
      key_lengths [B] (ints): j < key_lengths[b] (the rows of k and v past
        a length take no part, even when they hold NaN);
      causal: j <= i + D_b;
      window_left WL >= 0: j >= i + D_b - WL;
      window_right WR >= 0: j <= i + D_b + WR.
    A row with no visible key gives zeros.
    """
    q = np.asarray(q, np.float64)
    k = np.asarray(k, np.float64)
    v = np.asarray(v, np.float64)
    b, h, sq, dk = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    assert h % hkv == 0
    group = h // hkv
    if scale is None:
        scale = 1.0 / np.sqrt(dk)
    # Expand kv heads by indexing (a copy here is fine: this is a reference).
    kv_index = np.arange(h) // group
    kh = k[:, kv_index]
    vh = v[:, kv_index]
    scores = np.einsum("bhid,bhjd->bhij", q, kh) * scale
    if softcap is not None:
        c = float(softcap)
        assert c > 0, "softcap must be > 0"
        scores = c * np.tanh(scores / c)
    visible = np.ones((b, h, sq, sk), dtype=bool)
    if mask is not None:
        m = _broadcast_mask(mask, b, h, sq, sk)
        if m.dtype == np.bool_:
            visible &= m
        else:
            scores = scores + m.astype(np.float64)
    i = np.arange(sq)[None, :, None]  # [1, Sq, 1]
    j = np.arange(sk)[None, None, :]  # [1, 1, Sk]
    if key_lengths is not None:
        lengths = np.asarray(key_lengths, np.int64).reshape(-1)
        assert lengths.shape == (b,), "key_lengths must have shape [B]"
        lengths = lengths[:, None, None]  # [B, 1, 1]
        visible &= (j < lengths)[:, None]
        # Keys past a length are not part of the attention, whatever their
        # rows hold (a static cache past its length: NaN included).
        vh = np.where((j < lengths)[..., None], vh, 0.0)  # [B, 1, Sk, 1]
        diagonal = (lengths + causal_offset if causal_offset is not None
                    else lengths - sq)
    else:
        diagonal = np.full((1, 1, 1), sk - sq if causal_offset is None
                           else causal_offset, dtype=np.int64)
    # [B|1, 1, Sq, Sk] conditions on j relative to i + D_b.
    relative = (j - i - diagonal)[:, None]
    if causal:
        visible &= relative <= 0
    if window_left is not None:
        assert window_left >= 0, "window_left must be >= 0"
        visible &= relative >= -int(window_left)
    if window_right is not None:
        assert window_right >= 0, "window_right must be >= 0"
        visible &= relative <= int(window_right)
    scores = np.where(visible, scores, -np.inf)
    # initial=-inf: a row with no key at all (Sk = 0) sees no key.
    row_max = scores.max(axis=-1, keepdims=True, initial=-np.inf)
    empty = ~np.isfinite(row_max) & (row_max < 0)
    safe_max = np.where(empty, 0.0, row_max)
    p = np.where(empty, 0.0, np.exp(scores - safe_max))
    denom = p.sum(axis=-1, keepdims=True)
    p = np.divide(p, denom, out=np.zeros_like(p), where=denom > 0)
    return np.einsum("bhij,bhjd->bhid", p, vh)


def _rotate(*args, **kwargs):
    """rotary(), under a name multi_head_attention's argument does not
    hide."""
    return rotary(*args, **kwargs)


def multi_head_attention(query, key, value, w_q, w_k, w_v, w_o, biases=None,
                         mask=None, num_heads=1, num_kv_heads=None, scale=None,
                         causal=False, softcap=None, window_left=None,
                         window_right=None, key_lengths=None, kv_cache=None,
                         rotary=None):
    """The whole layer: [B, Sq, Eq] x ... -> [B, Sq, Eo] (weights [in, out]).

    The projected heads go through attention() with the same mask, scale,
    causal, softcap, window_left, window_right and key_lengths (the layer
    has no causal_offset: its diagonal is the default one).

    rotary=(cos, sin, interleaved): the projected q and k heads rotated by
    rotary(), token s at position offset[b] + s (offset: the cache lengths,
    else 0). kv_cache=(k_cache, v_cache, lengths): caches [B, Hkv, Smax, d]
    holding lengths[b] positions; the step's k and v heads are written at
    lengths[b] (rounded by `store`, the caches' element type, if given as
    kv_cache's fourth item) and the attention reads the caches with key
    lengths lengths + Sk. Returns (out, k_cache', v_cache') then."""
    f = lambda a: np.asarray(a, np.float64)
    query, key, value = f(query), f(key), f(value)
    w_q, w_k, w_v, w_o = f(w_q), f(w_k), f(w_v), f(w_o)
    h = num_heads
    hkv = num_kv_heads or num_heads
    dk = w_q.shape[1] // h
    dv = w_v.shape[1] // hkv
    qp, kp, vp = query @ w_q, key @ w_k, value @ w_v
    if biases is not None:
        b_q, b_k, b_v, b_o = (f(x) for x in biases)
        qp, kp, vp = qp + b_q, kp + b_k, vp + b_v
    b, sq, sk = query.shape[0], query.shape[1], key.shape[1]
    split = lambda x, heads, d: x.reshape(b, -1, heads, d).transpose(0, 2, 1, 3)
    qh, kh, vh = split(qp, h, dk), split(kp, hkv, dk), split(vp, hkv, dv)
    offsets = np.zeros(b, np.int64)
    if kv_cache is not None:
        offsets = np.asarray(kv_cache[2], np.int64)
    if rotary is not None:
        cos, sin, interleaved = rotary
        qh, kh = (_rotate(x, cos, sin, offsets, interleaved=interleaved)
                  for x in (qh, kh))
    caches = None
    if kv_cache is not None:
        store = kv_cache[3] if len(kv_cache) > 3 else (lambda x: x)
        caches = []
        for cache, new in ((kv_cache[0], kh), (kv_cache[1], vh)):
            cache = np.array(cache, copy=True)
            for i, n in enumerate(offsets):
                cache[i, :, n:n + sk] = store(new[i])
            caches.append(cache)
        kh, vh = caches
        key_lengths = offsets + sk
    heads = attention(qh, kh, vh, mask=mask, scale=scale, causal=causal,
                      softcap=softcap, window_left=window_left,
                      window_right=window_right, key_lengths=key_lengths)
    merged = heads.transpose(0, 2, 1, 3).reshape(b, sq, h * dv)
    out = merged @ w_o
    if biases is not None:
        out = out + b_o
    return out if caches is None else (out, *caches)


def rotary(x, cos, sin, positions, interleaved=False):
    """Rotary position embeddings of x [B, H, S, d] (mha.rotary).

    cos, sin [P, R/2]; positions [B] (token s of batch b at positions[b] + s)
    or [B, S]. Pair i of channels, (i, i + R/2) or with interleaved
    (2i, 2i + 1), is rotated by the angle of row p of the tables:
    (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin); channels R.. are kept.
    """
    x = np.asarray(x, np.float64)
    b, _, s, _ = x.shape
    half = cos.shape[1]
    positions = np.asarray(positions, np.int64)
    if positions.ndim == 1:
        positions = positions[:, None] + np.arange(s)[None, :]
    c = np.asarray(cos, np.float64)[positions][:, None]  # [B, 1, S, R/2]
    n = np.asarray(sin, np.float64)[positions][:, None]
    first = np.arange(half) * 2 if interleaved else np.arange(half)
    second = first + 1 if interleaved else first + half
    out = x.copy()
    x1, x2 = x[..., first], x[..., second]
    out[..., first] = x1 * c - x2 * n
    out[..., second] = x2 * c + x1 * n
    return out
