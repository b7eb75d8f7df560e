#!/usr/bin/env python3
"""Kiln's Python module without a GPU: import, parse and print, the builder, compile-only,
and the checks and errors of a run, which come before any GPU is needed.

    PYTHONPATH=build/python python3 tests/python/test_kiln_cpu.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kiln  # noqa: E402
from fake_dlpack import CPU, FakeTensor  # noqa: E402

ARCH = "sm_90a"  # compile for the H200 with no GPU present
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
RMSNORM = """func @add_rmsnorm(%x: f16[64,256], %r: f16[64,256], %w: f16[256]) -> (f16[64,256], f16[64,256]) {
  %h = add %x, %r : f16[64,256]
  %y = rms_norm %h, %w {axis = -1, eps = 1e-06} : f16[64,256]
  return %y, %h
}
"""


class ParseAndPrint(unittest.TestCase):
    def test_print_parse_print_is_the_same(self):
        g = kiln.parse(RMSNORM)
        self.assertEqual(g.name, "add_rmsnorm")
        self.assertEqual(str(kiln.parse(str(g))), str(g))
        self.assertEqual(str(g), RMSNORM)

    def test_parse_error_is_a_kiln_error_with_the_location(self):
        with self.assertRaises(kiln.Error) as caught:
            kiln.parse("func @f(%x: f16[4]) -> (f16[4]) {\n  %y = frobnicate %x : f16[4]\n  return %y\n}\n",
                       "bad.kiln")
        self.assertIsInstance(caught.exception, RuntimeError)
        self.assertTrue(str(caught.exception).startswith("bad.kiln:2:"), str(caught.exception))
        self.assertIn("frobnicate", str(caught.exception))


class Builder(unittest.TestCase):
    def test_ops_operators_and_scalars(self):
        g = kiln.Graph("scaled_softmax")
        x = g.input("x", "f32", [8, 128])
        y = g.op("softmax", [x * 0.5 + 1.0], {"axis": -1})
        self.assertEqual((y.dtype, y.shape), ("f32", (8, 128)))
        g.output(y)
        text = str(g)
        self.assertIn("softmax", text)
        self.assertEqual(str(kiln.parse(text)), text)

    def test_shape_errors_name_the_python_line(self):
        g = kiln.Graph()
        a, b = g.input("a", "f16", [4, 8]), g.input("b", "f16", [3])
        with self.assertRaises(kiln.Error) as caught:
            a + b
        message = str(caught.exception)
        self.assertIn("test_kiln_cpu.py:", message)
        self.assertIn("do not broadcast", message)

    def test_unknown_op_and_dtype(self):
        g = kiln.Graph()
        x = g.input("x", "f32", [4])
        with self.assertRaisesRegex(kiln.Error, "unknown op 'frobnicate'"):
            g.op("frobnicate", [x])
        with self.assertRaisesRegex(kiln.Error, "unknown dtype 'f64'"):
            g.input("y", "f64", [4])


class CompileOnly(unittest.TestCase):
    def test_compiles_text_and_lists_kernels_and_tensors(self):
        p = kiln.compile(RMSNORM, arch=ARCH)
        self.assertEqual(p.arch, ARCH)
        self.assertEqual([(t.name, t.dtype, t.shape) for t in p.inputs],
                         [("x", "f16", (64, 256)), ("r", "f16", (64, 256)), ("w", "f16", (256,))])
        self.assertEqual([t.name for t in p.outputs], ["y", "h"])
        self.assertEqual(len(p.kernels), 1)
        self.assertIn('extern "C" __global__', p.kernels[0]["cuda"])
        self.assertGreater(p.kernels[0]["cubin_bytes"], 0)

    def test_compiles_a_built_graph_and_a_bench_case(self):
        g = kiln.Graph("neg")
        g.output(-g.input("x", "f32", [1024]))
        self.assertEqual(len(kiln.compile(g, arch=ARCH).kernels), 1)
        self.assertGreaterEqual(len(kiln.compile(kiln.bench_graph("softmax", "f16", "64x1024"), arch=ARCH).kernels), 1)

    def test_bad_pipeline_is_a_kiln_error(self):
        with self.assertRaisesRegex(kiln.Error, "nonsense"):
            kiln.compile(RMSNORM, arch=ARCH, pipeline="nonsense")


class RunChecks(unittest.TestCase):
    """The messages are the C++ API's (runtime/device_tensor.cpp); they come before the GPU is needed."""

    @classmethod
    def setUpClass(cls):
        cls.p = kiln.compile(RMSNORM, arch=ARCH)

    def good(self):
        return [FakeTensor("f16", [64, 256]), FakeTensor("f16", [64, 256]), FakeTensor("f16", [256])]

    def outs(self):
        return [FakeTensor("f16", [64, 256]), FakeTensor("f16", [64, 256])]

    def test_wrong_count(self):
        with self.assertRaisesRegex(kiln.Error, r"the graph takes 3 input\(s\) and 2 output\(s\); 1 and 2 tensors"):
            self.p.run(self.good()[:1], self.outs())

    def test_wrong_dtype_and_shape(self):
        ins = self.good()
        ins[1] = FakeTensor("f32", [64, 256])
        with self.assertRaisesRegex(kiln.Error, r"^input 1 %r: expected f16\[64,256\], got f32\[64,256\]$"):
            self.p.run(ins, self.outs())
        outs = self.outs()
        outs[1] = FakeTensor("f16", [256, 64])
        with self.assertRaisesRegex(kiln.Error, r"^output 1 %h: expected f16\[64,256\], got f16\[256,64\]$"):
            self.p.run(self.good(), outs)

    def test_dtype_kiln_lacks(self):
        ins = self.good()
        ins[0] = FakeTensor("f64", [64, 256])
        with self.assertRaisesRegex(kiln.Error, r"input 0 %x: expected f16\[64,256\], got float64\[64,256\]"):
            self.p.run(ins, self.outs())

    def test_fp8_tensors_read_as_kilns_fp8_dtypes(self):
        p = kiln.compile(kiln.parse_file(os.path.join(EXAMPLES, "fp8_scaled_matmul.kiln")), arch=ARCH)
        ins = [FakeTensor("f8e4m3", [4096, 4096]), FakeTensor("f8e5m2", [4096, 4096]),
               FakeTensor("f32", [4096, 1]), FakeTensor("f32", [1, 4096])]
        with self.assertRaisesRegex(kiln.Error, r"^input 1 %b: expected f8e4m3\[4096,4096\], got f8e5m2\[4096,4096\]$"):
            p.run(ins, [FakeTensor("bf16", [4096, 4096])])

    def test_non_contiguous_strides(self):
        ins = self.good()
        ins[0] = FakeTensor("f16", [64, 256], strides=[1, 64])
        with self.assertRaisesRegex(kiln.Error, r"input 0 %x \(f16\[64,256\]\): strides \[1, 64\] \(in elements\) "
                                                r"are not row-major contiguous \(expected \[256, 1\]\)"):
            self.p.run(ins, self.outs())

    def test_cpu_memory_and_objects_without_dlpack(self):
        ins = self.good()
        ins[2] = FakeTensor("f16", [256], device=CPU)
        with self.assertRaisesRegex(kiln.Error, r"input 2 %w \(f16\[256\]\): the tensor is in CPU memory"):
            self.p.run(ins, self.outs())
        with self.assertRaisesRegex(kiln.Error, "input 0 %x: a list has no __dlpack__"):
            self.p.run([[1.0]] + self.good()[1:], self.outs())

    def test_good_tensors_get_as_far_as_the_gpu(self):
        ins = self.good()
        if kiln.gpu_available():
            self.skipTest("a GPU is present: the fake tensors' memory would be used")
        with self.assertRaisesRegex(kiln.Error, "no GPU"):
            self.p(*ins, out=self.outs())
        self.assertEqual(ins[0].streams, [1])  # the legacy default stream, as DLPack numbers it


if __name__ == "__main__":
    unittest.main(verbosity=2)
