#!/usr/bin/env python3
"""Kiln's benchmark cases in PyTorch eager, torch.compile, Triton and XLA, on the GPU machine.

When Kiln's Python module imports (build/python, or $KILN_PYTHON_DIR), Kiln runs in the
same process too ("kiln" in --impls): the case's graph compiled by kiln.compile and
called on the same torch tensors, timed the same way.

Runs the same cases and sizes as `kiln bench`, checks every implementation against a
float64 computation on the same inputs (large matrix products: float32 on the GPU, TF32
off), times each (median, warm-up, L2 flushed), measures the stream ceilings (copy,
read-only, write-only) and, for cases that count FLOPs, the GEMM rate in the same run and
writes the result JSON that `kiln bench --peers F` merges into its table.

    bench/peers.py [--cases softmax,add_rmsnorm] [--sizes 4096,1024x8192] [--json F]
                   [--impls eager,compile,compile-graph,autotune,triton,xla] [--dtypes f16]
    bench/peers.py --cases gemm --sizes 4096x4096x4096,16x8192x8192
    bench/peers.py --cases attention --sizes 4x16x4096x128,4x16x4096x128c,8x32x1x8192x128g8
    bench/peers.py --cases quant --sizes 1x8192x8192w4g128,16x8192x8192w8
    bench/peers.py --check DIR [--case NAME]

Sizes: a row length C (R = 2^27 / C) or RxC for the memory-bound cases, MxNxK or BxMxNxK
for the GEMM cases; with no case named, each size runs in the cases that take its form.
The GEMM cases also run torch.compile with mode="max-autotune" ("autotune").

Implementations (--impls; default: every one a case has): eager, compile (torch.compile),
compile-graph (the same compiled function timed in a CUDA graph of 20 calls at every size,
as `kiln bench` times launches under 50 us), autotune, triton, xla (jax.jit on the same
tensors through DLPack, timed by the wall clock over back-to-back calls: JAX runs on its own
stream), kiln and kiln-graph (Kiln timed in a CUDA graph at every size, beside compile-graph).

Cases of peers only, run when named (`kiln bench` has no such case yet): attention (torch
SDPA's cuDNN, flash and memory-efficient backends, a flash-attention kernel in Triton;
bench/peers_attention.py) and quant (weight-only int4 / int8 products: cuBLAS on the
dequantised weight, torch's int4 kernel, torch.compile of dequantise + linear;
bench/peers_quant.py) and gemm_fp8 (torch._scaled_mm with and without fast accumulation;
bench/peers_fp8.py).

Ceilings: a row of a memory-bound case also gets ceiling_gbs, the stream ceiling of its own
mix of R bytes read and W written: the seconds a byte takes, interpolated linearly in
W / (R + W) between the read-only stream (0), the copy (1/2) and the write-only stream (1),
as `kiln bench` places its rows (runtime/stream_ceilings.h); pct_ceiling is its share of that.

--check reads what `kiln run FILE --save DIR` wrote (inputs and Kiln's outputs as .npy,
manifest.json), recomputes the case in float64 (PyTorch when present, else NumPy) and
reports Kiln's relative L2 and max abs error per output; exit status 1 above the bound.

At run time: numpy and torch (+ triton, jax on the GPU); --check needs numpy only.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Callable

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --check and the case math work without torch
    torch = None
try:  # Kiln's Python module, when built: an optional implementation
    sys.path.insert(0, os.environ.get("KILN_PYTHON_DIR") or
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "python"))
    import kiln
except ImportError:
    kiln = None
try:
    import triton
    import triton.language as tl
    import triton.testing
except ImportError:
    triton = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the modules next to this file
import peers_attention  # noqa: E402
import peers_fp8  # noqa: E402
import peers_quant  # noqa: E402
import peers_xla  # noqa: E402
from peers_gpu import (GPU_REFERENCE_MIN_MACS, GRAPH_CALLS, TORCH_DTYPE, check_outputs, measure_copy_gbs,  # noqa: E402
                       WALL_REPS, measure_gemm_tflops, measure_read_gbs, measure_write_gbs, random_input,
                       time_in_graph_ms, time_ms, time_wall_ms)

ELEMENTS = 2**27  # the row-reduction cases move 2^27 elements: R = 2^27 / C
REDUCE_BATCH = 8  # the middle- and multi-axis reduction cases reduce x of shape [8, R, C]
SOFTMAX_COLS = (128, 512, 1024, 4096, 16384, 32768, 65536, 262144)
NORM_COLS = (1024, 4096, 8192, 16384)
DECODE_ROW = (1, 4096)  # one token's row ahead of the large sizes, as `kiln bench` has it
COL_MEAN_SHAPES = ((65536, 256), (50000, 1024), (1024, 32768))  # tall matrices and a wide one
# GEMM cases: square products, one whose sizes are no multiple of 8, and M = 16 against
# an 8192 x 8192 weight (memory-bound), as in runtime/bench_cases.cpp.
GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4093, 4099, 4097), (16, 8192, 8192))
GEMM_BATCHED_SHAPES = ((32, 1024, 1024, 1024),)
GEMM_BIAS_GELU_SHAPES = ((4096, 4096, 4096),)
ELEMENT_SIZE = {"f16": 2, "bf16": 2, "f32": 4, "f8e4m3": 1}
ERROR_BOUND = {"f16": 1e-2, "bf16": 1e-2, "f32": 1e-5, "f8e4m3": 1e-2}  # fp8 products: their bf16 output's
IMPL_NAMES = {"eager": "torch eager", "compile": "torch.compile", "compile-graph": "torch.compile (CUDA graph)",
              "autotune": "torch.compile max-autotune", "triton": "triton", "xla": "jax.jit (XLA)",
              "kiln": "kiln (python)", "kiln-graph": "kiln (python, CUDA graph)", **peers_attention.IMPL_NAMES,
              **peers_quant.IMPL_NAMES, **peers_fp8.IMPL_NAMES}
KILN_IMPLS = ("kiln", "kiln-graph")  # Kiln's own rows, for the cases `kiln bench` has
RMS_EPS = 1e-6
LN_EPS = 1e-5
GELU_K = math.sqrt(2.0 / math.pi)


# ---------------------------------------------------------------------------
# Float64 reference math, written once for NumPy and PyTorch through a small shim.

class NumpyOps:
    """Array operations of the reference on NumPy float64 arrays."""
    name = "numpy"
    exp, tanh, sqrt = staticmethod(np.exp), staticmethod(np.tanh), staticmethod(np.sqrt)

    @staticmethod
    def row_max(a, axis):
        return a.max(axis=axis, keepdims=True)

    @staticmethod
    def row_sum(a, axis, keepdim=True):
        return a.sum(axis=axis, keepdims=keepdim)

    @staticmethod
    def round_to(a, dtype):
        """Round to a storage dtype and back, as the case's definition demands."""
        if dtype == "f16":
            return a.astype(np.float16).astype(np.float64)
        if dtype == "f32":
            return a.astype(np.float32).astype(np.float64)
        return a  # bf16 has no NumPy type; left unrounded

    @staticmethod
    def as_float64(a):
        return np.asarray(a, dtype=np.float64)

    @staticmethod
    def matmul(a, b):
        return np.matmul(a, b)


class TorchOps:
    """The same operations on torch float64 tensors (CPU or GPU)."""
    name = "torch"

    @staticmethod
    def exp(a):
        return torch.exp(a)

    @staticmethod
    def tanh(a):
        return torch.tanh(a)

    @staticmethod
    def sqrt(a):
        return torch.sqrt(a)

    @staticmethod
    def row_max(a, axis):
        return a.amax(dim=axis, keepdim=True)

    @staticmethod
    def row_sum(a, axis, keepdim=True):
        return a.sum(dim=axis, keepdim=keepdim)

    @staticmethod
    def round_to(a, dtype):
        kinds = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
        return a.to(kinds[dtype]).double()

    @staticmethod
    def as_float64(a):
        return torch.as_tensor(a).double()

    @staticmethod
    def matmul(a, b):
        """a @ b in float64; a large product on the GPU in float32 with TF32 off instead
        (float64 would take the CPU minutes; fp32 accumulation errs ~1e-6, far inside the bound)."""
        macs = a.shape[-2] * a.shape[-1] * b.shape[-1] * max(1, math.prod(a.shape[:-2]), math.prod(b.shape[:-2]))
        if not (a.is_cuda and macs > GPU_REFERENCE_MIN_MACS):
            return torch.matmul(a, b)
        backends = torch.backends.cuda.matmul
        saved = backends.allow_tf32
        backends.allow_tf32 = False
        try:
            return torch.matmul(a.float(), b.float()).double()
        finally:
            backends.allow_tf32 = saved


def ref_swiglu(ops, g, u, dtype):
    return [g / (1.0 + ops.exp(-g)) * u]


def ref_mul_add(ops, a, b, c, dtype):
    return [a * b + c]


def ref_softmax(ops, x, dtype):
    e = ops.exp(x - ops.row_max(x, -1))
    return [e / ops.row_sum(e, -1)]


def ref_add_rmsnorm(ops, x, r, w, dtype):
    h = x + r
    hr = ops.round_to(h, dtype)  # the case rounds h to its dtype before the norm
    y = hr / ops.sqrt(ops.row_sum(hr * hr, -1) / hr.shape[-1] + RMS_EPS) * w
    return [y, h]


def ref_layer_norm(ops, x, w, b, dtype):
    n = x.shape[-1]
    centered = x - ops.row_sum(x, -1) / n
    var = ops.row_sum(centered * centered, -1) / n  # biased
    return [centered / ops.sqrt(var + LN_EPS) * w + b]


def ref_gelu_chain(ops, x, r, s, b, dtype):
    v = x * s + b
    return [0.5 * v * (1.0 + ops.tanh(GELU_K * (v + 0.044715 * v * v * v))) + r]


def ref_gemm(ops, a, b, dtype):
    return [ops.matmul(a, b)]


def ref_gemm_bias_gelu(ops, a, b, bias, dtype):
    v = ops.matmul(a, b) + bias
    return [0.5 * v * (1.0 + ops.tanh(GELU_K * (v + 0.044715 * v * v * v)))]


def ref_row_sum(ops, x, dtype):
    return [ops.row_sum(x, 1, keepdim=False)]


def ref_col_sum(ops, x, dtype):
    return [ops.row_sum(x, 0, keepdim=False)]


def ref_col_mean(ops, x, dtype):
    return [ops.row_sum(x, 0, keepdim=False) / x.shape[0]]


def ref_middle_axis_sum(ops, x, dtype):
    return [ops.row_sum(x, 1, keepdim=False)]


def ref_multi_axis_sum(ops, x, dtype):
    return [ops.row_sum(ops.row_sum(x, 2, keepdim=False), 0, keepdim=False)]


# ---------------------------------------------------------------------------
# PyTorch eager versions (also what torch.compile compiles).

def eager_swiglu(g, u):
    return (F.silu(g) * u,)


def eager_mul_add(a, b, c):
    return (a * b + c,)


def eager_softmax(x):
    return (torch.softmax(x, dim=-1),)


def eager_add_rmsnorm(x, r, w):
    h = x + r
    return (F.rms_norm(h, (h.shape[-1],), w, eps=RMS_EPS), h)


def eager_layer_norm(x, w, b):
    return (F.layer_norm(x, (x.shape[-1],), w, b, eps=LN_EPS),)


def eager_gelu_chain(x, r, s, b):
    return (F.gelu(x * s + b, approximate="tanh") + r,)


def eager_gemm(a, b):
    return (a @ b,)


def eager_gemm_bias_gelu(a, b, bias):
    return (F.gelu(a @ b + bias, approximate="tanh"),)


def eager_row_sum(x):
    return (x.sum(dim=1),)


def eager_col_sum(x):
    return (x.sum(dim=0),)


def eager_col_mean(x):
    return (x.mean(dim=0),)


def eager_middle_axis_sum(x):
    return (x.sum(dim=1),)


def eager_multi_axis_sum(x):
    return (x.sum(dim=(0, 2)),)


# ---------------------------------------------------------------------------
# XLA versions: xp is jax.numpy under jax.jit (NumPy in the CPU tests); float32 inside,
# the storage dtype outside, as the Triton kernels compute.

def xla_swiglu(xp, g, u):
    gf = g.astype(xp.float32)
    return ((gf / (1.0 + xp.exp(-gf)) * u.astype(xp.float32)).astype(g.dtype),)


def xla_mul_add(xp, a, b, c):
    y = a.astype(xp.float32) * b.astype(xp.float32) + c.astype(xp.float32)
    return (y.astype(a.dtype),)


def xla_softmax(xp, x):
    xf = x.astype(xp.float32)
    e = xp.exp(xf - xf.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)).astype(x.dtype),)


def xla_add_rmsnorm(xp, x, r, w):
    h = x + r  # rounded to the storage dtype, as the case says
    hf = h.astype(xp.float32)
    y = hf / xp.sqrt((hf * hf).mean(axis=-1, keepdims=True) + RMS_EPS) * w.astype(xp.float32)
    return (y.astype(x.dtype), h)


def xla_layer_norm(xp, x, w, b):
    xf = x.astype(xp.float32)
    centered = xf - xf.mean(axis=-1, keepdims=True)
    var = (centered * centered).mean(axis=-1, keepdims=True)
    y = centered / xp.sqrt(var + LN_EPS) * w.astype(xp.float32) + b.astype(xp.float32)
    return (y.astype(x.dtype),)


def xla_gelu_chain(xp, x, r, s, b):
    v = x.astype(xp.float32) * s.astype(xp.float32) + b.astype(xp.float32)
    y = 0.5 * v * (1.0 + xp.tanh(GELU_K * (v + 0.044715 * v * v * v))) + r.astype(xp.float32)
    return (y.astype(x.dtype),)


def xla_row_sum(xp, x):
    return (x.sum(axis=1),)


def xla_col_sum(xp, x):
    return (x.sum(axis=0),)


def xla_col_mean(xp, x):
    return (x.mean(axis=0),)


def xla_middle_axis_sum(xp, x):
    return (x.sum(axis=1),)


def xla_multi_axis_sum(xp, x):
    return (x.sum(axis=(0, 2)),)


# ---------------------------------------------------------------------------
# Triton kernels, one per case (fp32 arithmetic inside, storage dtype outside).

if triton is not None:

    @triton.jit
    def _softmax_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK_C: tl.constexpr):
        # ROWS whole rows per program, each kept in registers: one read, one write.
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_C)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=1)[:, None])
        y = e * (1.0 / tl.sum(e, axis=1))[:, None]
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _softmax_long_kernel(x_ptr, y_ptr, n_cols, BLOCK_C: tl.constexpr):
        # Rows too long for registers: an online max/sum pass, then a normalising pass.
        base = tl.program_id(0).to(tl.int64) * n_cols
        m = tl.full([BLOCK_C], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK_C], tl.float32)
        for start in range(0, n_cols, BLOCK_C):
            cols = start + tl.arange(0, BLOCK_C)
            x = tl.load(x_ptr + base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            empty = m_new == -float("inf")
            s = tl.where(empty, 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
            m = m_new
        row_max = tl.max(m, axis=0)
        inv_sum = 1.0 / tl.sum(s * tl.exp(m - row_max), axis=0)
        for start in range(0, n_cols, BLOCK_C):
            cols = start + tl.arange(0, BLOCK_C)
            x = tl.load(x_ptr + base + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            y = tl.exp(x - row_max) * inv_sum
            tl.store(y_ptr + base + cols, y.to(y_ptr.dtype.element_ty), mask=cols < n_cols)

    @triton.jit
    def _add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, n_rows, n_cols, eps,
                            ROWS: tl.constexpr, BLOCK_C: tl.constexpr):
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_C)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        h = tl.load(x_ptr + offs, mask=mask, other=0.0) + tl.load(r_ptr + offs, mask=mask, other=0.0)
        tl.store(h_ptr + offs, h, mask=mask)  # h is rounded to the storage dtype, as the case says
        hf = h.to(tl.float32)
        inv_rms = tl.rsqrt(tl.sum(hf * hf, axis=1) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        y = hf * inv_rms[:, None] * w[None, :]
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, eps,
                           ROWS: tl.constexpr, BLOCK_C: tl.constexpr):
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_C)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=1) / n_cols
        centered = tl.where(mask, x - mean[:, None], 0.0)
        inv_std = tl.rsqrt(tl.sum(centered * centered, axis=1) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        y = centered * inv_std[:, None] * w[None, :] + b[None, :]
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _gelu_chain_kernel(x_ptr, r_ptr, s_ptr, b_ptr, y_ptr, n_cols, BLOCK_C: tl.constexpr):
        # Grid (rows, column blocks): s and b are indexed by column without a division.
        cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
        mask = cols < n_cols
        offs = tl.program_id(0).to(tl.int64) * n_cols + cols
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        s = tl.load(s_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        v = x * s + b
        # 0.5 * (1 + tanh(u)) == sigmoid(2u), with u = sqrt(2/pi) * (v + 0.044715 v^3)
        u = 0.7978845608028654 * (v + 0.044715 * v * v * v)
        y = v * tl.sigmoid(2.0 * u) + r
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _row_sum_kernel(x_ptr, y_ptr, n_cols, BLOCK_C: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * n_cols
        acc = tl.zeros([BLOCK_C], tl.float32)
        for start in range(0, n_cols, BLOCK_C):
            cols = start + tl.arange(0, BLOCK_C)
            acc += tl.load(x_ptr + base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        tl.store(y_ptr + tl.program_id(0), tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))

    @triton.jit
    def _col_sum_kernel(x_ptr, y_ptr, n_rows, n_cols, rows_per_split,
                        BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
        # Grid (column blocks, row splits): each program sums a slab of rows and adds
        # its partial column sums atomically into y (zeroed first).
        cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
        row_begin = tl.program_id(1) * rows_per_split
        acc = tl.zeros([BLOCK_R, BLOCK_C], tl.float32)
        for start in range(row_begin, row_begin + rows_per_split, BLOCK_R):
            rows = start + tl.arange(0, BLOCK_R)
            mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
            offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
            acc += tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.atomic_add(y_ptr + cols, tl.sum(acc, axis=0), mask=cols < n_cols)

    # A few tile shapes for the GEMM cases (square products, the ragged one, M = 16);
    # the autotuner times each once per (M, N, K, batch) and keeps the fastest.
    _GEMM_CONFIGS = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=stages, num_warps=warps)
        for bm, bn, bk, stages, warps in ((128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4),
                                          (64, 128, 64, 4, 4), (16, 128, 128, 4, 4), (16, 64, 256, 3, 4))
    ]

    @triton.autotune(configs=_GEMM_CONFIGS, key=["M", "N", "K", "BATCH"])
    @triton.jit
    def _gemm_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, BATCH, stride_ab, stride_am, stride_ak,
                     stride_bb, stride_bk, stride_bn, stride_cb, stride_cm, stride_cn, BIAS_GELU: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        # Grid (output tiles, batch). GROUP_M consecutive row tiles sweep the column tiles
        # together, so the B columns they share are read from L2 rather than memory.
        pid = tl.program_id(0)
        batch = tl.program_id(1).to(tl.int64)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        group = pid // (GROUP_M * tiles_n)
        first_m = group * GROUP_M
        group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
        in_group = pid % (GROUP_M * tiles_n)
        tile_m = first_m + in_group % group_rows
        tile_n = in_group // group_rows
        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        ks = tl.arange(0, BLOCK_K)
        a_at = a_ptr + batch * stride_ab + rows[:, None].to(tl.int64) * stride_am + ks[None, :] * stride_ak
        b_at = b_ptr + batch * stride_bb + ks[:, None].to(tl.int64) * stride_bk + cols[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            a = tl.load(a_at, mask=(rows[:, None] < M) & (ks[None, :] < K - k0), other=0.0)
            b = tl.load(b_at, mask=(ks[:, None] < K - k0) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)  # fp32 accumulation on the Tensor Cores
            a_at += BLOCK_K * stride_ak
            b_at += BLOCK_K * stride_bk
        if BIAS_GELU:  # the fused epilogue: bias, then the tanh GELU, before the one store
            v = acc + tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
            acc = v * tl.sigmoid(1.5957691216057308 * (v + 0.044715 * v * v * v))  # 0.5 (1 + tanh u) = sigmoid(2u)
        c_at = c_ptr + batch * stride_cb + rows[:, None].to(tl.int64) * stride_cm + cols[None, :] * stride_cn
        tl.store(c_at, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def _next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def _row_block(n_cols):
    """Rows per program, columns per block and warps for the whole-row kernels."""
    block_c = _next_pow2(n_cols)
    rows = max(1, 4096 // block_c)  # short rows: several per program
    warps = min(32, max(4, rows * block_c // 1024))
    return rows, block_c, warps


def triton_softmax(x):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    if _next_pow2(n_cols) <= 32768:
        rows, block_c, warps = _row_block(n_cols)
        grid = (triton.cdiv(n_rows, rows),)
        run = lambda: _softmax_rows_kernel[grid](x, y, n_rows, n_cols, ROWS=rows, BLOCK_C=block_c, num_warps=warps)
        config = f"rows={rows} block_c={block_c} warps={warps}, row in registers"
    else:
        block_c, warps = 8192, 16
        run = lambda: _softmax_long_kernel[(n_rows,)](x, y, n_cols, BLOCK_C=block_c, num_warps=warps)
        config = f"block_c={block_c} warps={warps}, online max/sum then normalise (two reads)"
    return run, (y,), config


def triton_add_rmsnorm(x, r, w):
    n_rows, n_cols = x.shape
    y, h = torch.empty_like(x), torch.empty_like(x)
    rows, block_c, warps = _row_block(n_cols)
    grid = (triton.cdiv(n_rows, rows),)
    run = lambda: _add_rmsnorm_kernel[grid](x, r, w, y, h, n_rows, n_cols, RMS_EPS, ROWS=rows, BLOCK_C=block_c,
                                            num_warps=warps)
    return run, (y, h), f"rows={rows} block_c={block_c} warps={warps}"


def triton_layer_norm(x, w, b):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rows, block_c, warps = _row_block(n_cols)
    grid = (triton.cdiv(n_rows, rows),)
    run = lambda: _layer_norm_kernel[grid](x, w, b, y, n_rows, n_cols, LN_EPS, ROWS=rows, BLOCK_C=block_c,
                                           num_warps=warps)
    return run, (y,), f"rows={rows} block_c={block_c} warps={warps}"


def triton_gelu_chain(x, r, s, b):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    block_c, warps = min(2048, _next_pow2(n_cols)), 4
    grid = (n_rows, triton.cdiv(n_cols, block_c))
    run = lambda: _gelu_chain_kernel[grid](x, r, s, b, y, n_cols, BLOCK_C=block_c, num_warps=warps)
    return run, (y,), f"block_c={block_c} warps={warps}"


def triton_row_sum(x):
    n_rows, n_cols = x.shape
    y = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    block_c, warps = min(4096, _next_pow2(n_cols)), 8
    run = lambda: _row_sum_kernel[(n_rows,)](x, y, n_cols, BLOCK_C=block_c, num_warps=warps)
    return run, (y,), f"block_c={block_c} warps={warps}, one row per program"


def triton_col_sum(x):
    n_rows, n_cols = x.shape
    y = torch.empty(n_cols, dtype=torch.float32, device=x.device)
    block_r, block_c, splits = 32, 128, min(32, triton.cdiv(n_rows, 32))
    rows_per_split = triton.cdiv(triton.cdiv(n_rows, splits), block_r) * block_r
    grid = (triton.cdiv(n_cols, block_c), triton.cdiv(n_rows, rows_per_split))

    def run():
        y.zero_()
        _col_sum_kernel[grid](x, y, n_rows, n_cols, rows_per_split, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4)

    return run, (y,), f"block_r={block_r} block_c={block_c} splits={grid[1]}, atomic adds (+ zeroing y)"


def _triton_gemm(a, b, bias):
    """a [B.., M, K] @ b [B.., K, N] (+ bias, GELU when bias is given) with _gemm_kernel."""
    batched = a.dim() == 3
    a3, b3 = (a, b) if batched else (a.unsqueeze(0), b.unsqueeze(0))
    n_batch, M, K = a3.shape
    N = b3.shape[-1]
    c3 = torch.empty((n_batch, M, N), dtype=a.dtype, device=a.device)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), n_batch)  # noqa: E731
    fused = bias is not None

    def run():
        _gemm_kernel[grid](a3, b3, c3, bias if fused else c3, M, N, K, n_batch, *a3.stride(), *b3.stride(),
                           *c3.stride(), BIAS_GELU=fused)

    def config():  # known once the autotuner has run
        best = getattr(_gemm_kernel, "best_config", None)
        chosen = f", chosen {best}" if best is not None else ""
        return f"tl.dot, @triton.autotune over {len(_GEMM_CONFIGS)} configs{chosen}" + (
            ", fused bias + GELU" if fused else "")

    return run, (c3 if batched else c3[0],), config


def triton_gemm(a, b):
    return _triton_gemm(a, b, None)


def triton_gemm_bias_gelu(a, b, bias):
    return _triton_gemm(a, b, bias)


# ---------------------------------------------------------------------------
# The case table: kept in step with `kiln bench`.

GEMM_IMPLS = ("eager", "compile", "compile-graph", "autotune", "triton")
ROW_IMPLS = ("eager", "compile", "compile-graph", "triton", "xla")


def _rows_for(cols):
    return [(ELEMENTS // c, c) for c in cols]


def _gemm_inputs(*shape, bias=False):
    """[(name, shape)] of a GEMM case for (M, N, K) or (B, M, N, K)."""
    *batch, M, N, K = shape
    inputs = [("a", (*batch, M, K)), ("b", (*batch, K, N))]
    return inputs + [("bias", (N,))] if bias else inputs


def _gemm_bytes(*shape_and_es, bias=False):
    *batch, M, N, K, es = shape_and_es
    B = math.prod(batch)
    return (B * (M * K + K * N + M * N) + (N if bias else 0)) * es


def _gemm_written(*shape_and_es):
    *batch, M, N, K, es = shape_and_es
    return math.prod(batch) * M * N * es


def _gemm_flops(*shape):
    *batch, M, N, K = shape
    return 2 * math.prod(batch) * M * N * K  # the epilogue counts as none


@dataclass(frozen=True)
class Case:
    name: str
    dtypes: tuple
    default_shapes: tuple  # ((R, C), ...) or, for GEMM cases, ((M, N, K) or (B, M, N, K), ...)
    inputs: Callable  # (*shape) -> [(name, shape)]
    outputs: tuple
    min_bytes: Callable  # (*shape, element size) -> bytes moved at least
    reference: Callable  # (ops, *inputs as float64, dtype) -> [outputs as float64]
    eager: Callable
    triton: Callable
    flops: Callable = lambda *shape: 0  # (*shape) -> flops; 0 for the memory-bound cases
    gemm: bool = False  # takes (M, N, K) or (B, M, N, K) sizes rather than (R, C)
    impls: tuple = ROW_IMPLS  # which of IMPL_NAMES it runs
    written_bytes: Callable | None = None  # (*shape, element size) -> the part of min_bytes written
    xla: Callable | None = None  # (array module, *inputs) -> outputs: the case in jax.numpy
    # Cases of peers only (attention, quant) set the fields below; their shapes are named tuples.
    kiln_case: bool = True  # one of `kiln bench`'s: runs when no case is named, as "kiln", in --check
    parse_size: Callable | None = None  # --sizes token -> [shapes] (SystemExit when not of its form)
    make_inputs: Callable | None = None  # (shape, dtype, gen) -> tensors, when not random floats per inputs()
    gpu_reference: Callable | None = None  # (shape, inputs, dtype) -> outputs in float64, instead of reference
    builders: dict | None = None  # impl -> (shape, inputs, dtype) -> (run, outputs, config, timer)
    row_case: Callable | None = None  # shape -> the case its rows name (attention_causal)
    row_shape: Callable | None = None  # shape -> the row's shape, a list of ints
    shape_text: Callable | None = None  # shape -> the shape as --sizes writes it
    baseline: str | None = None  # the impl each row's vs_baseline (its ms / the row's) compares to

    def takes(self, shape):
        return len(shape) in ((3, 4) if self.gemm else (2,))

    def text(self, shape):
        return self.shape_text(shape) if self.shape_text else "x".join(str(d) for d in shape)


CASES = {c.name: c for c in [
    # Two and three inputs read for each output; no Triton kernel of their own.
    Case("swiglu", ("bf16", "f32"), ((16384, 8192), (1, 4096)),
         lambda R, C: [("g", (R, C)), ("u", (R, C))], ("y",),
         lambda R, C, es: 3 * R * C * es, ref_swiglu, eager_swiglu, None,
         impls=("eager", "compile", "compile-graph", "xla"),
         written_bytes=lambda R, C, es: R * C * es, xla=xla_swiglu),
    Case("mul_add", ("bf16",), ((16384, 8192), (16, 4096)),
         lambda R, C: [("a", (R, C)), ("b", (R, C)), ("c", (R, C))], ("y",),
         lambda R, C, es: 4 * R * C * es, ref_mul_add, eager_mul_add, None,
         impls=("eager", "compile", "compile-graph", "xla"),
         written_bytes=lambda R, C, es: R * C * es, xla=xla_mul_add),
    Case("gelu_chain", ("f16", "f32"), ((8192, 8192),),
         lambda R, C: [("x", (R, C)), ("r", (R, C)), ("s", (C,)), ("b", (C,))], ("y",),
         lambda R, C, es: (3 * R * C + 2 * C) * es, ref_gelu_chain, eager_gelu_chain, triton_gelu_chain,
         written_bytes=lambda R, C, es: R * C * es, xla=xla_gelu_chain),
    Case("softmax", ("f16",), (DECODE_ROW, *_rows_for(SOFTMAX_COLS)),
         lambda R, C: [("x", (R, C))], ("y",),
         lambda R, C, es: 2 * R * C * es, ref_softmax, eager_softmax, triton_softmax,
         written_bytes=lambda R, C, es: R * C * es, xla=xla_softmax),
    Case("add_rmsnorm", ("f16",), (DECODE_ROW, *_rows_for(NORM_COLS)),
         lambda R, C: [("x", (R, C)), ("r", (R, C)), ("w", (C,))], ("y", "h"),
         lambda R, C, es: (4 * R * C + C) * es, ref_add_rmsnorm, eager_add_rmsnorm, triton_add_rmsnorm,
         written_bytes=lambda R, C, es: 2 * R * C * es, xla=xla_add_rmsnorm),
    Case("layer_norm", ("f16",), (DECODE_ROW, *_rows_for(NORM_COLS)),
         lambda R, C: [("x", (R, C)), ("w", (C,)), ("b", (C,))], ("y",),
         lambda R, C, es: (2 * R * C + 2 * C) * es, ref_layer_norm, eager_layer_norm, triton_layer_norm,
         written_bytes=lambda R, C, es: R * C * es, xla=xla_layer_norm),
    Case("row_sum", ("f32",), ((16384, 16384),),
         lambda R, C: [("x", (R, C))], ("y",),
         lambda R, C, es: (R * C + R) * es, ref_row_sum, eager_row_sum, triton_row_sum,
         written_bytes=lambda R, C, es: R * es, xla=xla_row_sum),
    Case("col_sum", ("f32",), ((16384, 16384),),
         lambda R, C: [("x", (R, C))], ("y",),
         lambda R, C, es: (R * C + C) * es, ref_col_sum, eager_col_sum, triton_col_sum,
         written_bytes=lambda R, C, es: C * es, xla=xla_col_sum),
    Case("col_mean", ("f32",), COL_MEAN_SHAPES,
         lambda R, C: [("x", (R, C))], ("y",),
         lambda R, C, es: (R * C + C) * es, ref_col_mean, eager_col_mean, None,
         impls=("eager", "compile", "compile-graph", "xla"),
         written_bytes=lambda R, C, es: C * es, xla=xla_col_mean),
    # x is [8, R, C] (REDUCE_BATCH), as in runtime/bench_cases.cpp; no Triton kernel of their own.
    Case("middle_axis_sum", ("f32",), ((4096, 1024), (16384, 1024)),
         lambda R, C: [("x", (REDUCE_BATCH, R, C))], ("y",),
         lambda R, C, es: REDUCE_BATCH * (R * C + C) * es, ref_middle_axis_sum, eager_middle_axis_sum, None,
         impls=("eager", "compile", "compile-graph", "xla"),
         written_bytes=lambda R, C, es: REDUCE_BATCH * C * es, xla=xla_middle_axis_sum),
    Case("multi_axis_sum", ("f32",), ((4096, 1024),),
         lambda R, C: [("x", (REDUCE_BATCH, R, C))], ("y",),
         lambda R, C, es: (REDUCE_BATCH * R * C + R) * es, ref_multi_axis_sum, eager_multi_axis_sum, None,
         impls=("eager", "compile", "compile-graph", "xla"),
         written_bytes=lambda R, C, es: R * es, xla=xla_multi_axis_sum),
    Case("gemm", ("f16", "bf16"), GEMM_SHAPES, _gemm_inputs, ("c",), _gemm_bytes, ref_gemm, eager_gemm,
         triton_gemm, _gemm_flops, gemm=True, impls=GEMM_IMPLS, written_bytes=_gemm_written),
    Case("gemm_batched", ("f16",), GEMM_BATCHED_SHAPES, _gemm_inputs, ("c",), _gemm_bytes, ref_gemm, eager_gemm,
         triton_gemm, _gemm_flops, gemm=True, impls=GEMM_IMPLS, written_bytes=_gemm_written),
    Case("gemm_bias_gelu", ("f16",), GEMM_BIAS_GELU_SHAPES, lambda *s: _gemm_inputs(*s, bias=True), ("y",),
         lambda *s: _gemm_bytes(*s, bias=True), ref_gemm_bias_gelu, eager_gemm_bias_gelu, triton_gemm_bias_gelu,
         _gemm_flops, gemm=True, impls=GEMM_IMPLS, written_bytes=_gemm_written),
    Case(**peers_attention.CASE),  # the cases of peers only, from the modules next to this file
    Case(**peers_quant.CASE),
    Case(**peers_fp8.CASE),
]}
KILN_CASES = [name for name, c in CASES.items() if c.kiln_case]


def parse_sizes(text):
    """'4096,1024x8192,16x8192x8192' -> [(2^27/4096, 4096), (1024, 8192), (16, 8192, 8192)]:
    a bare C means R = 2^27 / C; MxNxK and BxMxNxK are GEMM sizes."""
    shapes = []
    for token in filter(None, (t.strip() for t in text.split(","))):
        try:
            dims = tuple(int(d) for d in token.lower().split("x"))
        except ValueError:
            dims = ()
        if len(dims) == 1 and dims[0] > 0:
            shapes.append((max(1, ELEMENTS // dims[0]), dims[0]))
        elif 2 <= len(dims) <= 4 and all(d > 0 for d in dims):
            shapes.append(dims)
        else:
            raise SystemExit(f"peers.py: --sizes: '{token}' is none of C, RxC, MxNxK, BxMxNxK (positive integers)")
    return shapes


def shapes_for(case, sizes, named):
    """The shapes `case` runs: its defaults, or the --sizes of its form. A case named with
    --cases and given a size of the other form is an error; otherwise such sizes are skipped."""
    if not sizes:
        return list(case.default_shapes)
    wrong = [s for s in sizes if not case.takes(s)]
    if wrong and named:
        form = "MxNxK or BxMxNxK" if case.gemm else "C or RxC"
        raise SystemExit(f"peers.py: case {case.name} takes sizes {form}, not {'x'.join(map(str, wrong[0]))}")
    return [s for s in sizes if case.takes(s)]


def case_shapes(case, text, named):
    """The shapes `case` runs for the --sizes text (None: its defaults). A case with a size form
    of its own (attention, quant) parses each token itself; the others go through shapes_for."""
    if not text:
        return list(case.default_shapes)
    if case.parse_size is None:
        return shapes_for(case, parse_sizes(text), named)
    return [shape for token in text.split(",") if token.strip() for shape in case.parse_size(token.strip())]


def case_for_function(function_name):
    """The case a graph benchmarks, from its function name: softmax_f16_128 -> softmax."""
    matches = [n for n in KILN_CASES if function_name == n or function_name.startswith(n + "_")]
    return max(matches, key=len) if matches else None


# ---------------------------------------------------------------------------
# Errors and the result file.

def relative_l2(out, ref):
    """||out - ref|| / ||ref|| in float64 (NumPy arrays); inf when out holds NaN or inf."""
    out = np.asarray(out, dtype=np.float64).reshape(-1)
    ref = np.asarray(ref, dtype=np.float64).reshape(-1)
    if out.shape != ref.shape or not np.all(np.isfinite(out)):
        return math.inf
    denom = np.linalg.norm(ref)
    diff = np.linalg.norm(out - ref)
    return float(diff / denom) if denom > 0 else float(diff)


def max_abs_error(out, ref):
    out = np.asarray(out, dtype=np.float64).reshape(-1)
    ref = np.asarray(ref, dtype=np.float64).reshape(-1)
    if out.shape != ref.shape:
        return math.inf
    return float(np.max(np.abs(out - ref))) if out.size else 0.0


ROW_KEYS = ("case", "dtype", "shape", "impl", "median_ms", "bytes", "flops", "gb_s", "tflop_s", "pct_roofline",
            "config", "check")


def error_bound(dtype, k=0):
    """The rel-L2 bound of an output (ir/compare.h's matmul_rel_l2_bound): the dtype's, and
    for f32 products one that grows like sqrt(K) past K = 4096."""
    bound = ERROR_BOUND[dtype]
    return bound * max(1.0, math.sqrt(k / 4096.0)) if dtype == "f32" else bound


def past_ridge(nbytes, flops, copy_gbs, gemm_tflops):
    """Whether a row sits under the compute roof rather than the bandwidth slope: its
    intensity (flop/B) times the copy bandwidth above the GEMM rate."""
    intensity = flops / nbytes if nbytes > 0 else 0.0
    return gemm_tflops > 0 and copy_gbs * intensity / 1e3 > gemm_tflops


def roofline_percent(gb_s, tflop_s, nbytes, flops, copy_gbs, gemm_tflops):
    """% of the roofline as `kiln bench` places a row: of the GEMM rate past the ridge
    (copy bandwidth x flop/B above the rate), else of the copy bandwidth."""
    if past_ridge(nbytes, flops, copy_gbs, gemm_tflops):
        return 100.0 * tflop_s / gemm_tflops
    return 100.0 * gb_s / copy_gbs if copy_gbs > 0 else 0.0


CEILING_MODEL = ("1 / t, t the seconds per byte interpolated linearly in W / (R + W) between 1 / read_gbs (0), "
                 "1 / copy_gbs (1/2) and 1 / write_gbs (1)")


def ceiling_gbs(read_bytes, written_bytes, read_gbs, write_gbs, copy_gbs):
    """The stream ceiling, in GB/s of R + W, of a kernel that reads R bytes and writes W: the time
    a byte takes, interpolated linearly in the share written between the read-only stream (none
    written), the copy (half) and the write-only stream (all). A copy is placed under the copy
    measured; each byte costing its own stream's time alone, (R + W) / (R / read + W / write),
    puts the copy above what a copy measures (turning the bus between reads and writes costs
    time of its own). 0 when a ceiling the mix needs is not known."""
    if read_bytes < 0 or written_bytes < 0 or read_bytes + written_bytes == 0:
        return 0.0
    share = written_bytes / (read_bytes + written_bytes)
    if share <= 0.5:
        if read_gbs <= 0 or (share > 0 and copy_gbs <= 0):
            return 0.0
        start, end, along = 1.0 / read_gbs, (1.0 / copy_gbs if share > 0 else 1.0 / read_gbs), share / 0.5
    else:
        if write_gbs <= 0 or (share < 1 and copy_gbs <= 0):
            return 0.0
        start, end, along = (1.0 / copy_gbs if share < 1 else 1.0 / write_gbs), 1.0 / write_gbs, (share - 0.5) / 0.5
    return 1.0 / (start + along * (end - start))


def streams_alone_copy_gbs(read_gbs, write_gbs):
    """Where a copy would lie if each byte cost only its own stream's time: 2 / (1 / read + 1 / write)."""
    return 2.0 / (1.0 / read_gbs + 1.0 / write_gbs) if read_gbs > 0 and write_gbs > 0 else 0.0


def make_row(case, dtype, shape, impl, median_ms, nbytes, copy_gbs, config, check, flops=0, gemm_tflops=0.0,
             written_bytes=None, roof=None):
    """A result row. With the bytes written and the measured ceilings (roof: copy_gbs, read_gbs,
    write_gbs), a row under the bandwidth slope also gets ceiling_gbs and pct_ceiling."""
    seconds = median_ms * 1e-3
    gb_s = nbytes / seconds / 1e9 if median_ms > 0 else 0.0
    tflop_s = flops / seconds / 1e12 if median_ms > 0 else 0.0
    row = {"case": case, "dtype": dtype, "shape": list(shape), "impl": impl, "median_ms": float(median_ms),
           "bytes": int(nbytes), "flops": int(flops), "gb_s": gb_s, "tflop_s": tflop_s,
           "pct_roofline": roofline_percent(gb_s, tflop_s, nbytes, flops, copy_gbs, gemm_tflops),
           "config": config, "check": check}
    if written_bytes is not None and roof and not past_ridge(nbytes, flops, copy_gbs, gemm_tflops):
        ceiling = ceiling_gbs(nbytes - written_bytes, written_bytes, roof.get("read_gbs", 0.0),
                              roof.get("write_gbs", 0.0), roof.get("copy_gbs", 0.0))
        if ceiling > 0:
            row["written_bytes"] = int(written_bytes)
            row["ceiling_gbs"] = ceiling
            row["pct_ceiling"] = 100.0 * gb_s / ceiling
    return row


def make_roof(copy_gbs, read_gbs=0.0, write_gbs=0.0, read_source="", write_source=""):
    """The result's `roof`: the stream ceilings measured in the run and the model that combines them."""
    return {"copy_gbs": float(copy_gbs), "read_gbs": float(read_gbs), "write_gbs": float(write_gbs),
            "read_source": read_source, "write_source": write_source,
            "model": f"ceiling_gbs = {CEILING_MODEL}, R and W the row's bytes read and written",
            "streams_alone_copy_gbs": streams_alone_copy_gbs(read_gbs, write_gbs)}


def make_result(gpu, copy_gbs, rows, errors=(), date=None, gemm_tflops=0.0, gemm_source="", roof=None):
    result = {"tool": "peers.py", "gpu": gpu, "date": date or datetime.date.today().isoformat(),
              "copy_gbs": float(copy_gbs), "rows": list(rows), "errors": list(errors)}
    if gemm_tflops > 0 or gemm_source:
        result["gemm_tflops"] = float(gemm_tflops)
        result["gemm_source"] = gemm_source
    if roof:
        result["roof"] = dict(roof)
    return result


def row_shape_dims(case):
    """The lengths a row's shape may have: [B, H, Hkv, Sq, Skv, D] for attention, [M, N, K] for
    quant, else [R, C], [M, N, K] or [B, M, N, K]."""
    if case in peers_attention.ROW_CASES:
        return (6,)
    if case.startswith(peers_quant.ROW_PREFIX):
        return (3,)
    return (2, 3, 4)


def validate_result(result):
    """Raises ValueError when a result dict does not follow the shared schema."""
    for key, kind in (("tool", str), ("gpu", str), ("date", str), ("copy_gbs", (int, float)), ("rows", list)):
        if not isinstance(result.get(key), kind):
            raise ValueError(f"result: '{key}' missing or not a {kind}")
    datetime.date.fromisoformat(result["date"])
    if "roof" in result:
        for key in ("copy_gbs", "read_gbs", "write_gbs"):
            if not isinstance(result["roof"].get(key), (int, float)):
                raise ValueError(f"result: roof.{key} missing or not a number")
    for i, row in enumerate(result["rows"]):
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            raise ValueError(f"result row {i}: missing {', '.join(missing)}")
        if row["check"] not in ("passed", "failed", "skipped"):
            raise ValueError(f"result row {i}: check is '{row['check']}'")
        if len(row["shape"]) not in row_shape_dims(row["case"]) or not all(isinstance(d, int) for d in row["shape"]):
            raise ValueError(f"result row {i}: shape {row['shape']} of case {row['case']} is not one of "
                             f"{row_shape_dims(row['case'])} integers")
        for key in ("ceiling_gbs", "pct_ceiling", "vs_baseline"):
            if key in row and not isinstance(row[key], (int, float)):
                raise ValueError(f"result row {i}: {key} is not a number")


# ---------------------------------------------------------------------------
# The GPU run (the timers, ceilings and the output check are in bench/peers_gpu.py).

def make_compiled(eager_fn, mode="default"):
    compiled = torch.compile(eager_fn, dynamic=False, mode=mode)
    return lambda *args: compiled(*args)


def in_program_order(specs, names, tensors):
    """The tensors (named `names`) in the order of a program's specs: by name when every spec's name is
    among them, else as given."""
    by_name = dict(zip(names, tensors))
    return [by_name[s.name] for s in specs] if all(s.name in by_name for s in specs) else list(tensors)


def build_kiln(case, dtype, shape, inputs):
    """Kiln through its Python module: the `kiln bench` graph of the case, run in place on torch tensors."""
    if kiln is None:
        raise RuntimeError("Kiln's Python module is not built (build/python) or does not import")
    program = kiln.compile(kiln.bench_graph(case.name, dtype, "x".join(str(d) for d in shape)))
    ordered_inputs = in_program_order(program.inputs, [n for n, _ in case.inputs(*shape)], inputs)
    outs = [torch.empty(s.shape, dtype=TORCH_DTYPE[s.dtype], device="cuda") for s in program.outputs]
    out_of = {s.name: t for s, t in zip(program.outputs, outs)}
    case_outs = [out_of[n] for n in case.outputs] if all(n in out_of for n in case.outputs) else outs
    config = "; ".join(f"{k['name']} {k['config']}" for k in program.kernels)
    return (lambda: program(*ordered_inputs, out=outs)), {"outs": case_outs}, config


TIMERS = {"events": time_ms, "graph": time_in_graph_ms}  # what a case module's builder may name


def build_xla(case, inputs):
    """jax.jit of the case's XLA version on the same tensors (DLPack), timed by the wall clock."""
    if case.xla is None:
        raise RuntimeError(f"no XLA version of {case.name}")
    launch, wait, outputs, version = peers_xla.build(case.xla, inputs)
    holder, calls = {}, {}
    run = lambda: holder.__setitem__("outs", outputs())

    def timer(_run):
        ms, calls["n"] = time_wall_ms(launch, wait)
        return ms

    def config():  # known once timed
        return (f"jax {version} jax.jit, inputs through DLPack; wall clock over {calls.get('n')} back-to-back "
                f"calls + block_until_ready, median of {WALL_REPS} (JAX runs on its own stream)")

    return run, holder, config, timer


def build_impl(impl, case, inputs, dtype=None, shape=None):
    """(run, outputs-or-None, config, timer): run() launches the work; outputs are read after one run;
    timer(run) -> median ms."""
    if case.builders and impl in case.builders:
        run, outs, config, timer = case.builders[impl](shape, inputs, dtype)
        return run, {"outs": outs} if not isinstance(outs, dict) else outs, config, TIMERS.get(timer, timer)
    if impl == "kiln":
        return (*build_kiln(case, dtype, shape, inputs), time_ms)
    if impl == "kiln-graph":  # as compile-graph times torch.compile: a CUDA graph of 20 calls at every size
        run, outs, config = build_kiln(case, dtype, shape, inputs)
        return run, outs, f"{config}; timed in a CUDA graph of {GRAPH_CALLS} calls", time_in_graph_ms
    if impl == "eager":
        holder = {}
        run = lambda: holder.__setitem__("outs", case.eager(*inputs))
        return run, holder, "", time_ms
    if impl in ("compile", "compile-graph", "autotune"):
        mode = "max-autotune" if impl == "autotune" else "default"
        fn = make_compiled(case.eager, mode)
        holder = {}
        run = lambda: holder.__setitem__("outs", fn(*inputs))
        run()  # the first call compiles (and, for max-autotune, tunes): excluded from the timing
        if impl == "compile-graph":  # every size in a graph, as `kiln bench` times its launches under 50 us
            return run, holder, f"torch.compile mode={mode}, timed in a CUDA graph of {GRAPH_CALLS} calls", \
                time_in_graph_ms
        return run, holder, f"torch.compile mode={mode}", time_ms
    if impl == "triton":
        if triton is None:
            raise RuntimeError("triton is not installed")
        launch, outs, config = case.triton(*inputs)
        return launch, {"outs": outs}, config, time_ms
    if impl == "xla":
        return build_xla(case, inputs)
    raise ValueError(f"unknown implementation '{impl}'")


def print_header():
    print(f"{'case':<17}{'dtype':<6}{'shape':<20}{'impl':<28}{'ms':>9}{'GB/s':>8}{'TFLOP/s':>9}{'%roof':>7}"
          f"{'%ceil':>7}  {'check':<8}{'rel L2':>9}  config", flush=True)


def print_row(row, err, shape_text=None):
    shape = shape_text or "x".join(str(d) for d in row["shape"])
    ms = row["median_ms"]
    ceiling = f"{row['pct_ceiling']:>7.1f}" if "pct_ceiling" in row else f"{'-':>7}"
    config = row["config"]
    if "vs_baseline" in row:
        config = f"speed {row['vs_baseline']:.2f}x {row['baseline']}'s; {config}"
    print(f"{row['case']:<17}{row['dtype']:<6}{shape:<20}{row['impl']:<28}{ms:>9.{4 if ms >= 0.1 else 5}f}"
          f"{row['gb_s']:>8.0f}{row['tflop_s']:>9.1f}{row['pct_roofline']:>7.1f}{ceiling}  {row['check']:<8}"
          f"{err:>9.2e}  {config}", flush=True)


def case_impls(case, impls):
    """The implementations one case runs: its own (all of them when impls is None), "kiln" for
    `kiln bench`'s cases; the baseline first, so that every other row can be compared to it."""
    if impls is None:  # by default, leave out what does not import here
        impls = [i for i in (*case.impls, *KILN_IMPLS) if not (i in KILN_IMPLS and kiln is None)
                 and not (i == "xla" and not peers_xla.available())]
    chosen = [i for i in impls if i in case.impls or (i in KILN_IMPLS and case.kiln_case)]
    if case.baseline in chosen:
        chosen.remove(case.baseline)
        chosen.insert(0, case.baseline)
    return chosen


def bench_one(case, dtype, shape, impls, roof, gen, rows, errors):
    """Every implementation of one case, dtype and shape; roof: copy_gbs, read_gbs, write_gbs, gemm_tflops."""
    copy_gbs, gemm_tflops = roof["copy_gbs"], roof.get("gemm_tflops", 0.0)
    es = ELEMENT_SIZE[dtype]
    if case.make_inputs:
        inputs = case.make_inputs(shape, dtype, gen)
    else:
        inputs = [random_input(s, dtype, gen) for _, s in case.inputs(*shape)]
    if case.gpu_reference:
        refs = case.gpu_reference(shape, inputs, dtype)
    else:
        refs = case.reference(TorchOps, *[t.double() for t in inputs], dtype)
    nbytes = case.min_bytes(*shape, es)
    written = case.written_bytes(*shape, es) if case.written_bytes else None
    bound = error_bound(dtype, shape[-1] if case.gemm else 0)
    row_case = case.row_case(shape) if case.row_case else case.name
    row_shape = case.row_shape(shape) if case.row_shape else shape
    shape_text = case.text(shape)
    baseline_ms = None
    for impl in case_impls(case, impls):
        name = IMPL_NAMES[impl]
        try:
            run, holder, config, timer = build_impl(impl, case, inputs, dtype, shape)
            run()
            torch.cuda.synchronize()
            err = check_outputs(holder["outs"], refs, dtype)
            check = "passed" if err <= bound else "failed"
            ms = timer(run)
            config = config() if callable(config) else config
        except Exception as e:  # one failing peer must not stop the others
            first_line = (str(e).strip().splitlines() or [""])[0]
            message = f"{type(e).__name__}: {first_line}"
            print(f"{row_case:<17}{dtype:<6}{shape_text:<20}{name:<28} skipped: {message}", flush=True)
            if os.environ.get("PEERS_TRACEBACK"):
                traceback.print_exc()
            errors.append({"case": row_case, "dtype": dtype, "shape": list(row_shape), "impl": name,
                           "message": message})
            continue
        row = make_row(row_case, dtype, row_shape, name, ms, nbytes, copy_gbs, config, check, case.flops(*shape),
                       gemm_tflops, written, roof)
        if impl == case.baseline:
            baseline_ms = ms
        if baseline_ms is not None and ms > 0:
            row["baseline"] = IMPL_NAMES[case.baseline]
            row["vs_baseline"] = baseline_ms / ms  # > 1: faster than the baseline
        rows.append(row)
        print_row(row, err, shape_text)
    del inputs, refs
    torch.cuda.empty_cache()


def write_json(path, result):
    temp = path + ".tmp"
    with open(temp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(temp, path)


def run_benchmarks(args):
    if torch is None or not torch.cuda.is_available():
        raise SystemExit("peers.py: needs PyTorch with a CUDA GPU (use --check DIR to check saved outputs)")
    case_names = [c for c in args.cases.split(",") if c] if args.cases else list(KILN_CASES)
    unknown = [c for c in case_names if c not in CASES]
    if unknown:
        raise SystemExit(f"peers.py: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    impls = [i for i in args.impls.split(",") if i] if args.impls else None
    bad = [i for i in impls or () if i not in IMPL_NAMES]
    if bad:
        raise SystemExit(f"peers.py: unknown implementation(s) {', '.join(bad)}; known: {', '.join(IMPL_NAMES)}")
    dtypes = set(args.dtypes.split(",")) if args.dtypes else None
    shapes = {name: case_shapes(CASES[name], args.sizes, bool(args.cases)) for name in case_names}

    # The cases differ in shape only: let torch.compile keep one graph per shape.
    for key in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, key):
            setattr(torch._dynamo.config, key, 256)

    gpu = torch.cuda.get_device_name()
    copy_gbs = measure_copy_gbs()
    read_gbs, read_source = measure_read_gbs()
    write_gbs, write_source = measure_write_gbs()
    roof = make_roof(copy_gbs, read_gbs, write_gbs, read_source, write_source)
    print(f"{gpu}: copy bandwidth {copy_gbs:.0f} GB/s (1 GiB device-to-device, read + write); torch "
          f"{torch.__version__}, triton {triton.__version__ if triton else 'absent'}, "
          f"jax {peers_xla.version() or 'absent'}", flush=True)
    print(f"read-only {read_gbs:.0f} GB/s ({read_source}); write-only {write_gbs:.0f} GB/s ({write_source}); "
          f"ceiling_gbs = {CEILING_MODEL} (each byte at its own stream's time alone would put a copy at "
          f"{roof['streams_alone_copy_gbs']:.0f} GB/s)", flush=True)
    gemm_tflops, gemm_source = 0.0, ""
    if any(CASES[name].flops(*s) > 0 for name in case_names for s in shapes[name]):  # the compute roof
        gemm_tflops, gemm_source = measure_gemm_tflops()
        print(f"GEMM rate: {gemm_tflops:.0f} TFLOP/s ({gemm_source})", flush=True)
    roof["gemm_tflops"] = gemm_tflops
    print_header()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed)
    rows, errors = [], []
    for name in case_names:
        case = CASES[name]
        for dtype in case.dtypes:
            if dtypes and dtype not in dtypes:
                continue
            for shape in shapes[name]:
                bench_one(case, dtype, shape, impls, roof, gen, rows, errors)
                if args.json:  # after every shape, so that an interrupted run keeps what it measured
                    write_json(args.json, make_result(gpu, copy_gbs, rows, errors, gemm_tflops=gemm_tflops,
                                                      gemm_source=gemm_source, roof=roof))
    if args.json:
        print(f"wrote {len(rows)} rows to {args.json}")
    return 1 if any(r["check"] == "failed" for r in rows) else 0


# ---------------------------------------------------------------------------
# --check DIR: Kiln's saved outputs against a float64 recomputation.

NPY_DTYPE = {"float16": "f16", "float32": "f32", "float64": "f32"}


def input_names(case):
    return [n for n, _ in case.inputs(*case.default_shapes[0])]


def load_saved_run(directory, case_name=None):
    """(case, dtype, inputs by case order, [(label, output array, dtype)]) from a `kiln run --save` folder."""
    manifest_path = os.path.join(directory, "manifest.json")
    manifest = None
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    if not case_name:
        if manifest is None:
            raise SystemExit(f"peers.py --check: {directory} has no manifest.json; name the case with --case")
        case_name = case_for_function(manifest["function"])
        if case_name is None:
            raise SystemExit(f"peers.py --check: function @{manifest['function']} matches no case "
                             f"({', '.join(KILN_CASES)}); name it with --case")
    if case_name not in KILN_CASES:
        raise SystemExit(f"peers.py --check: unknown case '{case_name}'; known: {', '.join(KILN_CASES)}")
    case = CASES[case_name]

    def load(file):
        path = os.path.join(directory, file)
        if not os.path.exists(path):
            raise SystemExit(f"peers.py --check: {path} is missing")
        return np.load(path)

    if manifest is not None:
        entries = manifest["inputs"]
        by_name = {e["name"]: e for e in entries}
        wanted = input_names(case)
        # Match the case's inputs by name when the graph uses the same names, else by position.
        ordered = [by_name[n] for n in wanted] if all(n in by_name for n in wanted) else entries
        if len(ordered) != len(wanted):
            raise SystemExit(f"peers.py --check: case {case.name} takes {len(wanted)} inputs, the graph "
                             f"@{manifest['function']} {len(entries)}")
        inputs = [load(e["file"]) for e in ordered]
        outputs, source = [], "Kiln's GPU outputs"
        for i, e in enumerate(manifest["outputs"]):
            if e.get("file"):
                outputs.append((f"output {i} %{e['name']}", load(e["file"]), e["dtype"]))
        if not outputs:  # `kiln run --compile-only --save`: check the CPU interpreter instead
            source = "Kiln's CPU reference (no GPU outputs saved)"
            outputs = [(f"reference {i} %{e['name']}", load(e["reference"]), e["dtype"])
                       for i, e in enumerate(manifest["outputs"])]
    else:
        inputs = [load(f"{n}.npy") for n in input_names(case)]
        files = sorted(f for f in os.listdir(directory) if f.startswith("out") and f.endswith(".npy"))
        files.sort(key=lambda f: int(f[3:].split("_")[0]))
        source = "Kiln's GPU outputs"
        outputs = [(f"output {i} {f}", load(f), None) for i, f in enumerate(files)]
    dtype = (manifest["inputs"][0]["dtype"] if manifest else NPY_DTYPE.get(str(inputs[0].dtype), "f32"))
    outputs = [(label, arr, dt or NPY_DTYPE.get(str(arr.dtype), "f32")) for label, arr, dt in outputs]
    return case, dtype, inputs, outputs, source


def recompute(case, inputs, dtype):
    """The case in float64: with PyTorch on the CPU when it is installed, else NumPy."""
    if torch is not None:
        refs = case.reference(TorchOps, *[torch.from_numpy(np.asarray(a, dtype=np.float64)) for a in inputs], dtype)
        return [r.numpy() for r in refs], "PyTorch float64 (CPU)"
    return case.reference(NumpyOps, *[np.asarray(a, dtype=np.float64) for a in inputs], dtype), "NumPy float64"


def run_check(directory, case_name=None):
    case, dtype, inputs, outputs, source = load_saved_run(directory, case_name)
    refs, how = recompute(case, inputs, dtype)
    if len(outputs) != len(refs):
        raise SystemExit(f"peers.py --check: {directory} holds {len(outputs)} outputs, case {case.name} "
                         f"has {len(refs)}")
    print(f"case {case.name} ({dtype}); {source} against {how}")
    ok = True
    for (label, out, out_dtype), ref in zip(outputs, refs):
        ref = np.asarray(ref).reshape(out.shape) if np.asarray(ref).size == out.size else ref
        err, worst = relative_l2(out, ref), max_abs_error(out, ref)
        bound = error_bound(out_dtype, inputs[0].shape[-1] if case.gemm else 0) if out_dtype in ERROR_BOUND else 1e-5
        passed = err <= bound
        ok = ok and passed
        print(f"  {label} {out_dtype}{list(out.shape)}: relative L2 {err:.3e}, max abs {worst:.3e} "
              f"(bound {bound:.0e}) {'passed' if passed else 'FAILED'}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", help=f"comma-separated cases (default kiln bench's: {','.join(KILN_CASES)}; "
                                        f"also {','.join(c for c in CASES if c not in KILN_CASES)})")
    parser.add_argument("--sizes", help="comma-separated C (R = 2^27 / C), RxC, or for the GEMM cases MxNxK or "
                                        "BxMxNxK; attention BxHxSxD or BxHxSqxSkvxD (+ c causal, gN K/V heads); "
                                        "quant MxNxK (+ a format, e.g. w4g128, w4g128z, w8); default: each case's own")
    parser.add_argument("--dtypes", help="only these dtypes, e.g. f16")
    parser.add_argument("--impls", help="comma-separated; default: every one each case has. eager, compile "
                        "(torch.compile), compile-graph (torch.compile timed in a CUDA graph at every size), "
                        "autotune (torch.compile mode=max-autotune: GEMM cases), triton, xla (jax.jit: the "
                        "memory-bound cases), kiln (Kiln's Python module, when it imports: kiln bench's cases); "
                        "attention: sdpa-cudnn, sdpa-flash, sdpa-efficient, triton; quant: cublas, int4pack, "
                        "compile; gemm_fp8: scaled-mm, scaled-mm-fast")
    parser.add_argument("--json", help="write the result JSON here")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", metavar="DIR", help="check what `kiln run --save DIR` wrote")
    parser.add_argument("--case", help="with --check: the case, when manifest.json does not tell")
    args = parser.parse_args(argv)
    if args.check:
        return run_check(args.check, args.case)
    return run_benchmarks(args)


if __name__ == "__main__":
    sys.exit(main())
