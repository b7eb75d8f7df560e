"""Kiln from Python: graphs of tensor ops compiled to fused CUDA kernels.

    import kiln, torch
    prog = kiln.compile(open("examples/softmax.kiln").read())
    x = torch.randn(*prog.inputs[0].shape, device="cuda", dtype=torch.float16)
    y = torch.empty(prog.outputs[0].shape, device="cuda", dtype=torch.float16)
    prog(x, out=y)   # in place, no copies, on torch's current stream

Errors are kiln.Error (a RuntimeError) with the C++ API's messages.
"""
import sys as _sys

from ._kiln import (Error, Graph, Program, TensorSpec, Value, __version__, bench_graph, compile, gpu_available,
                    parse, parse_file, why_no_gpu)

__all__ = ["Error", "Graph", "Program", "TensorSpec", "Value", "bench_graph", "compile", "gpu_available", "parse",
           "parse_file", "why_no_gpu"]


def _current_stream(tensors):
    """The stream a framework's tensors are being worked on: torch's current one for torch tensors."""
    torch = _sys.modules.get("torch")
    if torch is not None and any(isinstance(t, torch.Tensor) for t in tensors):
        return torch.cuda.current_stream().cuda_stream
    cupy = _sys.modules.get("cupy")
    if cupy is not None and any(isinstance(t, cupy.ndarray) for t in tensors):
        return cupy.cuda.get_current_stream().ptr
    return None


_TORCH_DTYPES = {}  # torch dtype -> Kiln's name, filled on first use


def _described_torch(tensors):
    """(data pointer, dtype, shape, strides) of each tensor when all are PyTorch CUDA tensors of
    Kiln's dtypes, else None: then DLPack takes them, with its own checks and messages."""
    torch = _sys.modules.get("torch")
    if torch is None:
        return None
    if not _TORCH_DTYPES:
        _TORCH_DTYPES.update({torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
                              torch.int32: "i32", torch.bool: "i1"})
        for name, kiln_name in (("float8_e4m3fn", "f8e4m3"), ("float8_e5m2", "f8e5m2")):  # torch >= 2.1
            if hasattr(torch, name):
                _TORCH_DTYPES[getattr(torch, name)] = kiln_name
    described = []
    for t in tensors:
        if not isinstance(t, torch.Tensor) or not t.is_cuda:
            return None
        dtype = _TORCH_DTYPES.get(t.dtype)
        if dtype is None:
            return None
        described.append((t.data_ptr(), dtype, t.shape, t.stride()))
    return described


def _call(self, *inputs, out, stream=None):
    """prog(x, w, out=y) or out=[y, z]: runs in place on the caller's tensors and returns `out`.

    stream: None takes the current stream of the tensors' framework (torch, CuPy), else the
    legacy default stream; or give a torch.cuda.Stream, a cupy.cuda.Stream or a handle.
    PyTorch CUDA tensors on the current stream skip DLPack (its export costs more than a short
    kernel runs): their pointers, dtypes, shapes and strides are read directly."""
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    tensors = list(inputs) + outs
    if stream is None:
        described = _described_torch(tensors)
        if described is not None:
            n = len(inputs)
            self._run_described(described[:n], described[n:], _sys.modules["torch"].cuda.current_stream().cuda_stream)
            return out
        stream = _current_stream(tensors)
    self.run(list(inputs), outs, stream)
    return out


Program.__call__ = _call

