"""XLA (jax.jit) as an implementation of bench/peers.py ("xla" in --impls).

The case's XLA version (peers.py's xla_* functions, written against an array module) is
jitted with jax.numpy and called on the same torch tensors as every other implementation,
shared through DLPack without a copy; its outputs come back to torch the same way for the
check. JAX launches on a stream of its own, which torch's CUDA events do not see: peers.py
times it by the wall clock over back-to-back calls ended by block_until_ready.

jax is imported on first use only, so that peers.py imports and --check runs without it.
"""
from __future__ import annotations

import importlib.util
import os

_jax = None


def available():
    """Whether jax is installed (without importing it)."""
    return importlib.util.find_spec("jax") is not None


def load():
    """The jax module; imported once, after telling it not to take most of the GPU's memory for itself
    (its default), which would leave torch, whose tensors it shares, without room."""
    global _jax
    if _jax is None:
        if not available():
            raise RuntimeError("jax is not installed")
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import jax
        import jax.dlpack  # noqa: F401  (a submodule: not always imported with jax)
        import jax.numpy  # noqa: F401
        _jax = jax
    return _jax


def version():
    """jax's version, or None when it is not installed (no import when it is absent)."""
    if not available():
        return None
    try:
        return load().__version__
    except Exception as e:  # installed but broken: the xla rows will say why
        return f"not importable ({type(e).__name__})"


def to_jax(jax, tensor):
    """A torch tensor as a jax array over the same memory."""
    try:
        return jax.dlpack.from_dlpack(tensor)  # an object with __dlpack__ (recent JAX)
    except TypeError:
        import torch.utils.dlpack
        return jax.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(tensor))  # a capsule (older JAX)


def to_torch(jax, array):
    """A jax array as a torch tensor: over the same memory through DLPack, else copied through NumPy."""
    import torch
    try:
        return torch.from_dlpack(array)
    except Exception:  # a JAX or torch too old for the other's side of the protocol
        pass
    try:
        import torch.utils.dlpack
        return torch.utils.dlpack.from_dlpack(jax.dlpack.to_dlpack(array))
    except Exception:
        import numpy as np
        return torch.from_numpy(np.asarray(array.astype(jax.numpy.float32)))


def build(fn, tensors):
    """(launch, wait, outputs, version) for fn(jax.numpy, *arrays) jitted: launch() starts one call and
    returns its (not yet computed) outputs, wait(outs) blocks until they are, outputs() runs one call
    and returns its outputs as torch tensors."""
    jax = load()
    import torch
    if tensors and tensors[0].is_cuda:
        torch.cuda.synchronize()  # the inputs were written on torch's stream; JAX reads them on its own
    arrays = [to_jax(jax, t) for t in tensors]
    jitted = jax.jit(lambda *a: fn(jax.numpy, *a))

    def launch():
        return jitted(*arrays)

    def outputs():
        return [to_torch(jax, a) for a in jax.block_until_ready(launch())]

    return launch, jax.block_until_ready, outputs, jax.__version__
