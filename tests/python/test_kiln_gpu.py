#!/usr/bin/env python3
"""Kiln's Python module on the GPU, on PyTorch tensors (and CuPy arrays where CuPy is
installed): results against torch, in place (by pointer for PyTorch tensors on the
current stream, else through DLPack), on torch's current stream and on a side stream, and
the errors for tensors Kiln cannot take. Every test skips
without a GPU or without torch.

    PYTHONPATH=build/python python3 tests/python/test_kiln_gpu.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kiln  # noqa: E402

try:
    import torch
except ImportError:
    torch = None
try:
    import cupy
except ImportError:
    cupy = None

HAVE_GPU = torch is not None and torch.cuda.is_available() and kiln.gpu_available()
WHY = ("no torch" if torch is None else "torch sees no GPU" if not torch.cuda.is_available()
       else f"kiln: {kiln.why_no_gpu()}")

ADD_RMSNORM = """func @add_rmsnorm(%x: f16[4096,4096], %r: f16[4096,4096], %w: f16[4096]) -> (f16[4096,4096], f16[4096,4096]) {
  %h = add %x, %r : f16[4096,4096]
  %y = rms_norm %h, %w {axis = -1, eps = 1e-06} : f16[4096,4096]
  return %y, %h
}
"""


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return float((got - want).norm() / want.norm())


def torch_add_rmsnorm(x, r, w):
    h = (x.float() + r.float()).half()
    hf = h.float()
    return (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).half(), h


@unittest.skipUnless(HAVE_GPU, WHY)
class TorchTensors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.p = kiln.compile(ADD_RMSNORM)
        g = torch.Generator(device="cuda").manual_seed(3)
        cls.x, cls.r = (torch.randn(4096, 4096, device="cuda", generator=g).half() for _ in range(2))
        cls.w = torch.randn(4096, device="cuda", generator=g).half()

    def outputs(self):
        return [torch.full((4096, 4096), float("nan"), device="cuda", dtype=torch.float16) for _ in range(2)]

    def check(self, y, h):
        want_y, want_h = torch_add_rmsnorm(self.x, self.r, self.w)
        self.assertLess(rel_l2(y, want_y), 1e-2)
        self.assertLess(rel_l2(h, want_h), 1e-2)

    def test_in_place_on_the_current_stream(self):
        y, h = self.outputs()
        ptr = y.data_ptr()
        self.p(self.x, self.r, self.w, out=[y, h])
        torch.cuda.current_stream().synchronize()
        self.assertEqual(y.data_ptr(), ptr)
        self.check(y, h)

    def test_on_a_side_stream(self):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y, h = self.outputs()
            self.p(self.x, self.r, self.w, out=[y, h])  # takes torch's current stream: `side`
        side.synchronize()
        self.check(y, h)

    def test_torch_tensors_skip_dlpack_with_the_same_result(self):
        # No stream given: the pointers are read from the tensors; a stream given: DLPack.
        # Both run the same kernels on the same values, so the outputs agree bit for bit.
        fast, through_dlpack = self.outputs(), self.outputs()
        self.p(self.x, self.r, self.w, out=fast)
        self.p(self.x, self.r, self.w, out=through_dlpack, stream=torch.cuda.current_stream())
        torch.cuda.synchronize()
        self.check(*fast)
        for a, b in zip(fast, through_dlpack):
            self.assertTrue(torch.equal(a, b))
        # An offset view that stays 16-byte aligned is taken at its own pointer.
        rows = torch.randn(8, 4096, device="cuda").half()
        p = kiln.compile("func @e(%x: f16[4,4096]) -> (f16[4,4096]) {\n  %y = exp %x : f16[4,4096]\n"
                         "  return %y\n}\n")
        y = torch.empty(4, 4096, device="cuda", dtype=torch.float16)
        p(rows[4:], out=y)
        torch.cuda.synchronize()
        self.assertLess(rel_l2(y, rows[4:].float().exp()), 1e-2)

    def test_explicit_stream_and_capsules(self):
        side = torch.cuda.Stream()
        y, h = self.outputs()
        torch.cuda.synchronize()
        caps = [torch.utils.dlpack.to_dlpack(t) for t in (self.x, self.r, self.w)]
        self.p.run(caps, [y, h], stream=side)
        side.synchronize()
        self.check(y, h)

    def test_builder_graph_in_f32_and_bf16(self):
        for dtype, torch_dtype, bound in (("f32", torch.float32, 1e-5), ("bf16", torch.bfloat16, 1e-2)):
            g = kiln.Graph("scaled_softmax")
            x = g.input("x", dtype, [1000, 777])
            g.output(g.op("softmax", [x * 0.5]))
            p = kiln.compile(g)
            xt = torch.randn(1000, 777, device="cuda").to(torch_dtype)
            yt = torch.empty_like(xt)
            p(xt, out=yt)
            torch.cuda.synchronize()
            want = torch.softmax((xt * 0.5).double(), -1)
            self.assertLess(rel_l2(yt, want), bound, dtype)

    def test_fp8_scaled_product_on_torch_float8_tensors(self):
        if not hasattr(torch, "float8_e4m3fn"):
            self.skipTest("this torch has no float8_e4m3fn")
        examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
        p = kiln.compile(kiln.parse_file(os.path.join(examples, "fp8_scaled_matmul.kiln")))
        g = torch.Generator(device="cuda").manual_seed(5)
        a, b = ((torch.rand(4096, 4096, device="cuda", generator=g) * 2 - 1).to(torch.float8_e4m3fn) for _ in range(2))
        sa = torch.rand(4096, 1, device="cuda", generator=g) + 0.5
        sb = torch.rand(1, 4096, device="cuda", generator=g) + 0.5
        y = torch.full((4096, 4096), float("nan"), device="cuda", dtype=torch.bfloat16)
        p(a, b, sa, sb, out=y)  # by pointer: float8 tensors are among the dtypes read directly
        torch.cuda.synchronize()
        want = (a.double() @ b.double().T) * sa.double() * sb.double()
        self.assertLess(rel_l2(y, want), 1e-2)

    def test_errors_for_tensors_kiln_cannot_take(self):
        y, h = self.outputs()
        with self.assertRaisesRegex(kiln.Error, r"input 0 %x \(f16\[4096,4096\]\): strides \[1, 4096\]"):
            self.p(self.x.t(), self.r, self.w, out=[y, h])
        with self.assertRaisesRegex(kiln.Error, r"input 1 %r: expected f16\[4096,4096\], got float64"):
            self.p(self.x, self.r.double(), self.w, out=[y, h])
        with self.assertRaisesRegex(kiln.Error, r"input 2 %w \(f16\[4096\]\): the tensor is in CPU memory"):
            self.p(self.x, self.r, self.w.cpu(), out=[y, h])
        with self.assertRaisesRegex(kiln.Error, r"output 1 %h: expected f16\[4096,4096\], got f16\[4096,2048\]"):
            self.p(self.x, self.r, self.w, out=[y, h[:, :2048].contiguous()])


@unittest.skipUnless(HAVE_GPU and cupy is not None, WHY if not HAVE_GPU else "no cupy")
class CupyArrays(unittest.TestCase):
    def test_cupy_in_place(self):
        p = kiln.compile(kiln.parse("func @e(%x: f32[1024]) -> (f32[1024]) {\n  %y = exp %x : f32[1024]\n"
                                    "  return %y\n}\n"))
        x = cupy.linspace(-1, 1, 1024, dtype=cupy.float32)
        y = cupy.empty_like(x)
        p(x, out=y)
        cupy.cuda.get_current_stream().synchronize()
        self.assertLess(float(cupy.abs(y - cupy.exp(x)).max()), 1e-5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
