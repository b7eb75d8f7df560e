"""The quant case of bench/peers.py: weight-only quantised products y = x @ wd^T, x [M, K] in
bf16 or f16 against a weight [N, K] stored in few bits with group scales, as decode steps run
them (M = 1, 16, 64 against 8192 x 8192).

Formats, with Kiln's semantics: w<bits>[g<group>][z]
    w4  signed 4-bit values -8..7, two a byte along K, the element of even index in the low
        nibble: uint8 [N, K/2]
    w8  signed 8-bit values: int8 [N, K]
    gG  one scale per G consecutive elements of a row, s [N, K/G] in x's dtype; without it one per row
    z   zero points z shaped like the scales, in their dtype:
        wd[n, k] = (w[n, k] - z[n, k // G]) * s[n, k // G]
Sizes: MxNxK, optionally followed by a format (16x8192x8192w4g128); without one, each of
FORMATS. Bytes: the weight's (packed values, scales, zero points), the stream a decode step is
bound by. Rows: case quant_<format>, shape [M, N, K], and vs_baseline: cuBLAS's time over the row's.

Implementations: "cublas" (F.linear on the weight dequantised beforehand, in x's dtype: it
reads N K 2 bytes, more than the packed weight), "int4pack" (torch._weight_int4pack_mm on
torch's tiled int4 layout, inner_k_tiles 8: w4 only), "compile" (torch.compile of unpack +
dequantise + F.linear from the stored bytes). All are timed in CUDA graphs (a few us each).
"""
from __future__ import annotations

import math
import re
from typing import NamedTuple

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

from peers_gpu import GPU_REFERENCE_MIN_MACS, TORCH_DTYPE, no_tf32, random_input

IMPL_NAMES = {"cublas": "cuBLAS (dequantised)", "int4pack": "torch _weight_int4pack_mm"}
ROW_PREFIX = "quant_"
FORMATS = ("w4g128", "w4g128z", "w8")
M_SIZES = (1, 16, 64)
INNER_K_TILES = 8
INT4PACK_GROUPS = (32, 64, 128, 256)


class QuantFormat(NamedTuple):
    bits: int
    group: int | None  # None: one scale per row
    zeros: bool


class QuantShape(NamedTuple):
    m: int
    n: int
    k: int
    fmt: str


_FORMAT = re.compile(r"^w(4|8)(?:g(\d+))?(z?)$")
_SIZE = re.compile(r"^(\d+)x(\d+)x(\d+)(w\w*)?$")


def parse_format(text):
    """'w4g128z' -> QuantFormat(4, 128, True); ValueError when it is none."""
    match = _FORMAT.match(text)
    if not match or (match.group(2) is not None and int(match.group(2)) <= 0):
        raise ValueError(f"'{text}' is no weight format (w4 or w8, then optionally gG and z)")
    return QuantFormat(int(match.group(1)), int(match.group(2)) if match.group(2) else None, match.group(3) == "z")


def group_size(fmt, k):
    return fmt.group or k


def parse_size(token):
    """'16x8192x8192w4g128' -> [QuantShape(16, 8192, 8192, 'w4g128')]; without a format, one shape per
    format of FORMATS. SystemExit when malformed or when K does not fit the format."""
    text = token.strip().lower()
    match = _SIZE.match(text)
    if not match:
        raise SystemExit(f"peers.py: quant size '{token}' is not MxNxK, optionally followed by a format "
                         f"(e.g. {', '.join(FORMATS)})")
    m, n, k = (int(match.group(i)) for i in (1, 2, 3))
    formats = [match.group(4)] if match.group(4) else list(FORMATS)
    shapes = []
    for name in formats:
        try:
            fmt = parse_format(name)
        except ValueError as e:
            raise SystemExit(f"peers.py: quant size '{token}': {e}") from None
        if min(m, n, k) <= 0 or k % group_size(fmt, k) or (fmt.bits == 4 and k % 2):
            raise SystemExit(f"peers.py: quant size '{token}': K = {k} does not fit {name} (groups of "
                             f"{group_size(fmt, k)}, two 4-bit values a byte)")
        shapes.append(QuantShape(m, n, k, name))
    return shapes


def shape_text(shape):
    return f"{shape.m}x{shape.n}x{shape.k}{shape.fmt}"


def row_case(shape):
    return ROW_PREFIX + shape.fmt


def row_shape(shape):
    return [shape.m, shape.n, shape.k]


def weight_bytes(n, k, fmt_name, es):
    """The packed values, the scales and the zero points, es bytes each of the latter."""
    fmt = parse_format(fmt_name)
    groups = n * (k // group_size(fmt, k))
    return n * k * fmt.bits // 8 + groups * es * (2 if fmt.zeros else 1)


def quant_bytes(m, n, k, fmt, es):
    return weight_bytes(n, k, fmt, es)


def quant_written(m, n, k, fmt, es):
    return 0  # the bytes counted are the weight's, read only


def quant_flops(m, n, k, fmt):
    return 2 * m * n * k


def quant_inputs(m, n, k, fmt):
    f = parse_format(fmt)
    groups = (n, k // group_size(f, k))
    inputs = [("x", (m, k)), ("w", (n, k // 2) if f.bits == 4 else (n, k)), ("s", groups)]
    return inputs + [("z", groups)] if f.zeros else inputs


# ---------------------------------------------------------------------------
# The weights' bytes, in NumPy (tested on the CPU) and in torch (on the GPU).

def pack_int4(w):
    """int [N, K] in -8..7 -> uint8 [N, K/2]: element 2j in the low nibble of byte j, 2j + 1 in the high."""
    w = np.asarray(w)
    if w.shape[-1] % 2 or (w.size and (w.min() < -8 or w.max() > 7)):
        raise ValueError("pack_int4 takes an even number of columns of values in -8..7")
    nibbles = (w.astype(np.int16) & 0xF).astype(np.uint8)  # two's complement in four bits
    return nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)


def unpack_int4(packed):
    """uint8 [N, K/2] -> int8 [N, K] in -8..7 (the inverse of pack_int4)."""
    p = np.asarray(packed, dtype=np.uint8)
    nibbles = np.stack([p & 0xF, p >> 4], axis=-1).reshape(*p.shape[:-1], 2 * p.shape[-1]).astype(np.int8)
    return (nibbles ^ 8) - 8  # 0..7 stay, 8..15 become -8..-1


def dequantize(w, s, z, group):
    """wd[n, k] = (w[n, k] - z[n, k // group]) * s[n, k // group] in float64 (z may be None)."""
    w = np.asarray(w, dtype=np.float64)
    n, k = w.shape
    wg = w.reshape(n, k // group, group)
    if z is not None:
        wg = wg - np.asarray(z, dtype=np.float64)[..., None]
    return (wg * np.asarray(s, dtype=np.float64)[..., None]).reshape(n, k)


def reference_numpy(x, w, s, z, group):
    """y = x @ wd^T in float64, w the unpacked values."""
    return np.asarray(x, dtype=np.float64) @ dequantize(w, s, z, group).T


def int4pack_operand(w):
    """What torch's CUDA int4 packing takes (torch >= 2.5): uint8 [N, K/2] of q = w + 8 in 0..15,
    element 2j in the HIGH nibble, the other way round from Kiln's. NumPy or torch input."""
    q = w + 8
    q = q.astype(np.uint8) if isinstance(q, np.ndarray) else q.to(torch.uint8)
    return (q[:, 0::2] << 4) | q[:, 1::2]


def int4pack_scales_and_zeros(s, z):
    """torch's [K/G, N, 2] (scale, zero) pairs for Kiln's s and z [N, K/G]: torch dequantises
    (q - 8) * scale + zero with q = w + 8, so scale = s and zero = -z * s gives (w - z) * s.
    NumPy arrays (float64) or torch tensors (in s's dtype: zero is rounded once)."""
    if isinstance(s, np.ndarray):
        zero = np.zeros_like(s) if z is None else -np.asarray(z, dtype=np.float64) * s
        return np.ascontiguousarray(np.stack([s, zero], axis=-1).transpose(1, 0, 2))
    zero = torch.zeros_like(s) if z is None else (-(z.float() * s.float())).to(s.dtype)
    return torch.stack([s, zero], dim=-1).transpose(0, 1).contiguous()


def pack_int4_torch(w):
    """pack_int4 for an int8 tensor."""
    nibbles = (w & 0xF).to(torch.uint8)
    return nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)


def unpack_int4_torch(packed):
    """unpack_int4 for a uint8 tensor (also what torch.compile fuses into the product)."""
    nibbles = torch.stack([packed & 0xF, packed >> 4], dim=-1).reshape(packed.shape[0], -1).to(torch.int8)
    return (nibbles ^ 8) - 8


def dequantize_torch(w, s, z, group, dtype):
    """dequantize for tensors, computed in dtype."""
    n, k = w.shape
    wg = w.to(dtype).reshape(n, k // group, group)
    if z is not None:
        wg = wg - z.to(dtype)[..., None]
    return (wg * s.to(dtype)[..., None]).reshape(n, k)


def _operands(shape, inputs):
    """(x, w unpacked to int8, s, z or None, format, group)."""
    fmt = parse_format(shape.fmt)
    x, w, s, *rest = inputs
    wi = unpack_int4_torch(w) if fmt.bits == 4 else w
    return x, wi, s, (rest[0] if rest else None), fmt, group_size(fmt, shape.k)


def make_inputs(shape, dtype, gen):
    """x random as every case's; w uniform over its values; scales in [0.5, 1.5] / (qmax sqrt(K)), so
    that y stays near 1; zero points integers in -2..2."""
    m, n, k, name = shape
    fmt = parse_format(name)
    group = group_size(fmt, k)
    qmax = 1 << (fmt.bits - 1)
    x = random_input((m, k), dtype, gen)
    w = torch.randint(-qmax, qmax, (n, k), generator=gen, device="cuda", dtype=torch.int8)
    s = (torch.rand((n, k // group), generator=gen, device="cuda") + 0.5) / (qmax * math.sqrt(k))
    inputs = [x, pack_int4_torch(w) if fmt.bits == 4 else w, s.to(TORCH_DTYPE[dtype])]
    if fmt.zeros:
        z = torch.randint(-2, 3, (n, k // group), generator=gen, device="cuda", dtype=torch.int8)
        inputs.append(z.to(TORCH_DTYPE[dtype]))
    return inputs


def reference_torch(shape, inputs, dtype=None):
    """[y in float64] from the stored bytes: float32 with TF32 off on the GPU past
    GPU_REFERENCE_MIN_MACS, else float64."""
    x, wi, s, z, fmt, group = _operands(shape, inputs)
    wide = torch.float32 if x.is_cuda and shape.m * shape.n * shape.k > GPU_REFERENCE_MIN_MACS else torch.float64
    with no_tf32():
        return [(x.to(wide) @ dequantize_torch(wi, s, z, group, wide).T).double()]


# ---------------------------------------------------------------------------
# Implementations: each returns (run, outputs holder, config, timer).

def build_cublas(shape, inputs, dtype):
    x, wi, s, z, fmt, group = _operands(shape, inputs)
    wd = dequantize_torch(wi, s, z, group, torch.float32).to(x.dtype)  # rounded once, before timing
    holder = {}

    def run():
        holder["outs"] = (F.linear(x, wd),)

    packed = weight_bytes(shape.n, shape.k, shape.fmt, x.element_size())
    return run, holder, (f"F.linear on the weight dequantised to {dtype} beforehand: reads "
                         f"{wd.numel() * wd.element_size() / 1e6:.0f} MB of weight, not {packed / 1e6:.1f}"), "graph"


def _first_line(e, limit=160):
    line = (str(e).strip().splitlines() or [""])[0]
    return line if len(line) <= limit else line[:limit] + "..."


def int4pack_candidates(w):
    """(how, operand) pairs torch._convert_weight_to_int4pack may take, the likeliest first: the
    input changed between torch versions (int32 [N, K] before 2.5, then packed uint8)."""
    q = w + 8
    return (("uint8 [N, K/2], even k in the high nibble", lambda: int4pack_operand(w).contiguous()),
            ("int32 [N, K] of 0..15", lambda: q.to(torch.int32).contiguous()),
            ("uint8 [N, K/2], even k in the low nibble", lambda: pack_int4_torch(q.to(torch.int8)).contiguous()))


def pick_int4pack(mm, convert, x, w, s, z, group):
    """(packed weight, scales_and_zeros, how): the first input layout whose product matches x @ wd^T
    (float32, rel L2 under 1e-2), so that a torch whose packing reads its input otherwise is still
    measured on the right weight; the first that converts when none matches (the check then fails)."""
    scales_and_zeros = int4pack_scales_and_zeros(s, z)
    with no_tf32():
        want = x.float() @ dequantize_torch(w, s, z, group, torch.float32).T
    tried, fallback = [], None
    for how, operand in int4pack_candidates(w):
        try:
            packed = convert(operand(), INNER_K_TILES)
            got = mm(x, packed, group, scales_and_zeros).float()
        except (RuntimeError, TypeError) as e:
            tried.append(f"{how}: {_first_line(e)}")
            continue
        err = (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()
        if err < 1e-2:
            return packed, scales_and_zeros, how
        tried.append(f"{how}: rel L2 {err:.1e}")
        fallback = fallback or (packed, scales_and_zeros, f"{how} (no layout matched: {'; '.join(tried)})")
    if fallback is None:
        raise RuntimeError("torch's int4 kernel took no weight layout (" + "; ".join(tried) + ")")
    return fallback


def build_int4pack(shape, inputs, dtype):
    x, wi, s, z, fmt, group = _operands(shape, inputs)
    if fmt.bits != 4:
        raise RuntimeError(f"torch's int4 kernel takes 4-bit weights, not {shape.fmt}")
    if group not in INT4PACK_GROUPS:
        raise RuntimeError(f"torch's int4 kernel takes groups of {INT4PACK_GROUPS}, not {group}")
    convert = getattr(torch, "_convert_weight_to_int4pack", None)
    mm = getattr(torch, "_weight_int4pack_mm", None)
    if convert is None or mm is None:
        raise RuntimeError("this torch has no _convert_weight_to_int4pack / _weight_int4pack_mm")
    try:
        packed, scales_and_zeros, how = pick_int4pack(mm, convert, x, wi, s, z, group)
    except RuntimeError as e:  # e.g. activations it does not take (some versions: bf16 only)
        raise RuntimeError(f"torch int4 on {dtype} activations: {_first_line(e)}") from None
    holder = {}

    def run():
        holder["outs"] = (mm(x, packed, group, scales_and_zeros),)

    return run, holder, (f"torch._weight_int4pack_mm, inner_k_tiles={INNER_K_TILES}, packed from {how}, "
                         f"scales_and_zeros [K/G, N, 2]" + (" (zero = -z s, rounded to the scales' dtype)"
                                                            if z is not None else "")), "graph"


def dequant_linear(x, w, s, z, bits, group):
    """y = x @ wd^T from the stored bytes, in x's dtype: the function torch.compile compiles."""
    wi = unpack_int4_torch(w) if bits == 4 else w
    n, k = wi.shape
    wg = wi.to(x.dtype).reshape(n, k // group, group)
    if z is not None:
        wg = wg - z[..., None]
    return F.linear(x, (wg * s[..., None]).reshape(n, k))


def build_compile(shape, inputs, dtype):
    fmt = parse_format(shape.fmt)
    group = group_size(fmt, shape.k)
    x, w, s, *rest = inputs
    z = rest[0] if rest else None
    compiled = torch.compile(lambda x, w, s, z: dequant_linear(x, w, s, z, fmt.bits, group), dynamic=False)
    holder = {}

    def run():
        holder["outs"] = (compiled(x, w, s, z),)

    run()  # the first call compiles: excluded from the timing
    stored = "uint8 nibbles" if fmt.bits == 4 else "int8"
    return run, holder, f"torch.compile of unpack + dequantise + F.linear on {stored}, group {group}", "graph"


DEFAULT_SHAPES = tuple(QuantShape(m, 8192, 8192, fmt) for fmt in FORMATS for m in M_SIZES)

# The fields of peers.py's Case for this case.
CASE = dict(
    name="quant", dtypes=("bf16", "f16"), default_shapes=DEFAULT_SHAPES, inputs=quant_inputs, outputs=("y",),
    min_bytes=quant_bytes, reference=None, eager=None, triton=None, flops=quant_flops,
    impls=("cublas", "int4pack", "compile"), written_bytes=quant_written, kiln_case=False, parse_size=parse_size,
    make_inputs=make_inputs, gpu_reference=reference_torch,
    builders={"cublas": build_cublas, "int4pack": build_int4pack, "compile": build_compile},
    row_case=row_case, row_shape=row_shape, shape_text=shape_text, baseline="cublas")
