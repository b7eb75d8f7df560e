#!/usr/bin/env python3
"""Kiln's benchmark cases in PyTorch eager, torch.compile and Triton, on the GPU machine.

When Kiln's Python module imports (build/python, or $KILN_PYTHON_DIR), Kiln runs in the
same process too ("kiln" in --impls): the case's graph compiled by kiln.compile and
called on the same torch tensors, timed the same way.

Runs the same cases and sizes as `kiln bench`, checks every implementation against a
float64 computation on the same inputs (large matrix products: float32 on the GPU, TF32
off), times each (median, warm-up, L2 flushed), measures the copy bandwidth (and, for the
GEMM cases, the GEMM rate) in the same run and writes the result JSON that
`kiln bench --peers F` merges into its table.

    bench/peers.py [--cases softmax,add_rmsnorm] [--sizes 4096,1024x8192] [--json F]
                   [--impls eager,compile,autotune,triton] [--dtypes f16]
    bench/peers.py --cases gemm --sizes 4096x4096x4096,16x8192x8192
    bench/peers.py --check DIR [--case NAME]

Sizes: a row length C (R = 2^27 / C) or RxC for the memory-bound cases, MxNxK or BxMxNxK
for the GEMM cases; with no case named, each size runs in the cases that take its form.
The GEMM cases also run torch.compile with mode="max-autotune" ("autotune").

--check reads what `kiln run FILE --save DIR` wrote (inputs and Kiln's outputs as .npy,
manifest.json), recomputes the case in float64 (PyTorch when present, else NumPy) and
reports Kiln's relative L2 and max abs error per output; exit status 1 above the bound.

At run time: numpy and torch (+ triton on the GPU); --check needs numpy only.
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

ELEMENTS = 2**27  # the row-reduction cases move 2^27 elements: R = 2^27 / C
REDUCE_BATCH = 8  # the middle- and multi-axis reduction cases reduce x of shape [8, R, C]
SOFTMAX_COLS = (128, 512, 1024, 4096, 16384, 32768, 65536, 262144)
NORM_COLS = (1024, 4096, 8192, 16384)
# GEMM cases: square products, one whose sizes are no multiple of 8, and M = 16 against
# an 8192 x 8192 weight (memory-bound), as in runtime/bench_cases.cpp.
GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4093, 4099, 4097), (16, 8192, 8192))
GEMM_BATCHED_SHAPES = ((32, 1024, 1024, 1024),)
GEMM_BIAS_GELU_SHAPES = ((4096, 4096, 4096),)
# A product of more multiply-adds than this gets its reference in float32 on the GPU
# (runtime/reference.h has the same threshold for Kiln's).
GPU_REFERENCE_MIN_MACS = 2**28
ELEMENT_SIZE = {"f16": 2, "bf16": 2, "f32": 4}
ERROR_BOUND = {"f16": 1e-2, "bf16": 1e-2, "f32": 1e-5}
IMPL_NAMES = {"eager": "torch eager", "compile": "torch.compile", "autotune": "torch.compile max-autotune",
              "triton": "triton", "kiln": "kiln (python)"}
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


def ref_middle_axis_sum(ops, x, dtype):
    return [ops.row_sum(x, 1, keepdim=False)]


def ref_multi_axis_sum(ops, x, dtype):
    return [ops.row_sum(ops.row_sum(x, 2, keepdim=False), 0, keepdim=False)]


# ---------------------------------------------------------------------------
# PyTorch eager versions (also what torch.compile compiles).

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


def eager_middle_axis_sum(x):
    return (x.sum(dim=1),)


def eager_multi_axis_sum(x):
    return (x.sum(dim=(0, 2)),)


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

GEMM_IMPLS = ("eager", "compile", "autotune", "triton")


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
    impls: tuple = ("eager", "compile", "triton")  # which of IMPL_NAMES it runs

    def takes(self, shape):
        return len(shape) in ((3, 4) if self.gemm else (2,))


CASES = {c.name: c for c in [
    Case("gelu_chain", ("f16", "f32"), ((8192, 8192),),
         lambda R, C: [("x", (R, C)), ("r", (R, C)), ("s", (C,)), ("b", (C,))], ("y",),
         lambda R, C, es: (3 * R * C + 2 * C) * es, ref_gelu_chain, eager_gelu_chain, triton_gelu_chain),
    Case("softmax", ("f16",), tuple(_rows_for(SOFTMAX_COLS)),
         lambda R, C: [("x", (R, C))], ("y",),
         lambda R, C, es: 2 * R * C * es, ref_softmax, eager_softmax, triton_softmax),
    Case("add_rmsnorm", ("f16",), tuple(_rows_for(NORM_COLS)),
         lambda R, C: [("x", (R, C)), ("r", (R, C)), ("w", (C,))], ("y", "h"),
         lambda R, C, es: (4 * R * C + C) * es, ref_add_rmsnorm, eager_add_rmsnorm, triton_add_rmsnorm),
    Case("layer_norm", ("f16",), tuple(_rows_for(NORM_COLS)),
         lambda R, C: [("x", (R, C)), ("w", (C,)), ("b", (C,))], ("y",),
         lambda R, C, es: (2 * R * C + 2 * C) * es, ref_layer_norm, eager_layer_norm, triton_layer_norm),
    Case("row_sum", ("f32",), ((16384, 16384),),
         lambda R, C: [("x", (R, C))], ("y",),
         lambda R, C, es: (R * C + R) * es, ref_row_sum, eager_row_sum, triton_row_sum),
    Case("col_sum", ("f32",), ((16384, 16384),),
         lambda R, C: [("x", (R, C))], ("y",),
         lambda R, C, es: (R * C + C) * es, ref_col_sum, eager_col_sum, triton_col_sum),
    # x is [8, R, C] (REDUCE_BATCH), as in runtime/bench_cases.cpp; no Triton kernel of their own.
    Case("middle_axis_sum", ("f32",), ((4096, 1024),),
         lambda R, C: [("x", (REDUCE_BATCH, R, C))], ("y",),
         lambda R, C, es: REDUCE_BATCH * (R * C + C) * es, ref_middle_axis_sum, eager_middle_axis_sum, None,
         impls=("eager", "compile")),
    Case("multi_axis_sum", ("f32",), ((4096, 1024),),
         lambda R, C: [("x", (REDUCE_BATCH, R, C))], ("y",),
         lambda R, C, es: (REDUCE_BATCH * R * C + R) * es, ref_multi_axis_sum, eager_multi_axis_sum, None,
         impls=("eager", "compile")),
    Case("gemm", ("f16", "bf16"), GEMM_SHAPES, _gemm_inputs, ("c",), _gemm_bytes, ref_gemm, eager_gemm,
         triton_gemm, _gemm_flops, gemm=True, impls=GEMM_IMPLS),
    Case("gemm_batched", ("f16",), GEMM_BATCHED_SHAPES, _gemm_inputs, ("c",), _gemm_bytes, ref_gemm, eager_gemm,
         triton_gemm, _gemm_flops, gemm=True, impls=GEMM_IMPLS),
    Case("gemm_bias_gelu", ("f16",), GEMM_BIAS_GELU_SHAPES, lambda *s: _gemm_inputs(*s, bias=True), ("y",),
         lambda *s: _gemm_bytes(*s, bias=True), ref_gemm_bias_gelu, eager_gemm_bias_gelu, triton_gemm_bias_gelu,
         _gemm_flops, gemm=True, impls=GEMM_IMPLS),
]}


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


def case_for_function(function_name):
    """The case a graph benchmarks, from its function name: softmax_f16_128 -> softmax."""
    matches = [n for n in CASES if function_name == n or function_name.startswith(n + "_")]
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


def roofline_percent(gb_s, tflop_s, nbytes, flops, copy_gbs, gemm_tflops):
    """% of the roofline as `kiln bench` places a row: of the GEMM rate past the ridge
    (copy bandwidth x flop/B above the rate), else of the copy bandwidth."""
    intensity = flops / nbytes if nbytes > 0 else 0.0
    if gemm_tflops > 0 and copy_gbs * intensity / 1e3 > gemm_tflops:
        return 100.0 * tflop_s / gemm_tflops
    return 100.0 * gb_s / copy_gbs if copy_gbs > 0 else 0.0


def make_row(case, dtype, shape, impl, median_ms, nbytes, copy_gbs, config, check, flops=0, gemm_tflops=0.0):
    seconds = median_ms * 1e-3
    gb_s = nbytes / seconds / 1e9 if median_ms > 0 else 0.0
    tflop_s = flops / seconds / 1e12 if median_ms > 0 else 0.0
    return {"case": case, "dtype": dtype, "shape": list(shape), "impl": impl, "median_ms": float(median_ms),
            "bytes": int(nbytes), "flops": int(flops), "gb_s": gb_s, "tflop_s": tflop_s,
            "pct_roofline": roofline_percent(gb_s, tflop_s, nbytes, flops, copy_gbs, gemm_tflops),
            "config": config, "check": check}


def make_result(gpu, copy_gbs, rows, errors=(), date=None, gemm_tflops=0.0, gemm_source=""):
    result = {"tool": "peers.py", "gpu": gpu, "date": date or datetime.date.today().isoformat(),
              "copy_gbs": float(copy_gbs), "rows": list(rows), "errors": list(errors)}
    if gemm_tflops > 0 or gemm_source:
        result["gemm_tflops"] = float(gemm_tflops)
        result["gemm_source"] = gemm_source
    return result


def validate_result(result):
    """Raises ValueError when a result dict does not follow the shared schema."""
    for key, kind in (("tool", str), ("gpu", str), ("date", str), ("copy_gbs", (int, float)), ("rows", list)):
        if not isinstance(result.get(key), kind):
            raise ValueError(f"result: '{key}' missing or not a {kind}")
    datetime.date.fromisoformat(result["date"])
    for i, row in enumerate(result["rows"]):
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            raise ValueError(f"result row {i}: missing {', '.join(missing)}")
        if row["check"] not in ("passed", "failed", "skipped"):
            raise ValueError(f"result row {i}: check is '{row['check']}'")
        if not 2 <= len(row["shape"]) <= 4 or not all(isinstance(d, int) for d in row["shape"]):
            raise ValueError(f"result row {i}: shape {row['shape']} is not [R, C], [M, N, K] or [B, M, N, K]")


# ---------------------------------------------------------------------------
# The GPU run.

TORCH_DTYPE = {}
if torch is not None:
    TORCH_DTYPE = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def random_input(shape, dtype, gen):
    """Uniform in [-2, -0.1] U [0.1, 2]: never zero, of both signs."""
    magnitude = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32) * 1.9 + 0.1
    sign = torch.randint(0, 2, shape, generator=gen, device="cuda", dtype=torch.int8) * 2 - 1
    return (magnitude * sign).to(TORCH_DTYPE[dtype])


# Launches shorter than this are timed again in a CUDA graph, as `kiln bench` times its own
# (runtime/timer.h, kGraphTimingBelowMs): between events the host's launch dominates them.
GRAPH_TIMING_BELOW_MS = 0.05


def time_in_graph_ms(fn, per_graph=20, reps=20):
    """Median time of one call of fn, captured per_graph times in a CUDA graph and replayed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_graph):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / per_graph)
    return float(np.median(times))


def time_ms(fn):
    """Median time of fn in ms: triton's do_bench (warm-up, L2 flushed between runs) or CUDA
    events; below GRAPH_TIMING_BELOW_MS, in a CUDA graph when fn can be captured."""
    ms = time_ms_events(fn)
    if ms < GRAPH_TIMING_BELOW_MS:
        try:
            return time_in_graph_ms(fn)
        except Exception:  # not capturable (a host sync inside): keep the event time
            torch.cuda.synchronize()
    return ms


def time_ms_events(fn):
    if triton is not None:
        return float(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median"))
    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    for _ in range(5):
        fn()
    times = []
    for _ in range(50):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def measure_copy_gbs():
    """Device-to-device copy of a 1 GiB tensor: bytes read + written per second."""
    src = torch.ones(2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src))
    return 2 * 2**30 / (ms * 1e-3) / 1e9


def measure_gemm_tflops(n=8192):
    """The compute roof as `kiln bench` measures it: a bf16 GEMM of n^3 (cuBLAS through torch)."""
    a = torch.rand((n, n), device="cuda", dtype=torch.bfloat16) * 2 - 1
    b = torch.rand((n, n), device="cuda", dtype=torch.bfloat16) * 2 - 1
    ms = time_ms(lambda: a @ b)
    return 2.0 * n**3 / (ms * 1e-3) / 1e12, f"torch bf16 GEMM {n}^3 (cuBLAS), bf16 output"


def check_outputs(outs, refs, dtype):
    """Worst relative L2 error of outs against the float64 refs (torch tensors)."""
    worst = 0.0
    for out, ref in zip(outs, refs):
        out64 = out.double().reshape(-1)
        ref64 = ref.reshape(-1)
        if out64.shape != ref64.shape or not bool(torch.isfinite(out64).all()):
            return math.inf
        denom = torch.linalg.vector_norm(ref64).item()
        err = torch.linalg.vector_norm(out64 - ref64).item()
        worst = max(worst, err / denom if denom > 0 else err)
    return worst


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


def build_impl(impl, case, inputs, dtype=None, shape=None):
    """(run, outputs-or-None, config): run() launches the work; outputs are read after one run."""
    if impl == "kiln":
        return build_kiln(case, dtype, shape, inputs)
    if impl == "eager":
        holder = {}
        run = lambda: holder.__setitem__("outs", case.eager(*inputs))
        return run, holder, ""
    if impl in ("compile", "autotune"):
        mode = "max-autotune" if impl == "autotune" else "default"
        fn = make_compiled(case.eager, mode)
        holder = {}
        run = lambda: holder.__setitem__("outs", fn(*inputs))
        run()  # the first call compiles (and, for max-autotune, tunes): excluded from the timing
        return run, holder, f"torch.compile mode={mode}"
    if impl == "triton":
        if triton is None:
            raise RuntimeError("triton is not installed")
        launch, outs, config = case.triton(*inputs)
        return launch, {"outs": outs}, config
    raise ValueError(f"unknown implementation '{impl}'")


def print_header():
    print(f"{'case':<15}{'dtype':<6}{'shape':<20}{'impl':<28}{'ms':>9}{'GB/s':>8}{'TFLOP/s':>9}{'%roof':>7}  "
          f"{'check':<8}{'rel L2':>9}  config", flush=True)


def print_row(row, err):
    shape = "x".join(str(d) for d in row["shape"])
    print(f"{row['case']:<15}{row['dtype']:<6}{shape:<20}{row['impl']:<28}{row['median_ms']:>9.4f}"
          f"{row['gb_s']:>8.0f}{row['tflop_s']:>9.1f}{row['pct_roofline']:>7.1f}  {row['check']:<8}{err:>9.2e}  "
          f"{row['config']}", flush=True)


def bench_one(case, dtype, shape, impls, roof, gen, rows, errors):
    """Every implementation of one case, dtype and shape; roof = (copy GB/s, GEMM TFLOP/s)."""
    copy_gbs, gemm_tflops = roof
    inputs = [random_input(s, dtype, gen) for _, s in case.inputs(*shape)]
    refs = case.reference(TorchOps, *[t.double() for t in inputs], dtype)
    nbytes = case.min_bytes(*shape, ELEMENT_SIZE[dtype])
    bound = error_bound(dtype, shape[-1] if case.gemm else 0)
    shape_text = "x".join(str(d) for d in shape)
    for impl in (i for i in impls if i in case.impls or i == "kiln"):
        name = IMPL_NAMES[impl]
        try:
            run, holder, config = build_impl(impl, case, inputs, dtype, shape)
            run()
            torch.cuda.synchronize()
            err = check_outputs(holder["outs"], refs, dtype)
            check = "passed" if err <= bound else "failed"
            ms = time_ms(run)
            config = config() if callable(config) else config
        except Exception as e:  # one failing peer must not stop the others
            first_line = (str(e).strip().splitlines() or [""])[0]
            message = f"{type(e).__name__}: {first_line}"
            print(f"{case.name:<15}{dtype:<6}{shape_text:<20}{name:<28} skipped: {message}", flush=True)
            if os.environ.get("PEERS_TRACEBACK"):
                traceback.print_exc()
            errors.append({"case": case.name, "dtype": dtype, "shape": list(shape), "impl": name, "message": message})
            continue
        row = make_row(case.name, dtype, shape, name, ms, nbytes, copy_gbs, config, check, case.flops(*shape),
                       gemm_tflops)
        rows.append(row)
        print_row(row, err)
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
    case_names = [c for c in args.cases.split(",") if c] if args.cases else list(CASES)
    unknown = [c for c in case_names if c not in CASES]
    if unknown:
        raise SystemExit(f"peers.py: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    impls = [i for i in args.impls.split(",") if i]
    bad = [i for i in impls if i not in IMPL_NAMES]
    if bad:
        raise SystemExit(f"peers.py: unknown implementation(s) {', '.join(bad)}; known: {', '.join(IMPL_NAMES)}")
    dtypes = set(args.dtypes.split(",")) if args.dtypes else None
    sizes = parse_sizes(args.sizes) if args.sizes else None
    shapes = {name: shapes_for(CASES[name], sizes, bool(args.cases)) for name in case_names}

    # The cases differ in shape only: let torch.compile keep one graph per shape.
    for key in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, key):
            setattr(torch._dynamo.config, key, 256)

    gpu = torch.cuda.get_device_name()
    copy_gbs = measure_copy_gbs()
    print(f"{gpu}: copy bandwidth {copy_gbs:.0f} GB/s (1 GiB device-to-device, read + write); torch "
          f"{torch.__version__}, triton {triton.__version__ if triton else 'absent'}", flush=True)
    gemm_tflops, gemm_source = 0.0, ""
    if any(CASES[name].gemm and shapes[name] for name in case_names):  # the compute roof, for the GEMM rows
        gemm_tflops, gemm_source = measure_gemm_tflops()
        print(f"GEMM rate: {gemm_tflops:.0f} TFLOP/s ({gemm_source})", flush=True)
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
                bench_one(case, dtype, shape, impls, (copy_gbs, gemm_tflops), gen, rows, errors)
                if args.json:  # after every shape, so that an interrupted run keeps what it measured
                    write_json(args.json, make_result(gpu, copy_gbs, rows, errors, gemm_tflops=gemm_tflops,
                                                      gemm_source=gemm_source))
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
                             f"({', '.join(CASES)}); name it with --case")
    if case_name not in CASES:
        raise SystemExit(f"peers.py --check: unknown case '{case_name}'; known: {', '.join(CASES)}")
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
    parser.add_argument("--cases", help=f"comma-separated cases (default all: {','.join(CASES)})")
    parser.add_argument("--sizes", help="comma-separated C (R = 2^27 / C), RxC, or for the GEMM cases MxNxK or "
                                        "BxMxNxK; default: each case's own")
    parser.add_argument("--dtypes", help="only these dtypes, e.g. f16")
    parser.add_argument("--impls", default="eager,compile,autotune,triton" + (",kiln" if kiln else ""),
                        help="eager, compile, autotune (torch.compile mode=max-autotune: GEMM cases only), triton, "
                             "kiln (Kiln's Python module; in the default list when it imports)")
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
