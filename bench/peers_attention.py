"""The attention case of bench/peers.py: scaled dot-product attention in torch SDPA's backends
(cuDNN, flash, memory-efficient: "sdpa-cudnn", "sdpa-flash", "sdpa-efficient") and in a
flash-attention forward kernel written here in Triton ("triton").

Sizes: BxHxSxD (Sq = Skv = S) or BxHxSqxSkvxD, then optional flags: c for causal (Sq = Skv
only), gN for N key/value heads (grouped-query attention: H a multiple of N, SDPA's enable_gqa).
    4x16x4096x128c     B 4, H 16, S 4096, D 128, causal
    8x32x1x8192x128g8  decode: one query a head against 8192 keys, 32 query heads over 8 K/V heads
q is [B, H, Sq, D], k and v [B, Hkv, Skv, D], the output like q, all contiguous; the scale is
1/sqrt(D). FLOPs: 4 B H Sq Skv D (the two products), half of it when causal. Bytes: q, k, v
and the output once each (for a decode shape, about the K/V read). Rows: case attention or
attention_causal, shape [B, H, Hkv, Sq, Skv, D].

Reference: float64 for small shapes, float32 on the GPU (TF32 off) past GPU_REFERENCE_MIN_MACS,
one slab of heads at a time so that the scores stay under 1 GiB.
"""
from __future__ import annotations

import contextlib
import math
import re
import warnings
from typing import NamedTuple

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None
try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

from peers_gpu import GPU_REFERENCE_MIN_MACS, no_tf32

IMPL_NAMES = {"sdpa-cudnn": "torch sdpa cudnn", "sdpa-flash": "torch sdpa flash",
              "sdpa-efficient": "torch sdpa mem-efficient"}
SDPA_BACKENDS = {"sdpa-cudnn": "CUDNN_ATTENTION", "sdpa-flash": "FLASH_ATTENTION",
                 "sdpa-efficient": "EFFICIENT_ATTENTION"}
ROW_CASES = ("attention", "attention_causal")
LOG2E = 1.4426950408889634
SCORES_PER_SLAB = 2**28  # scores (f32) the reference holds at once: 1 GiB


class AttentionShape(NamedTuple):
    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    head_dim: int
    causal: bool


_SIZE = re.compile(r"^(\d+(?:x\d+){3,4})((?:c|g\d+)*)$")


def parse_size(token):
    """'4x16x4096x128c' -> [AttentionShape(4, 16, 16, 4096, 4096, 128, True)]; SystemExit when malformed."""
    text = token.strip().lower()
    match = _SIZE.match(text)
    if not match:
        raise SystemExit(f"peers.py: attention size '{token}' is none of BxHxSxD, BxHxSqxSkvxD, optionally "
                         f"followed by c (causal) and gN (N K/V heads)")
    dims = [int(d) for d in match.group(1).split("x")]
    b, h, sq, skv, d = (dims[0], dims[1], dims[2], dims[2], dims[3]) if len(dims) == 4 else dims
    flags = re.findall(r"c|g\d+", match.group(2))
    groups = [int(f[1:]) for f in flags if f.startswith("g")]
    kv = groups[-1] if groups else h
    causal = "c" in flags
    if min(b, h, sq, skv, d, kv) <= 0:
        raise SystemExit(f"peers.py: attention size '{token}': every dimension must be positive")
    if h % kv:
        raise SystemExit(f"peers.py: attention size '{token}': {h} heads do not split into {kv} K/V groups")
    if causal and sq != skv:
        raise SystemExit(f"peers.py: attention size '{token}': causal needs as many queries as keys")
    return [AttentionShape(b, h, kv, sq, skv, d, causal)]


def shape_text(shape):
    """The --sizes token of a shape (the inverse of parse_size)."""
    b, h, kv, sq, skv, d, causal = shape
    dims = f"{b}x{h}x{sq}x{d}" if sq == skv else f"{b}x{h}x{sq}x{skv}x{d}"
    return dims + ("c" if causal else "") + (f"g{kv}" if kv != h else "")


def row_case(shape):
    return "attention_causal" if shape.causal else "attention"


def row_shape(shape):
    return [shape.batch, shape.heads, shape.kv_heads, shape.q_len, shape.kv_len, shape.head_dim]


def attention_inputs(b, h, kv, sq, skv, d, causal):
    return [("q", (b, h, sq, d)), ("k", (b, kv, skv, d)), ("v", (b, kv, skv, d))]


def attention_flops(b, h, kv, sq, skv, d, causal):
    """Q K^T and P V, 2 B H Sq Skv D each; causal counts half (the masked half is not work)."""
    flops = 4 * b * h * sq * skv * d
    return flops // 2 if causal else flops


def attention_bytes(b, h, kv, sq, skv, d, causal, es):
    """q and the output, k and v, once each."""
    return (2 * b * h * sq * d + 2 * b * kv * skv * d) * es


def attention_written(b, h, kv, sq, skv, d, causal, es):
    return b * h * sq * d * es


def reference_numpy(q, k, v, causal):
    """Attention in float64 with NumPy: head h of q against K/V head h // (H / Hkv)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def reference_torch(shape, inputs, dtype=None):
    """[output in float64]: on the inputs' device, float32 with TF32 off past GPU_REFERENCE_MIN_MACS
    on a GPU, else float64; a slab of heads of one batch entry at a time."""
    q, k, v = inputs
    b, h, kv, sq, skv, d, causal = shape
    wide = torch.float32 if q.is_cuda and 2 * b * h * sq * skv * d > GPU_REFERENCE_MIN_MACS else torch.float64
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    step = max(1, min(h, SCORES_PER_SLAB // (sq * skv)))
    group = h // kv
    masked = torch.ones(sq, skv, dtype=torch.bool, device=q.device).tril().logical_not() if causal else None
    with no_tf32() if q.is_cuda else contextlib.nullcontext():
        for bi in range(b):
            for h0 in range(0, h, step):
                heads = torch.arange(h0, min(h, h0 + step), device=q.device)
                qh = q[bi, h0:h0 + step].to(wide)
                kh = k[bi].index_select(0, heads // group).to(wide)
                vh = v[bi].index_select(0, heads // group).to(wide)
                scores = qh @ kh.transpose(-1, -2) / math.sqrt(d)
                if masked is not None:
                    scores.masked_fill_(masked, -math.inf)
                out[bi, h0:h0 + step] = (torch.softmax(scores, dim=-1) @ vh).double()
    return [out]


# ---------------------------------------------------------------------------
# torch SDPA, one backend at a time.

def _first_line(message, limit=200):
    line = (str(message).strip().splitlines() or [""])[0]
    return line if len(line) <= limit else line[:limit] + "..."


def build_sdpa(impl):
    """The builder of one SDPA backend: a backend that cannot run the shape raises, with the reason
    SDPA gives in its warnings."""
    backend_name = SDPA_BACKENDS[impl]

    def build(shape, inputs, dtype):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backend = getattr(SDPBackend, backend_name)
        q, k, v = inputs
        gqa = {"enable_gqa": True} if shape.kv_heads != shape.heads else {}
        holder = {}

        def run():
            with sdpa_kernel([backend]):
                holder["outs"] = (F.scaled_dot_product_attention(q, k, v, is_causal=shape.causal, **gqa),)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run()
            except RuntimeError as e:
                why = "; ".join(_first_line(w.message) for w in caught[:3])
                raise RuntimeError(f"{_first_line(e)} {why}".strip()) from None
        config = f"F.scaled_dot_product_attention in sdpa_kernel(SDPBackend.{backend_name})" + (
            ", enable_gqa" if gqa else "")
        return run, holder, config, "events"

    return build


# ---------------------------------------------------------------------------
# Flash-attention forward in Triton. Program (query tile, batch x K/V head, key split): a
# K/V head's query rows are the rows of its group's heads one after another (Sq each), so
# the heads of a group share every K/V tile the program loads; online softmax in base 2;
# the key range is cut into splits when there are too few query tiles to fill the GPU
# (decode), each split writing its normalised output and log-sum-exp for a combine kernel.

if triton is not None:

    @triton.jit
    def _attend(q, k_base, v_base, m_i, l_i, acc, pos, start, end, key_end, qk_scale,
                D: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
        # Keys [start, end) in tiles of BLOCK_N; MASKED tiles test key < key_end (and causality).
        dims = tl.arange(0, D)
        for first in range(start, end, BLOCK_N):
            keys = first + tl.arange(0, BLOCK_N)
            k_at = k_base + keys[None, :].to(tl.int64) * D + dims[:, None]  # K^T tile [D, BLOCK_N]
            v_at = v_base + keys[:, None].to(tl.int64) * D + dims[None, :]
            if MASKED:
                key_ok = keys < key_end
                kt = tl.load(k_at, mask=key_ok[None, :], other=0.0)
                vt = tl.load(v_at, mask=key_ok[:, None], other=0.0)
            else:
                kt = tl.load(k_at)
                vt = tl.load(v_at)
            s = tl.dot(q, kt) * qk_scale
            if MASKED:
                keep = key_ok[None, :]
                if CAUSAL:
                    keep = keep & (keys[None, :] <= pos[:, None])
                s = tl.where(keep, s, -float("inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            shift = tl.where(m_new == -float("inf"), 0.0, m_new)  # a row with no key yet keeps its zeros
            alpha = tl.exp2(m_i - shift)
            p = tl.exp2(s - shift[:, None])
            l_i = l_i * alpha + tl.sum(p, axis=1)
            acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt)
            m_i = m_new
        return m_i, l_i, acc

    @triton.jit
    def _attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, part_o_ptr, part_lse_ptr, rows, sq, skv, heads, kv_heads,
                          n_rows, keys_per_split, qk_scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, SPLIT: tl.constexpr):
        tile = tl.program_id(0)
        if CAUSAL:  # the tiles of the last positions have the most keys: start them first
            tile = tl.num_programs(0) - 1 - tile
        bh = tl.program_id(1)
        b = bh // kv_heads
        hkv = bh % kv_heads
        r = tile * BLOCK_M + tl.arange(0, BLOCK_M)
        row_ok = r < rows
        head = hkv * (heads // kv_heads) + r // sq
        pos = r % sq
        dims = tl.arange(0, D)
        q_row = ((b * heads + head).to(tl.int64) * sq + pos) * D  # also the output's row
        q = tl.load(q_ptr + q_row[:, None] + dims[None, :], mask=row_ok[:, None], other=0.0)
        kv_base = (b * kv_heads + hkv).to(tl.int64) * skv * D
        lo = tl.program_id(2) * keys_per_split
        hi = tl.minimum(skv, lo + keys_per_split)
        unmasked_hi = hi
        if CAUSAL:  # keys past the tile's last position are never seen; below its first, never masked
            hi = tl.minimum(hi, tl.max(tl.where(row_ok, pos, 0), axis=0) + 1)
            unmasked_hi = tl.minimum(hi, tl.min(tl.where(row_ok, pos, skv), axis=0) + 1)
        full_hi = lo + tl.maximum(unmasked_hi - lo, 0) // BLOCK_N * BLOCK_N
        m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, D], tl.float32)
        m_i, l_i, acc = _attend(q, k_ptr + kv_base, v_ptr + kv_base, m_i, l_i, acc, pos, lo, full_hi, hi, qk_scale,
                                D, BLOCK_N, False, CAUSAL)
        m_i, l_i, acc = _attend(q, k_ptr + kv_base, v_ptr + kv_base, m_i, l_i, acc, pos, full_hi, hi, hi, qk_scale,
                                D, BLOCK_N, True, CAUSAL)
        out = acc / l_i[:, None]
        if SPLIT:
            part = tl.program_id(2).to(tl.int64) * n_rows + (b * heads + head).to(tl.int64) * sq + pos
            tl.store(part_o_ptr + part[:, None] * D + dims[None, :], out, mask=row_ok[:, None])
            tl.store(part_lse_ptr + part, m_i + tl.log2(l_i), mask=row_ok)
        else:
            tl.store(o_ptr + q_row[:, None] + dims[None, :], out.to(o_ptr.dtype.element_ty), mask=row_ok[:, None])

    @triton.jit
    def _attention_combine_kernel(part_o_ptr, part_lse_ptr, o_ptr, n_rows, splits, D: tl.constexpr,
                                  SPLITS: tl.constexpr):
        # One program a query row: each split's output weighted by its share of the row's exp sum.
        row = tl.program_id(0).to(tl.int64)
        split = tl.arange(0, SPLITS)
        ok = split < splits
        at = split.to(tl.int64) * n_rows + row
        lse = tl.load(part_lse_ptr + at, mask=ok, other=-float("inf"))
        weight = tl.exp2(lse - tl.max(lse, axis=0))
        weight = weight / tl.sum(weight, axis=0)
        dims = tl.arange(0, D)
        parts = tl.load(part_o_ptr + at[:, None] * D + dims[None, :], mask=ok[:, None], other=0.0)
        tl.store(o_ptr + row * D + dims, tl.sum(parts * weight[:, None], axis=0).to(o_ptr.dtype.element_ty))

    _ATTENTION_CONFIGS = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)
        for bm, bn, warps, stages in ((128, 64, 8, 3), (128, 128, 8, 2), (128, 64, 4, 3), (64, 64, 4, 3),
                                      (64, 128, 4, 2))
    ]
    # Configs that do not fit (shared memory) are dropped by the autotuner when it times them.
    _attention_tuned = triton.autotune(configs=_ATTENTION_CONFIGS, key=["rows", "skv", "D", "CAUSAL"])(
        _attention_kernel)


DECODE_MAX_ROWS = 64  # a K/V head with this many query rows or fewer runs the decode schedule


def _next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def decode_plan(rows, programs, kv_len, block_n, sms):
    """(splits, keys per split) for a decode launch of `programs` programs: enough splits of the key
    range for about four programs an SM, each split at least four key tiles long, none empty."""
    splits = max(1, min(math.ceil(4 * sms / programs), math.ceil(kv_len / (4 * block_n))))
    keys_per_split = math.ceil(math.ceil(kv_len / splits) / block_n) * block_n
    return math.ceil(kv_len / keys_per_split), keys_per_split


def triton_attention(q, k, v, out, causal, block=None):
    """(launch, config) of the Triton kernel for contiguous q [B, H, Sq, D], k, v [B, Hkv, Skv, D].
    block = (BLOCK_M, BLOCK_N) pins the tiles of a prefill launch instead of autotuning them (the
    interpreter, which runs the kernels on the CPU in the tests, has no autotuner)."""
    b, h, sq, d = q.shape
    kv, skv = k.shape[1], k.shape[2]
    if d not in (16, 32, 64, 128, 256):
        raise RuntimeError(f"the Triton kernel takes head dims 16 to 256, powers of two; not {d}")
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise RuntimeError("the Triton kernel takes contiguous q, k and v")
    rows = (h // kv) * sq
    n_rows = b * h * sq
    qk_scale = LOG2E / math.sqrt(d)
    if rows <= DECODE_MAX_ROWS and not causal:
        block_m, block_n = max(16, _next_pow2(rows)), 64
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 132
        programs = triton.cdiv(rows, block_m) * b * kv
        splits, keys_per_split = decode_plan(rows, programs, skv, block_n, sms)
        grid = (triton.cdiv(rows, block_m), b * kv, splits)
        if splits == 1:
            def launch():
                _attention_kernel[grid](q, k, v, out, out, out, rows, sq, skv, h, kv, n_rows, skv, qk_scale, D=d,
                                        BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=False, SPLIT=False, num_warps=4,
                                        num_stages=3)
        else:
            part_o = torch.empty((splits, n_rows, d), dtype=torch.float32, device=q.device)
            part_lse = torch.empty((splits, n_rows), dtype=torch.float32, device=q.device)

            def launch():
                _attention_kernel[grid](q, k, v, out, part_o, part_lse, rows, sq, skv, h, kv, n_rows, keys_per_split,
                                        qk_scale, D=d, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=False, SPLIT=True,
                                        num_warps=4, num_stages=3)
                _attention_combine_kernel[(n_rows,)](part_o, part_lse, out, n_rows, splits, D=d,
                                                     SPLITS=max(2, _next_pow2(splits)), num_warps=4)
        config = (f"decode: block_m={block_m} ({rows} query rows a K/V head) block_n={block_n}, {splits} key "
                  f"split(s) of {keys_per_split}" + (" + a combine kernel" if splits > 1 else ""))
        return launch, config

    if block is not None:
        grid = (triton.cdiv(rows, block[0]), b * kv, 1)

        def launch():
            _attention_kernel[grid](q, k, v, out, out, out, rows, sq, skv, h, kv, n_rows, skv, qk_scale, D=d,
                                    BLOCK_M=block[0], BLOCK_N=block[1], CAUSAL=causal, SPLIT=False)

        return launch, f"block_m={block[0]} block_n={block[1]}"

    grid = lambda meta: (triton.cdiv(rows, meta["BLOCK_M"]), b * kv, 1)  # noqa: E731

    def launch():
        _attention_tuned[grid](q, k, v, out, out, out, rows, sq, skv, h, kv, n_rows, skv, qk_scale, D=d,
                               CAUSAL=causal, SPLIT=False)

    def config():  # known once the autotuner has run
        best = getattr(_attention_tuned, "best_config", None)
        return (f"tl.dot, online softmax (exp2), @triton.autotune over {len(_ATTENTION_CONFIGS)} configs"
                + (f", chosen {best}" if best is not None else "") + (", causal tiles longest first" if causal else ""))

    return launch, config


def build_triton(shape, inputs, dtype):
    if triton is None:
        raise RuntimeError("triton is not installed")
    q, k, v = inputs
    out = torch.empty_like(q)
    launch, config = triton_attention(q, k, v, out, shape.causal)
    return launch, (out,), config, "events"


DEFAULT_SHAPES = tuple(s for token in ("4x16x4096x128", "4x16x4096x128c", "4x16x2048x64c", "4x16x4097x128",
                                       "8x32x1x8192x128", "8x32x1x8192x128g8") for s in parse_size(token))

# The fields of peers.py's Case for this case.
CASE = dict(
    name="attention", dtypes=("f16", "bf16"), default_shapes=DEFAULT_SHAPES, inputs=attention_inputs,
    outputs=("o",), min_bytes=attention_bytes, reference=None, eager=None, triton=None, flops=attention_flops,
    impls=("sdpa-cudnn", "sdpa-flash", "sdpa-efficient", "triton"), written_bytes=attention_written,
    kiln_case=False, parse_size=parse_size, gpu_reference=reference_torch,
    builders={**{impl: build_sdpa(impl) for impl in SDPA_BACKENDS}, "triton": build_triton},
    row_case=row_case, row_shape=row_shape, shape_text=shape_text)
