"""The gemm_fp8 case of bench/peers.py: a scaled fp8 product as `kiln bench gemm_fp8` builds it,
    y[M, N] = bf16((A @ B^T) * sa[M, 1] * sb[1, N])
with A [M, K] and B [N, K] stored in f8e4m3 (both K-contiguous: the layout fp8 Tensor Cores and
cuBLAS take), a float32 scale per row of A and per column of B, products accumulated in fp32.

Implementations: "scaled-mm" (torch._scaled_mm with those row-wise scales, use_fast_accum
False: cuBLAS adds its fp8 partial sums into fp32 accumulators along the way), "scaled-mm-fast"
(the same with use_fast_accum True: the Tensor Cores' own accumulation throughout, as Kiln's
kernel does). Timed with CUDA events, as `kiln bench` times a launch this long.
Bytes: A, B, the scales and the bf16 output.
"""
from __future__ import annotations

import math

try:
    import torch
except ImportError:
    torch = None

from peers_gpu import GPU_REFERENCE_MIN_MACS, no_tf32, random_input

IMPL_NAMES = {"scaled-mm": "torch._scaled_mm", "scaled-mm-fast": "torch._scaled_mm fast accum"}
FP8_DTYPES = ("f8e4m3",)
DEFAULT_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192))


def fp8_bytes(m, n, k, es=1):
    """A and B (one byte an element), the fp32 scales, the bf16 output."""
    return m * k + n * k + 4 * (m + n) + 2 * m * n


def fp8_written(m, n, k, es=1):
    return 2 * m * n


def fp8_flops(m, n, k):
    return 2 * m * n * k


def fp8_inputs(m, n, k):
    return [("a", (m, k)), ("b", (n, k)), ("sa", (m, 1)), ("sb", (1, n))]


def make_inputs(shape, dtype, gen):
    """A and B: random values of every case ([0.1, 2] in magnitude) rounded to e4m3; the scales in
    [0.5, 1.5] / sqrt(K) for A's rows and [0.5, 1.5] for B's columns, so that y stays near 1."""
    m, n, k = shape
    fp8 = torch.float8_e4m3fn
    a = random_input((m, k), "f32", gen).to(fp8)
    b = random_input((n, k), "f32", gen).to(fp8)
    sa = (torch.rand((m, 1), generator=gen, device="cuda") + 0.5) / math.sqrt(k)
    sb = torch.rand((1, n), generator=gen, device="cuda") + 0.5
    return [a, b, sa, sb]


def reference_torch(shape, inputs, dtype=None):
    """[y in float64]: the fp8 values widened exactly, multiplied in float32 with TF32 off on the GPU
    past GPU_REFERENCE_MIN_MACS, else float64; then the scales."""
    a, b, sa, sb = inputs
    m, n, k = shape
    wide = torch.float32 if m * n * k > GPU_REFERENCE_MIN_MACS else torch.float64
    with no_tf32():
        return [((a.to(wide) @ b.to(wide).T) * sa.to(wide) * sb.to(wide)).double()]


def _scaled_mm(fast):
    def build(shape, inputs, dtype):
        a, b, sa, sb = inputs
        if not hasattr(torch, "_scaled_mm"):
            raise RuntimeError("this torch has no _scaled_mm")
        bt = b.t()  # [K, N], column-major: what _scaled_mm takes as its second operand
        holder = {}

        def run():
            holder["outs"] = (torch._scaled_mm(a, bt, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                               use_fast_accum=fast),)

        return run, holder, (f"torch._scaled_mm e4m3, scales per row of A and per column of B, "
                             f"use_fast_accum={fast}, bf16 output"), "events"
    return build


CASE = dict(
    name="gemm_fp8", dtypes=FP8_DTYPES, default_shapes=DEFAULT_SHAPES, inputs=fp8_inputs, outputs=("y",),
    min_bytes=fp8_bytes, reference=None, eager=None, triton=None, flops=fp8_flops, gemm=True,
    impls=("scaled-mm", "scaled-mm-fast"), written_bytes=fp8_written, kiln_case=False,
    make_inputs=make_inputs, gpu_reference=reference_torch,
    builders={"scaled-mm": _scaled_mm(False), "scaled-mm-fast": _scaled_mm(True)},
    baseline="scaled-mm")
