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


def _call(self, *inputs, out, stream=None):
    """prog(x, w, out=y) or out=[y, z]: runs in place on the caller's tensors and returns `out`.

    stream: None takes the current stream of the tensors' framework (torch, CuPy), else the
    legacy default stream; or give a torch.cuda.Stream, a cupy.cuda.Stream or a handle."""
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if stream is None:
        stream = _current_stream(list(inputs) + outs)
    self.run(list(inputs), outs, stream)
    return out


Program.__call__ = _call

