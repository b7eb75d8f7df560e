"""The measuring tools of bench/peers.py and its case modules: inputs, timers, stream ceilings, the output check.

Timers: CUDA events around each launch (triton's do_bench, L2 flushed between runs); a CUDA
graph of 20 launches replayed, as `kiln bench` times launches under 50 us; and the wall clock
over back-to-back calls, for work on a stream that torch's events do not see (JAX's).

Ceilings, each measured on a 1 GiB tensor in the same run as the kernels: copy (read +
write), read-only (a Triton kernel that reads and writes one float per 256 KiB read, or
torch.sum without Triton) and write-only (fill_).

Imports without torch: the pure timer (time_wall_ms) is tested on the CPU.
"""
from __future__ import annotations

import contextlib
import math
import statistics
import time

import numpy as np

try:
    import torch
except ImportError:
    torch = None
try:
    import triton
    import triton.language as tl
    import triton.testing
except ImportError:
    triton = None

TORCH_DTYPE = {}
if torch is not None:
    TORCH_DTYPE = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}

STREAM_BYTES = 2**30  # every ceiling streams a 1 GiB tensor
# A product of more multiply-adds than this gets its reference in float32 on the GPU
# (runtime/reference.h has the same threshold for Kiln's).
GPU_REFERENCE_MIN_MACS = 2**28


def random_input(shape, dtype, gen):
    """Uniform in [-2, -0.1] U [0.1, 2]: never zero, of both signs."""
    magnitude = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32) * 1.9 + 0.1
    sign = torch.randint(0, 2, shape, generator=gen, device="cuda", dtype=torch.int8) * 2 - 1
    return (magnitude * sign).to(TORCH_DTYPE[dtype])


@contextlib.contextmanager
def no_tf32():
    """float32 products in full float32 (the references), whatever the process had set."""
    backends = torch.backends.cuda.matmul
    saved = backends.allow_tf32
    backends.allow_tf32 = False
    try:
        yield
    finally:
        backends.allow_tf32 = saved


# Launches shorter than this are timed again in a CUDA graph, as `kiln bench` times its own
# (runtime/timer.h, kGraphTimingBelowMs): between events the host's launch dominates them.
GRAPH_TIMING_BELOW_MS = 0.05
GRAPH_CALLS = 20  # launches captured per graph, as `kiln bench` does


def time_in_graph_ms(fn, per_graph=GRAPH_CALLS, reps=20):
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


WALL_REPS = 7


def time_wall_ms(launch, wait, reps=WALL_REPS, batch_s=0.02, min_calls=10, max_calls=2000, clock=time.perf_counter):
    """(median ms a call, calls a batch): launch() starts the work and returns at once, wait(result)
    blocks until it is done. Each batch is back-to-back calls and one wait on the last result (one
    stream runs them in order), timed by the wall clock, so the host's dispatch is hidden when a call
    is longer than it. Batches hold about batch_s seconds of calls."""
    out = None
    for _ in range(3):  # warm-up (compiles on the first call)
        out = launch()
    wait(out)
    start = clock()
    wait(launch())
    one = max(clock() - start, 1e-9)
    calls = int(min(max_calls, max(min_calls, math.ceil(batch_s / one))))
    per_call = []
    for _ in range(reps):
        start = clock()
        for _ in range(calls):
            out = launch()
        wait(out)
        per_call.append((clock() - start) / calls)
    return 1e3 * statistics.median(per_call), calls


if triton is not None:

    @triton.jit
    def _read_only_kernel(x_ptr, partial_ptr, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
        # Each program sums CHUNK floats and stores one: the writes are 1/CHUNK of the reads.
        base = tl.program_id(0).to(tl.int64) * CHUNK
        acc = tl.zeros([BLOCK], tl.float32)
        for start in range(0, CHUNK, BLOCK):
            acc += tl.load(x_ptr + base + start + tl.arange(0, BLOCK))
        tl.store(partial_ptr + tl.program_id(0), tl.sum(acc, axis=0))


def measure_copy_gbs():
    """Device-to-device copy of a 1 GiB tensor: bytes read + written per second."""
    src = torch.ones(STREAM_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src))
    return 2 * STREAM_BYTES / (ms * 1e-3) / 1e9


def measure_read_gbs():
    """(GB/s, how): the read-only ceiling, bytes read per second from a 1 GiB f32 tensor."""
    x = torch.ones(STREAM_BYTES // 4, dtype=torch.float32, device="cuda")
    if triton is not None:
        chunk, block = 65536, 4096
        partial = torch.empty(x.numel() // chunk, dtype=torch.float32, device="cuda")
        run = lambda: _read_only_kernel[(partial.numel(),)](x, partial, CHUNK=chunk, BLOCK=block, num_warps=8)  # noqa: E731
        how = f"triton: {partial.numel()} programs each summing {chunk * 4 // 1024} KiB into one f32"
        check = lambda: partial.sum().item()  # noqa: E731
    else:
        holder = {}
        run = lambda: holder.__setitem__("s", x.sum())  # noqa: E731
        how = "torch.sum over 1 GiB f32"
        check = lambda: holder["s"].item()  # noqa: E731
    ms = time_ms(run)
    if abs(check() - x.numel()) > 1e-3 * x.numel():  # every float is 1: a kernel that skipped part of x sums less
        raise RuntimeError(f"read-only ceiling: the kernel summed {check()}, not {x.numel()}")
    return STREAM_BYTES / (ms * 1e-3) / 1e9, how


def measure_write_gbs():
    """(GB/s, how): the write-only ceiling, bytes written per second filling a 1 GiB f32 tensor."""
    y = torch.empty(STREAM_BYTES // 4, dtype=torch.float32, device="cuda")
    ms = time_ms(lambda: y.fill_(1.0))  # a kernel, not a memset: 1.0 is not a byte pattern
    return STREAM_BYTES / (ms * 1e-3) / 1e9, "torch fill_(1.0) of 1 GiB f32"


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
        ref64 = ref.to(out64.device).double().reshape(-1)
        if out64.shape != ref64.shape or not bool(torch.isfinite(out64).all()):
            return math.inf
        denom = torch.linalg.vector_norm(ref64).item()
        err = torch.linalg.vector_norm(out64 - ref64).item()
        worst = max(worst, err / denom if denom > 0 else err)
    return worst
