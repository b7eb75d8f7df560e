#!/usr/bin/env python3
"""Tests of bench/peers.py, its case modules and bench/plot.py that need no GPU: the cases'
reference math on tiny hand-computed inputs (attention, the quantised weights' bytes), the
XLA versions in NumPy, byte and FLOP counts, the ceiling model, size parsing, the result
JSON, `peers.py --check` on folders written the way `kiln run --save` writes them, and
plot.py on a synthetic result. Where torch (CPU), triton or jax are installed, the torch
halves of the references and helpers, the Triton attention kernel (in Triton's interpreter)
and the XLA path (jax on the CPU) run too.

    python3 bench/test_peers.py        (or: python3 -m pytest bench/test_peers.py)

Exits 77 (skipped) when python3 has no numpy. KILN_BIN names a kiln binary for the test
that checks `kiln run --compile-only --save` end to end (skipped without one).
"""
import contextlib
import importlib.util
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    np = None

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if np is not None:
    import peers
    import peers_attention
    import peers_fp8
    import peers_gpu
    import peers_quant

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_TRITON = importlib.util.find_spec("triton") is not None
HAVE_JAX = importlib.util.find_spec("jax") is not None


def write_npy_like_kiln(path, array):
    """Writes .npy as runtime/npy.cpp does: version 1.0, header padded to 64 bytes, shape as '(3,5)'."""
    descr = {np.dtype(np.float16): "<f2", np.dtype(np.float32): "<f4", np.dtype(np.int32): "<i4"}[array.dtype]
    dims = ",".join(str(d) for d in array.shape) + ("," if array.ndim == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())


def ref(case, *arrays, dtype="f32"):
    return peers.CASES[case].reference(peers.NumpyOps, *[np.asarray(a, dtype=np.float64) for a in arrays], dtype)


@unittest.skipIf(np is None, "numpy is not installed")
class ReferenceMath(unittest.TestCase):
    def test_softmax_of_zero_and_log3_is_quarter_and_three_quarters(self):
        (y,) = ref("softmax", [[0.0, math.log(3.0)]])
        np.testing.assert_allclose(y, [[0.25, 0.75]], rtol=1e-12)

    def test_softmax_is_unchanged_by_a_row_shift(self):
        (y,) = ref("softmax", [[1000.0, 1001.0]])
        e = math.exp(1.0)
        np.testing.assert_allclose(y, [[1 / (1 + e), e / (1 + e)]], rtol=1e-12)

    def test_add_rmsnorm_of_3_4(self):
        y, h = ref("add_rmsnorm", [[1.0, 2.0]], [[2.0, 2.0]], [1.0, 2.0], dtype="f16")
        np.testing.assert_allclose(h, [[3.0, 4.0]])
        rms = math.sqrt((9 + 16) / 2 + 1e-6)
        np.testing.assert_allclose(y, [[3 / rms, 8 / rms]], rtol=1e-12)

    def test_add_rmsnorm_normalises_h_rounded_to_f16(self):
        # 1 + 2^-11 rounds to 1 in f16: the norm sees [1, 1], the returned h keeps the sum.
        y, h = ref("add_rmsnorm", [[1.0, 1.0]], [[2.0**-11, 0.0]], [1.0, 1.0], dtype="f16")
        self.assertEqual(h[0, 0], 1.0 + 2.0**-11)
        np.testing.assert_allclose(y, [[1 / math.sqrt(1 + 1e-6)] * 2], rtol=1e-12)

    def test_layer_norm_of_1_to_4(self):
        (y,) = ref("layer_norm", [[1.0, 2.0, 3.0, 4.0]], [2.0, 2.0, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0])
        std = math.sqrt(1.25 + 1e-5)  # biased variance of 1..4
        np.testing.assert_allclose(y, [[2 * c / std + 1 for c in (-1.5, -0.5, 0.5, 1.5)]], rtol=1e-12)

    def test_gelu_chain_uses_the_tanh_approximation(self):
        # gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411919906...; gelu(0) = 0.
        (y,) = ref("gelu_chain", [[0.5, 0.0]], [[0.5, 0.25]], [2.0, 3.0], [0.0, 0.0])
        np.testing.assert_allclose(y, [[0.8411919906 + 0.5, 0.25]], rtol=1e-9)

    def test_gelu_chain_scales_then_shifts(self):
        (y,) = ref("gelu_chain", [[1.0]], [[0.0]], [-2.0], [1.0])  # v = 1 * -2 + 1 = -1
        np.testing.assert_allclose(y, [[-0.1588080094]], rtol=1e-8)

    def test_row_and_column_sums(self):
        x = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
        np.testing.assert_array_equal(ref("row_sum", x)[0], [3.0, 7.0, 11.0])
        np.testing.assert_array_equal(ref("col_sum", x)[0], [9.0, 12.0])

    def test_gemm_is_a_row_major_product(self):
        a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # [M = 2, K = 3]
        b = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]  # [K = 3, N = 2]
        (c,) = ref("gemm", a, b, dtype="f16")
        np.testing.assert_array_equal(c, [[4.0, 5.0], [10.0, 11.0]])

    def test_batched_gemm_multiplies_each_batch_entry(self):
        a = [[[1.0, 2.0]], [[3.0, 4.0]]]  # [B = 2, M = 1, K = 2]
        b = [[[1.0], [1.0]], [[2.0], [0.5]]]  # [B = 2, K = 2, N = 1]
        (c,) = ref("gemm_batched", a, b, dtype="f16")
        np.testing.assert_array_equal(c, [[[3.0]], [[8.0]]])

    def test_gemm_bias_gelu_is_tanh_gelu_of_product_plus_bias(self):
        # [1, 0] @ I + [0, -1] = [1, -1]: gelu_tanh(1) = 0.8411919906, gelu_tanh(-1) = -0.1588080094.
        (y,) = ref("gemm_bias_gelu", [[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [0.0, -1.0], dtype="f16")
        np.testing.assert_allclose(y, [[0.8411919906, -0.1588080094]], rtol=1e-9)


@unittest.skipIf(np is None, "numpy is not installed")
class CaseTable(unittest.TestCase):
    def test_softmax_shapes_hold_2_27_elements(self):
        decode, *shapes = peers.CASES["softmax"].default_shapes
        self.assertEqual(decode, (1, 4096))  # a decoding step's row first, as `kiln bench` has it
        self.assertEqual([c for _, c in shapes], [128, 512, 1024, 4096, 16384, 32768, 65536, 262144])
        self.assertTrue(all(r * c == 2**27 for r, c in shapes))

    def test_cases_match_kiln_bench(self):
        # runtime/bench_cases.cpp holds the same defaults; the two lists must stay in step.
        self.assertEqual(peers.CASES["swiglu"].default_shapes, ((16384, 8192), (1, 4096)))
        self.assertEqual(peers.CASES["mul_add"].default_shapes, ((16384, 8192), (16, 4096)))
        self.assertEqual(peers.CASES["col_mean"].default_shapes, ((65536, 256), (50000, 1024), (1024, 32768)))
        self.assertEqual(peers.CASES["swiglu"].min_bytes(2, 8, 2), 3 * 16 * 2)
        self.assertEqual(peers.CASES["mul_add"].written_bytes(2, 8, 2), 16 * 2)

    def test_new_references(self):
        g, u = np.array([[1.0, -2.0]]), np.array([[3.0, 0.5]])
        (y,) = peers.CASES["swiglu"].reference(peers.NumpyOps, g, u, "f32")
        np.testing.assert_allclose(y, [[1.0 / (1.0 + np.exp(-1.0)) * 3.0, -2.0 / (1.0 + np.exp(2.0)) * 0.5]])
        (m,) = peers.CASES["col_mean"].reference(peers.NumpyOps, np.array([[1.0, 2.0], [3.0, 6.0]]), "f32")
        np.testing.assert_allclose(m, [2.0, 4.0])

    def test_minimum_bytes(self):
        self.assertEqual(peers.CASES["softmax"].min_bytes(32768, 4096, 2), 536870912)  # 537 MB in f16
        self.assertEqual(peers.CASES["add_rmsnorm"].min_bytes(2, 8, 2), (4 * 16 + 8) * 2)
        self.assertEqual(peers.CASES["layer_norm"].min_bytes(2, 8, 2), (2 * 16 + 16) * 2)
        self.assertEqual(peers.CASES["gelu_chain"].min_bytes(2, 8, 4), (3 * 16 + 16) * 4)
        self.assertEqual(peers.CASES["row_sum"].min_bytes(2, 8, 4), (16 + 2) * 4)
        self.assertEqual(peers.CASES["col_sum"].min_bytes(2, 8, 4), (16 + 8) * 4)

    def test_sizes_take_row_lengths_or_shapes(self):
        self.assertEqual(peers.parse_sizes("4096,3x5"), [(32768, 4096), (3, 5)])
        with self.assertRaises(SystemExit):
            peers.parse_sizes("big")

    def test_sizes_take_gemm_shapes(self):
        self.assertEqual(peers.parse_sizes("4093x4099x4097,32x1024x512x256"),
                         [(4093, 4099, 4097), (32, 1024, 512, 256)])
        for bad in ("4x5x", "0x4x4", "1x2x3x4x5", "4x-5x6", "axbxc"):
            with self.assertRaises(SystemExit, msg=bad):
                peers.parse_sizes(bad)

    def test_each_size_runs_in_the_cases_of_its_form(self):
        sizes = peers.parse_sizes("64x64,8x16x32")
        self.assertEqual(peers.shapes_for(peers.CASES["gemm"], sizes, named=False), [(8, 16, 32)])
        self.assertEqual(peers.shapes_for(peers.CASES["softmax"], sizes, named=False), [(64, 64)])
        self.assertEqual(peers.shapes_for(peers.CASES["gemm"], None, named=False), list(peers.GEMM_SHAPES))
        with self.assertRaises(SystemExit):  # a named case given a size of the other form
            peers.shapes_for(peers.CASES["softmax"], sizes, named=True)

    def test_gemm_cases_match_kiln_bench(self):
        # runtime/bench_cases.cpp: the same names, dtypes and default sizes.
        gemm, batched, fused = (peers.CASES[n] for n in ("gemm", "gemm_batched", "gemm_bias_gelu"))
        self.assertEqual(gemm.dtypes, ("f16", "bf16"))
        self.assertEqual(gemm.default_shapes,
                         ((4096, 4096, 4096), (8192, 8192, 8192), (4093, 4099, 4097), (16, 8192, 8192)))
        self.assertEqual(batched.dtypes, ("f16",))
        self.assertEqual(batched.default_shapes, ((32, 1024, 1024, 1024),))
        self.assertEqual(fused.default_shapes, ((4096, 4096, 4096),))
        self.assertEqual([n for n, _ in fused.inputs(5, 7, 3)], ["a", "b", "bias"])
        self.assertEqual(fused.inputs(5, 7, 3), [("a", (5, 3)), ("b", (3, 7)), ("bias", (7,))])
        self.assertEqual(batched.inputs(2, 5, 7, 3), [("a", (2, 5, 3)), ("b", (2, 3, 7))])
        self.assertIn("autotune", gemm.impls)
        self.assertNotIn("autotune", peers.CASES["softmax"].impls)
        self.assertEqual(peers.IMPL_NAMES["autotune"], "torch.compile max-autotune")

    def test_gemm_bytes_and_flops(self):
        gemm, batched, fused = (peers.CASES[n] for n in ("gemm", "gemm_batched", "gemm_bias_gelu"))
        self.assertEqual(gemm.min_bytes(4093, 4099, 4097, 2), (4093 * 4097 + 4097 * 4099 + 4093 * 4099) * 2)
        self.assertEqual(batched.min_bytes(32, 1024, 1024, 1024, 2), 32 * 3 * 1024 * 1024 * 2)
        self.assertEqual(fused.min_bytes(4096, 4096, 4096, 2), (3 * 4096 * 4096 + 4096) * 2)
        self.assertEqual(gemm.flops(4096, 4096, 4096), 2 * 4096**3)
        self.assertEqual(batched.flops(32, 1024, 1024, 1024), 2 * 32 * 1024**3)
        self.assertEqual(fused.flops(5, 7, 3), 2 * 5 * 7 * 3)  # the epilogue counts as none
        self.assertEqual(peers.CASES["softmax"].flops(8, 8), 0)

    def test_error_bound_grows_with_k_for_f32_only(self):
        self.assertEqual(peers.error_bound("f16", 8192), 1e-2)
        self.assertEqual(peers.error_bound("f32", 1024), 1e-5)
        self.assertAlmostEqual(peers.error_bound("f32", 16384), 2e-5)

    @unittest.skipUnless(os.environ.get("KILN_BIN") and os.path.exists(os.environ.get("KILN_BIN", "")),
                         "KILN_BIN does not name a kiln binary")
    def test_every_case_and_default_size_is_kiln_benchs(self):
        # `kiln bench --compile-only` prints "== CASE DTYPE SIZE" for every job it would run.
        printed = subprocess.run([os.environ["KILN_BIN"], "bench", "--compile-only", "--arch", "sm_90a"], check=True,
                                 capture_output=True, text=True).stdout
        kiln_jobs = [tuple(line.split()[1:]) for line in printed.splitlines() if line.startswith("== ")]
        peer_jobs = [(c.name, dtype, "x".join(map(str, shape)))
                     for c in peers.CASES.values() if c.kiln_case for dtype in c.dtypes for shape in c.default_shapes]
        # The cases peers.py also times as Kiln: the same dtypes and sizes (in either order).
        shared = {c.name for c in peers.CASES.values() if c.kiln_case}
        self.assertEqual(sorted(j for j in kiln_jobs if j[0] in shared), sorted(peer_jobs))
        # The cases of peers only (their own modules) name kiln bench cases.
        kiln_cases = {j[0] for j in kiln_jobs}
        for name in ("quant_w4g128", "quant_w8", "attention", "attention_causal", "gemm_fp8"):
            self.assertIn(name, kiln_cases)

    def test_case_from_function_name(self):
        self.assertEqual(peers.case_for_function("gemm_f16_4096x4096x4096"), "gemm")
        self.assertEqual(peers.case_for_function("gemm_batched_f16_32x1024x1024x1024"), "gemm_batched")
        self.assertEqual(peers.case_for_function("gemm_bias_gelu_f16_4096x4096x4096"), "gemm_bias_gelu")
        self.assertEqual(peers.case_for_function("softmax_f16_128"), "softmax")
        self.assertEqual(peers.case_for_function("add_rmsnorm_f16_4096"), "add_rmsnorm")
        self.assertEqual(peers.case_for_function("gelu_chain_f32"), "gelu_chain")
        self.assertIsNone(peers.case_for_function("softmaxish"))

    def test_relative_l2_and_nan(self):
        self.assertAlmostEqual(peers.relative_l2([3.0, 4.0], [3.0, 0.0]), 4.0 / 3.0)
        self.assertEqual(peers.relative_l2([float("nan"), 1.0], [1.0, 1.0]), math.inf)
        self.assertEqual(peers.max_abs_error([1.0, 5.0], [1.5, 4.0]), 1.0)


@unittest.skipIf(np is None, "numpy is not installed")
class ResultJson(unittest.TestCase):
    def sample(self):
        row = peers.make_row("softmax", "f16", (32768, 4096), "triton", 0.125, 536870912, 4000.0, "rows=1", "passed")
        return peers.make_result("NVIDIA H200", 4000.0, [row], date="2026-11-29")

    def test_row_figures(self):
        row = self.sample()["rows"][0]
        self.assertAlmostEqual(row["gb_s"], 536870912 / 0.125e-3 / 1e9)
        self.assertAlmostEqual(row["pct_roofline"], 100 * row["gb_s"] / 4000.0)

    def test_round_trip_keeps_every_field(self):
        result = self.sample()
        back = json.loads(json.dumps(result))
        peers.validate_result(back)
        self.assertEqual(back, result)
        self.assertEqual(back["tool"], "peers.py")

    def test_gemm_rows_sit_under_the_compute_roof_past_the_ridge(self):
        flops = peers.CASES["gemm"].flops(4096, 4096, 4096)
        nbytes = peers.CASES["gemm"].min_bytes(4096, 4096, 4096, 2)
        row = peers.make_row("gemm", "f16", (4096, 4096, 4096), "torch eager", 0.2, nbytes, 4000.0, "", "passed",
                             flops, 700.0)
        self.assertAlmostEqual(row["tflop_s"], flops / 0.2e-3 / 1e12)
        self.assertAlmostEqual(row["pct_roofline"], 100 * row["tflop_s"] / 700.0)
        # M = 16 against an 8192 x 8192 weight: 16 flop/B, under the bandwidth slope.
        flops = peers.CASES["gemm"].flops(16, 8192, 8192)
        nbytes = peers.CASES["gemm"].min_bytes(16, 8192, 8192, 2)
        row = peers.make_row("gemm", "f16", (16, 8192, 8192), "triton", 0.04, nbytes, 4000.0, "", "passed",
                             flops, 700.0)
        self.assertAlmostEqual(row["pct_roofline"], 100 * row["gb_s"] / 4000.0)

    def test_result_keeps_the_gemm_rate_and_gemm_shapes(self):
        row = peers.make_row("gemm_batched", "f16", (32, 1024, 1024, 1024), "triton", 1.0, 10**8, 4000.0, "",
                             "passed", 2 * 32 * 1024**3, 700.0)
        result = peers.make_result("NVIDIA H200", 4000.0, [row], date="2026-12-01", gemm_tflops=700.0,
                                   gemm_source="torch bf16 GEMM 8192^3")
        back = json.loads(json.dumps(result))
        peers.validate_result(back)
        self.assertEqual(back["gemm_tflops"], 700.0)
        self.assertEqual(back["rows"][0]["shape"], [32, 1024, 1024, 1024])
        back["rows"][0]["shape"] = [1, 2, 3, 4, 5]
        with self.assertRaises(ValueError):
            peers.validate_result(back)

    def test_validate_rejects_an_unknown_check(self):
        result = self.sample()
        result["rows"][0]["check"] = "ok"
        with self.assertRaises(ValueError):
            peers.validate_result(result)


@unittest.skipIf(np is None, "numpy is not installed")
class CheckSavedRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def save_softmax(self, y, manifest=True):
        rng = np.random.default_rng(3)
        x = (rng.uniform(0.1, 2.0, (3, 5)) * rng.choice([-1, 1], (3, 5))).astype(np.float16)
        write_npy_like_kiln(os.path.join(self.dir, "x.npy"), x)
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        good = (e / e.sum(axis=1, keepdims=True)).astype(np.float16)
        write_npy_like_kiln(os.path.join(self.dir, "out0_y.npy"), y(good))
        if manifest:
            entry = {"name": "x", "file": "x.npy", "dtype": "f16", "shape": [3, 5]}
            out = {"name": "y", "file": "out0_y.npy", "reference": "ref0_y.npy", "dtype": "f16", "shape": [3, 5]}
            with open(os.path.join(self.dir, "manifest.json"), "w") as f:
                json.dump({"function": "softmax_f16_5", "inputs": [entry], "outputs": [out]}, f)

    def check(self, case=None):
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            status = peers.run_check(self.dir, case)
        return status, printed.getvalue()

    def test_correct_output_passes(self):
        self.save_softmax(lambda good: good)
        status, printed = self.check()
        self.assertEqual(status, 0, printed)
        self.assertIn("case softmax (f16)", printed)

    def test_wrong_output_fails(self):
        self.save_softmax(lambda good: (good * np.float16(1.1)).astype(np.float16))
        status, printed = self.check()
        self.assertEqual(status, 1, printed)
        self.assertIn("FAILED", printed)

    def test_nan_output_fails(self):
        self.save_softmax(lambda good: np.where(np.arange(15).reshape(3, 5) == 7, np.float16("nan"), good))
        self.assertEqual(self.check()[0], 1)

    def test_without_manifest_the_case_is_named(self):
        self.save_softmax(lambda good: good, manifest=False)
        self.assertEqual(self.check("softmax")[0], 0)
        with self.assertRaises(SystemExit):
            self.check()

    def test_two_outputs_matched_by_input_name(self):
        x = np.array([[1.0, 2.0], [0.5, -1.0]], dtype=np.float16)
        r = np.array([[2.0, 2.0], [0.25, -0.5]], dtype=np.float16)
        w = np.array([1.0, 2.0], dtype=np.float16)
        h = (x + r).astype(np.float16)
        hf = h.astype(np.float64)
        y = (hf / np.sqrt((hf * hf).mean(axis=1, keepdims=True) + 1e-6) * w).astype(np.float16)
        # Inputs listed out of the case's order: the check must match them by name.
        for name, a in (("x", x), ("r", r), ("w", w), ("out0_y", y), ("out1_h", h)):
            write_npy_like_kiln(os.path.join(self.dir, name + ".npy"), a)
        tensor = lambda n, f, s: {"name": n, "file": f, "dtype": "f16", "shape": s}  # noqa: E731
        manifest = {"function": "add_rmsnorm_f16_2",
                    "inputs": [tensor("w", "w.npy", [2]), tensor("x", "x.npy", [2, 2]), tensor("r", "r.npy", [2, 2])],
                    "outputs": [dict(tensor("y", "out0_y.npy", [2, 2]), reference="ref0_y.npy"),
                                dict(tensor("h", "out1_h.npy", [2, 2]), reference="ref1_h.npy")]}
        with open(os.path.join(self.dir, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        status, printed = self.check()
        self.assertEqual(status, 0, printed)
        self.assertIn("output 1 %h", printed)

    @unittest.skipUnless(os.environ.get("KILN_BIN") and os.path.exists(os.environ.get("KILN_BIN", "")),
                         "KILN_BIN does not name a kiln binary")
    def test_kiln_run_compile_only_save_is_checked(self):
        graph = os.path.join(self.dir, "g.kiln")
        with open(graph, "w") as f:
            f.write("func @layer_norm_f16_6(%x: f16[4,6], %w: f16[6], %b: f16[6]) -> (f16[4,6]) {\n"
                    "  %y = layer_norm %x, %w, %b {axis = -1, eps = 1e-05} : f16[4,6]\n"
                    "  return %y\n}\n")
        saved = os.path.join(self.dir, "saved")
        subprocess.run([os.environ["KILN_BIN"], "run", graph, "--compile-only", "--save", saved], check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, KILN_CACHE_DIR=os.path.join(self.dir, "c")))
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            status = peers.run_check(saved)
        self.assertEqual(status, 0, printed.getvalue())
        self.assertIn("case layer_norm", printed.getvalue())


@unittest.skipIf(np is None or not HAVE_MATPLOTLIB, "numpy or matplotlib is not installed")
class Plots(unittest.TestCase):
    def test_plots_from_a_synthetic_result(self):
        import plot
        rows = []
        for impl, fraction in (("kiln default", 0.9), ("torch eager", 0.6), ("triton", 0.8)):
            for c in (1024, 4096, 16384):
                for case in ("softmax", "add_rmsnorm", "layer_norm"):
                    ms = 0.2 / fraction
                    rows.append(peers.make_row(case, "f16", (2**27 // c, c), impl, ms, 536870912, 4000.0, "", "passed"))
            for case, dtype, shape in (("gelu_chain", "f16", (8192, 8192)), ("row_sum", "f32", (16384, 16384)),
                                       ("col_sum", "f32", (16384, 16384))):
                rows.append(peers.make_row(case, dtype, shape, impl, 0.3 / fraction, 10**9, 4000.0, "", "passed"))
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "r.json")
            with open(src, "w") as f:
                json.dump(peers.make_result("NVIDIA H200", 4000.0, rows, date="2026-11-29"), f)
            out = os.path.join(tmp, "png")
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(plot.main([src, "--out", out]), 0)
            names = sorted(os.listdir(out))
            self.assertEqual(names, ["add_rmsnorm_f16.png", "layer_norm_f16.png", "roofline_bars.png",
                                     "softmax_f16.png"])
            for name in names:
                with open(os.path.join(out, name), "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_merge_prefers_the_later_file_and_rescales_to_the_first_copy_figure(self):
        import plot
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, (copy, ms) in enumerate(((4000.0, 1.0), (2000.0, 0.5))):
                row = peers.make_row("softmax", "f16", (4, 8), "triton", ms, 10**9, copy, "", "passed")
                paths.append(os.path.join(tmp, f"{i}.json"))
                with open(paths[-1], "w") as f:
                    json.dump(peers.make_result("H200", copy, [row]), f)
            rows, copy_gbs, _, _ = plot.load_results(paths)
        self.assertEqual(copy_gbs, 4000.0)
        self.assertEqual(len(rows), 1)
        self.assertAlmostEqual(rows[0]["gb_s"], 2000.0)
        self.assertAlmostEqual(rows[0]["pct_roofline"], 50.0)


@unittest.skipIf(np is None, "needs numpy")
class KilnImplementationTest(unittest.TestCase):
    """The "kiln" implementation's plumbing (its run needs a GPU)."""

    def test_inputs_follow_the_program_by_name_else_by_position(self):
        class Spec:
            def __init__(self, name):
                self.name = name
        self.assertEqual(peers.in_program_order([Spec("r"), Spec("x")], ["x", "r"], [1, 2]), [2, 1])
        self.assertEqual(peers.in_program_order([Spec("a"), Spec("b")], ["x", "r"], [1, 2]), [1, 2])

    def test_kiln_is_a_named_implementation(self):
        self.assertEqual(peers.IMPL_NAMES["kiln"], "kiln (python)")
        self.assertEqual(peers.IMPL_NAMES["kiln-graph"], "kiln (python, CUDA graph)")

    def test_kiln_rows_run_for_kiln_bench_cases_only(self):
        self.assertEqual(peers.case_impls(peers.CASES["swiglu"], ["compile-graph", "kiln-graph", "kiln"]),
                         ["compile-graph", "kiln-graph", "kiln"])
        self.assertNotIn("kiln-graph", peers.case_impls(peers.CASES["attention"], ["kiln-graph"]))


@unittest.skipIf(np is None, "numpy is not installed")
class Ceilings(unittest.TestCase):
    """The stream-ceiling model: seconds per byte interpolated in W / (R + W) through the read-only
    stream, the copy and the write-only stream, as runtime/stream_ceilings.cpp has it."""

    def test_a_pure_mix_gets_its_own_ceiling(self):
        self.assertEqual(peers.ceiling_gbs(10**9, 0, 4500.0, 4000.0, 4200.0), 4500.0)
        self.assertEqual(peers.ceiling_gbs(0, 10**9, 4500.0, 4000.0, 4200.0), 4000.0)

    def test_a_copy_is_the_copy_measured(self):
        self.assertAlmostEqual(peers.ceiling_gbs(2**30, 2**30, 4500.0, 4600.0, 4200.0), 4200.0, places=6)
        # each byte at its own stream's time alone: 2 / (1/4500 + 1/4000) = 2 * 4500 * 4000 / 8500
        self.assertAlmostEqual(peers.make_roof(4200.0, 4500.0, 4000.0)["streams_alone_copy_gbs"], 4235.294117647,
                               places=6)

    def test_three_reads_to_one_write(self):
        # a quarter written: halfway from the read stream to the copy, in seconds per byte
        self.assertAlmostEqual(peers.ceiling_gbs(3, 1, 4500.0, 4000.0, 4200.0), 1 / (0.5 / 4500 + 0.5 / 4200),
                               places=6)

    def test_the_ceiling_lies_between_the_streams_of_its_segment(self):
        for r, w in ((1, 99), (99, 1), (7, 3)):
            c = peers.ceiling_gbs(r, w, 4600.0, 3900.0, 4200.0)
            low, high = sorted((4600.0 if w < r else 3900.0, 4200.0))
            self.assertTrue(low < c < high, (r, w, c))

    def test_unknown_ceilings_give_none(self):
        self.assertEqual(peers.ceiling_gbs(1, 1, 4500.0, 4000.0, 0.0), 0.0)
        self.assertEqual(peers.ceiling_gbs(1, 3, 4500.0, 0.0, 4200.0), 0.0)
        self.assertEqual(peers.ceiling_gbs(0, 0, 4500.0, 4000.0, 4200.0), 0.0)
        self.assertEqual(peers.ceiling_gbs(1, 0, 4500.0, 0.0, 0.0), 4500.0)  # no write: the rest is not needed

    def test_memory_bound_rows_get_a_ceiling(self):
        roof = peers.make_roof(4200.0, 4500.0, 4000.0)
        row = peers.make_row("softmax", "f16", (32768, 4096), "triton", 0.125, 536870912, 4200.0, "", "passed",
                             written_bytes=268435456, roof=roof)
        self.assertAlmostEqual(row["ceiling_gbs"], 4200.0, places=6)  # half written: the copy's mix
        self.assertAlmostEqual(row["pct_ceiling"], 100 * row["gb_s"] / row["ceiling_gbs"])
        self.assertEqual(row["written_bytes"], 268435456)

    def test_rows_past_the_ridge_and_rows_without_a_roof_get_none(self):
        roof = peers.make_roof(4200.0, 4500.0, 4000.0)
        gemm = peers.CASES["gemm"]
        shape = (4096, 4096, 4096)
        row = peers.make_row("gemm", "f16", shape, "triton", 0.2, gemm.min_bytes(*shape, 2), 4200.0, "", "passed",
                             gemm.flops(*shape), 700.0, gemm.written_bytes(*shape, 2), roof)
        self.assertNotIn("ceiling_gbs", row)
        shape = (16, 8192, 8192)  # under the slope: a ceiling
        row = peers.make_row("gemm", "f16", shape, "triton", 0.04, gemm.min_bytes(*shape, 2), 4200.0, "", "passed",
                             gemm.flops(*shape), 700.0, gemm.written_bytes(*shape, 2), roof)
        self.assertIn("ceiling_gbs", row)
        row = peers.make_row("softmax", "f16", (4, 8), "triton", 1.0, 128, 4200.0, "", "passed", written_bytes=64)
        self.assertNotIn("ceiling_gbs", row)

    def test_written_bytes_of_each_case(self):
        written = {name: c.written_bytes for name, c in peers.CASES.items()}
        self.assertEqual(written["softmax"](2, 8, 2), 32)
        self.assertEqual(written["add_rmsnorm"](2, 8, 2), 64)  # y and h
        self.assertEqual(written["layer_norm"](2, 8, 2), 32)
        self.assertEqual(written["gelu_chain"](2, 8, 4), 64)
        self.assertEqual(written["row_sum"](2, 8, 4), 8)
        self.assertEqual(written["col_sum"](2, 8, 4), 32)
        self.assertEqual(written["middle_axis_sum"](2, 8, 4), 8 * 8 * 4)
        self.assertEqual(written["multi_axis_sum"](2, 8, 4), 8)
        self.assertEqual(written["gemm"](5, 7, 3, 2), 70)
        self.assertEqual(written["gemm_batched"](2, 5, 7, 3, 2), 140)
        for name, case in peers.CASES.items():  # a part of the bytes moved, for every default shape
            for shape in case.default_shapes:
                self.assertLessEqual(case.written_bytes(*shape, 2), case.min_bytes(*shape, 2), (name, shape))

    def test_result_keeps_the_roof(self):
        roof = peers.make_roof(4200.0, 4500.0, 4000.0, "triton read", "fill_")
        row = peers.make_row("softmax", "f16", (4, 8), "triton", 1.0, 128, 4200.0, "", "passed", written_bytes=64,
                             roof=roof)
        result = peers.make_result("NVIDIA H200", 4200.0, [row], date="2026-12-02", roof=roof)
        back = json.loads(json.dumps(result))
        peers.validate_result(back)
        self.assertEqual(back["roof"]["read_gbs"], 4500.0)
        self.assertEqual(back["roof"]["write_gbs"], 4000.0)
        self.assertIn("interpolated linearly in W / (R + W)", back["roof"]["model"])
        del back["roof"]["write_gbs"]
        with self.assertRaises(ValueError):
            peers.validate_result(back)


@unittest.skipIf(np is None, "numpy is not installed")
class XlaVersions(unittest.TestCase):
    """The XLA versions, run with NumPy as the array module, against the float64 references."""

    def inputs(self, case, shape, dtype):
        rng = np.random.default_rng(5)
        return [(rng.uniform(0.1, 2.0, s) * rng.choice([-1, 1], s)).astype(dtype) for _, s in case.inputs(*shape)]

    def test_every_memory_bound_case_has_one_and_it_computes_the_case(self):
        for name in ("softmax", "add_rmsnorm", "layer_norm", "gelu_chain", "row_sum", "col_sum", "middle_axis_sum",
                     "multi_axis_sum"):
            case = peers.CASES[name]
            self.assertIn("xla", case.impls, name)
            arrays = self.inputs(case, (3, 37), np.float32)
            outs = case.xla(np, *arrays)
            refs = case.reference(peers.NumpyOps, *[a.astype(np.float64) for a in arrays], "f32")
            self.assertEqual(len(outs), len(refs), name)
            for out, ref in zip(outs, refs):
                self.assertEqual(out.dtype, np.float32, name)
                self.assertLess(peers.relative_l2(out, np.reshape(ref, out.shape)), 1e-6, name)

    def test_f16_storage_outside_f32_inside(self):
        for name in ("softmax", "add_rmsnorm", "layer_norm", "gelu_chain"):
            case = peers.CASES[name]
            arrays = self.inputs(case, (4, 256), np.float16)
            outs = case.xla(np, *arrays)
            refs = case.reference(peers.NumpyOps, *[a.astype(np.float64) for a in arrays], "f16")
            for out, ref in zip(outs, refs):
                self.assertEqual(out.dtype, np.float16, name)
                self.assertLess(peers.relative_l2(out, ref), 1e-3, name)

    def test_the_gemm_cases_have_none(self):
        self.assertIsNone(peers.CASES["gemm"].xla)
        self.assertNotIn("xla", peers.CASES["gemm"].impls)


@unittest.skipIf(np is None, "numpy is not installed")
class WallClockTimer(unittest.TestCase):
    def test_batches_of_back_to_back_calls(self):
        now = {"t": 0.0}

        def launch():  # each call takes 2^-10 s on the fake clock: exact in binary
            now["t"] += 2.0**-10
            return "result"

        waits = []
        ms, calls = peers_gpu.time_wall_ms(launch, waits.append, reps=3, batch_s=2.0**-5, clock=lambda: now["t"])
        self.assertEqual(calls, 32)  # 2^-5 s of calls in a batch
        self.assertAlmostEqual(ms, 1e3 * 2.0**-10)
        self.assertEqual(len(waits), 1 + 1 + 3)  # warm-up, the single call, one a batch
        self.assertEqual(set(waits), {"result"})

    def test_long_calls_still_get_a_batch(self):
        now = {"t": 0.0}

        def launch():
            now["t"] += 1.0
            return None

        ms, calls = peers_gpu.time_wall_ms(launch, lambda _: None, reps=1, clock=lambda: now["t"])
        self.assertEqual(calls, 10)
        self.assertAlmostEqual(ms, 1000.0)


@unittest.skipIf(np is None, "numpy is not installed")
class AttentionCase(unittest.TestCase):
    def test_sizes(self):
        pa = peers_attention
        self.assertEqual(pa.parse_size("4x16x4096x128"), [pa.AttentionShape(4, 16, 16, 4096, 4096, 128, False)])
        self.assertEqual(pa.parse_size("4x16x4096x128c"), [pa.AttentionShape(4, 16, 16, 4096, 4096, 128, True)])
        self.assertEqual(pa.parse_size("8x32x1x8192x128"), [pa.AttentionShape(8, 32, 32, 1, 8192, 128, False)])
        self.assertEqual(pa.parse_size("8x32x1x8192x128g8"), [pa.AttentionShape(8, 32, 8, 1, 8192, 128, False)])
        self.assertEqual(pa.parse_size("2x8x64x64cg2"), pa.parse_size("2x8x64x64g2c"))
        for bad in ("4x16x4096", "4x16x4096x128x1x2", "4x16x1x8192x128c", "4x16x64x64g5", "4x16x64x64q",
                    "0x16x64x64", "4x16x64x64g0"):
            with self.assertRaises(SystemExit, msg=bad):
                pa.parse_size(bad)

    def test_shape_text_is_the_size_again(self):
        for token in ("4x16x4096x128", "4x16x4096x128c", "8x32x1x8192x128", "8x32x1x8192x128g8", "2x8x64x64cg2"):
            (shape,) = peers_attention.parse_size(token)
            self.assertEqual(peers_attention.parse_size(peers_attention.shape_text(shape)), [shape])
        (shape,) = peers_attention.parse_size("4x16x4096x128c")
        self.assertEqual(peers_attention.shape_text(shape), "4x16x4096x128c")

    def test_rows_name_causality_and_keep_every_dimension(self):
        (causal,) = peers_attention.parse_size("4x16x2048x64c")
        (gqa,) = peers_attention.parse_size("8x32x1x8192x128g8")
        self.assertEqual(peers_attention.row_case(causal), "attention_causal")
        self.assertEqual(peers_attention.row_case(gqa), "attention")
        self.assertEqual(peers_attention.row_shape(gqa), [8, 32, 8, 1, 8192, 128])

    def test_flops_count_half_when_causal(self):
        f = peers.CASES["attention"].flops
        self.assertEqual(f(*peers_attention.parse_size("4x16x4096x128")[0]), 4 * 4 * 16 * 4096 * 4096 * 128)
        self.assertEqual(f(*peers_attention.parse_size("4x16x4096x128")[0]), 549755813888)  # 550 GFLOP
        self.assertEqual(f(*peers_attention.parse_size("4x16x4096x128c")[0]), 549755813888 // 2)
        self.assertEqual(f(*peers_attention.parse_size("8x32x1x8192x128")[0]), 4 * 8 * 32 * 8192 * 128)

    def test_bytes_are_q_k_v_and_the_output(self):
        case = peers.CASES["attention"]
        (prefill,) = peers_attention.parse_size("4x16x4096x128")
        self.assertEqual(case.min_bytes(*prefill, 2), 268435456)  # 4 x 64 MiB
        self.assertEqual(case.written_bytes(*prefill, 2), 67108864)
        (decode,) = peers_attention.parse_size("8x32x1x8192x128")
        kv = 2 * 8 * 32 * 8192 * 128 * 2
        self.assertEqual(kv, 2**30)
        self.assertEqual(case.min_bytes(*decode, 2), kv + 2 * 8 * 32 * 128 * 2)  # q and o: 0.01%
        (gqa,) = peers_attention.parse_size("8x32x1x8192x128g8")
        self.assertEqual(case.min_bytes(*gqa, 2), kv // 4 + 2 * 8 * 32 * 128 * 2)

    def test_default_shapes(self):
        texts = [peers_attention.shape_text(s) for s in peers.CASES["attention"].default_shapes]
        self.assertEqual(texts, ["4x16x4096x128", "4x16x4096x128c", "4x16x2048x64c", "4x16x4097x128",
                                 "8x32x1x8192x128", "8x32x1x8192x128g8"])

    def test_one_key_gives_its_value(self):
        q = np.array([[[[0.3, -2.0]]]])
        k = np.array([[[[1.0, 5.0]]]])
        v = np.array([[[[3.0, -1.0]]]])
        np.testing.assert_allclose(peers_attention.reference_numpy(q, k, v, False), v)

    def test_equal_scores_average_the_values(self):
        q = np.zeros((1, 1, 1, 2))
        k = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
        v = np.array([[[[2.0, 0.0], [0.0, 4.0]]]])
        np.testing.assert_allclose(peers_attention.reference_numpy(q, k, v, False), [[[[1.0, 2.0]]]])

    def test_causal_rows_see_the_keys_up_to_their_own(self):
        q = np.zeros((1, 1, 2, 2))
        v = np.array([[[[2.0, 0.0], [0.0, 4.0]]]])
        np.testing.assert_allclose(peers_attention.reference_numpy(q, q, v, True), [[[[2.0, 0.0], [1.0, 2.0]]]])

    def test_scores_are_scaled_by_one_over_sqrt_d(self):
        q = np.array([[[[1.0, 0.0]]]])
        k = np.array([[[[1.0, 0.0], [0.0, 0.0]]]])
        v = np.array([[[[1.0, 0.0], [0.0, 0.0]]]])
        e = math.exp(1 / math.sqrt(2))
        np.testing.assert_allclose(peers_attention.reference_numpy(q, k, v, False), [[[[e / (e + 1), 0.0]]]])

    def test_grouped_query_heads_share_their_group_s_keys(self):
        rng = np.random.default_rng(2)
        q, k, v = rng.normal(size=(1, 4, 3, 8)), rng.normal(size=(1, 2, 5, 8)), rng.normal(size=(1, 2, 5, 8))
        out = peers_attention.reference_numpy(q, k, v, False)
        for head in range(4):  # heads 0, 1 on K/V head 0; 2, 3 on K/V head 1
            one = peers_attention.reference_numpy(q[:, head:head + 1], k[:, head // 2:head // 2 + 1],
                                                  v[:, head // 2:head // 2 + 1], False)
            np.testing.assert_allclose(out[:, head:head + 1], one)

    def test_decode_plan_splits_the_keys_without_an_empty_split(self):
        self.assertEqual(peers_attention.decode_plan(1, 256, 8192, 64, 132), (3, 2752))
        self.assertEqual(peers_attention.decode_plan(4, 64, 8192, 64, 132), (9, 960))
        self.assertEqual(peers_attention.decode_plan(1, 1024, 8192, 64, 132)[0], 1)  # enough programs already
        for programs, kv_len in ((1, 100), (3, 8193), (64, 4097), (7, 64), (200, 300000)):
            splits, per_split = peers_attention.decode_plan(1, programs, kv_len, 64, 132)
            self.assertEqual(per_split % 64, 0)
            self.assertLess((splits - 1) * per_split, kv_len)
            self.assertGreaterEqual(splits * per_split, kv_len)


@unittest.skipIf(np is None, "numpy is not installed")
class Fp8Case(unittest.TestCase):
    def test_bytes_match_kiln_bench(self):
        # runtime/bench_cases.cpp: the fp8 operands, the f32 scales, the bf16 output.
        self.assertEqual(peers_fp8.fp8_bytes(5, 6, 40), 5 * 40 + 6 * 40 + 4 * 11 + 2 * 30)
        self.assertEqual(peers_fp8.fp8_written(5, 6, 40), 60)
        self.assertEqual(peers_fp8.fp8_flops(5, 6, 40), 2 * 5 * 6 * 40)

    def test_the_case_runs_gemm_sizes_with_b_stored_n_by_k(self):
        case = peers.CASES["gemm_fp8"]
        self.assertTrue(case.takes((4096, 4096, 4096)))
        self.assertEqual(dict(case.inputs(5, 6, 40))["b"], (6, 40))
        self.assertEqual(case.baseline, "scaled-mm")
        self.assertFalse(case.kiln_case)  # named with --cases; `kiln bench gemm_fp8` merges its rows


@unittest.skipIf(np is None, "numpy is not installed")
class QuantCase(unittest.TestCase):
    def test_formats(self):
        pq = peers_quant
        self.assertEqual(pq.parse_format("w4g128"), pq.QuantFormat(4, 128, False))
        self.assertEqual(pq.parse_format("w4g128z"), pq.QuantFormat(4, 128, True))
        self.assertEqual(pq.parse_format("w8"), pq.QuantFormat(8, None, False))
        self.assertEqual(pq.group_size(pq.parse_format("w8"), 8192), 8192)  # one scale a row
        for bad in ("w3", "w4g", "w4g0", "x4", "w4z128", ""):
            with self.assertRaises(ValueError, msg=bad):
                pq.parse_format(bad)

    def test_sizes(self):
        pq = peers_quant
        self.assertEqual(pq.parse_size("16x8192x8192w4g128"), [pq.QuantShape(16, 8192, 8192, "w4g128")])
        self.assertEqual([s.fmt for s in pq.parse_size("1x8192x8192")], list(pq.FORMATS))
        for bad in ("1x8192x100w4g128", "1x8x7w4", "1x8x8w3", "1x8", "0x8x8w8", "1x8x8w4g3"):
            with self.assertRaises(SystemExit, msg=bad):
                pq.parse_size(bad)
        self.assertEqual(pq.shape_text(pq.parse_size("64x8192x8192w8")[0]), "64x8192x8192w8")

    def test_default_shapes_are_decode_steps_against_8192_squared(self):
        shapes = peers.CASES["quant"].default_shapes
        self.assertEqual(sorted({s.m for s in shapes}), [1, 16, 64])
        self.assertEqual({(s.n, s.k) for s in shapes}, {(8192, 8192)})
        self.assertEqual({s.fmt for s in shapes}, {"w4g128", "w4g128z", "w8"})

    def test_rows(self):
        (shape,) = peers_quant.parse_size("16x8192x8192w4g128")
        self.assertEqual(peers_quant.row_case(shape), "quant_w4g128")
        self.assertEqual(peers_quant.row_shape(shape), [16, 8192, 8192])

    def test_bytes_are_the_weight_s(self):
        pq = peers_quant
        self.assertEqual(pq.weight_bytes(8192, 8192, "w4g128", 2), 8192 * 8192 // 2 + 8192 * 64 * 2)
        self.assertEqual(pq.weight_bytes(8192, 8192, "w4g128", 2), 34603008)
        self.assertEqual(pq.weight_bytes(8192, 8192, "w4g128z", 2), 34603008 + 8192 * 64 * 2)
        self.assertEqual(pq.weight_bytes(8192, 8192, "w8", 2), 8192 * 8192 + 8192 * 2)
        case = peers.CASES["quant"]
        (shape,) = pq.parse_size("16x8192x8192w4g128")
        self.assertEqual(case.min_bytes(*shape, 2), 34603008)
        self.assertEqual(case.written_bytes(*shape, 2), 0)  # read only: its ceiling is the read ceiling
        self.assertEqual(case.flops(*shape), 2 * 16 * 8192 * 8192)

    def test_nibbles_even_index_low(self):
        pack = peers_quant.pack_int4
        np.testing.assert_array_equal(pack([[1, 2]]), [[0x21]])
        np.testing.assert_array_equal(pack([[-1, 0]]), [[0x0F]])
        np.testing.assert_array_equal(pack([[0, -8]]), [[0x80]])
        np.testing.assert_array_equal(pack([[7, -8, -1, 3]]), [[0x87, 0x3F]])
        self.assertEqual(pack([[1, 2]]).dtype, np.uint8)
        for bad in ([[1, 2, 3]], [[8, 0]], [[-9, 0]]):
            with self.assertRaises(ValueError):
                pack(bad)

    def test_pack_and_unpack_round_trip_every_value(self):
        rng = np.random.default_rng(4)
        w = np.stack([rng.permutation(np.arange(-8, 8)) for _ in range(5)]).astype(np.int8)  # [5, 16]
        packed = peers_quant.pack_int4(w)
        self.assertEqual(packed.shape, (5, 8))
        back = peers_quant.unpack_int4(packed)
        self.assertEqual(back.dtype, np.int8)
        np.testing.assert_array_equal(back, w)
        every_byte = np.arange(256, dtype=np.uint8).reshape(2, 128)
        np.testing.assert_array_equal(peers_quant.pack_int4(peers_quant.unpack_int4(every_byte)), every_byte)

    def test_dequantize_subtracts_the_zero_point_then_scales_per_group(self):
        w, s, z = [[1, 2, 3, 4]], [[0.5, 2.0]], [[1.0, -1.0]]
        np.testing.assert_allclose(peers_quant.dequantize(w, s, z, 2), [[0.0, 0.5, 8.0, 10.0]])
        np.testing.assert_allclose(peers_quant.dequantize(w, s, None, 2), [[0.5, 1.0, 6.0, 8.0]])
        np.testing.assert_allclose(peers_quant.dequantize(w, [[0.5]], None, 4), [[0.5, 1.0, 1.5, 2.0]])

    def test_reference_is_x_times_the_dequantised_weight_transposed(self):
        x = [[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]]
        y = peers_quant.reference_numpy(x, [[1, 2, 3, 4], [0, 0, 0, 1]], [[0.5, 2.0], [1.0, 1.0]],
                                        [[1.0, -1.0], [0.0, 0.0]], 2)
        np.testing.assert_allclose(y, [[18.5, 1.0], [0.0, 0.0]])

    def test_torch_int4_layout_puts_the_even_index_high(self):
        op = peers_quant.int4pack_operand
        np.testing.assert_array_equal(op(np.array([[-8, 7]], dtype=np.int8)), [[0x0F]])  # q = 0, 15
        np.testing.assert_array_equal(op(np.array([[7, -8]], dtype=np.int8)), [[0xF0]])
        np.testing.assert_array_equal(op(np.array([[0, 1]], dtype=np.int8)), [[0x89]])

    def test_torch_scales_and_zeros_give_kiln_s_dequantisation(self):
        rng = np.random.default_rng(8)
        n, k, group = 3, 12, 4
        w = rng.integers(-8, 8, (n, k))
        s = rng.uniform(0.5, 1.5, (n, k // group))
        z = rng.integers(-2, 3, (n, k // group)).astype(np.float64)
        pairs = peers_quant.int4pack_scales_and_zeros(s, z)
        self.assertEqual(pairs.shape, (k // group, n, 2))
        q = w + 8  # torch's 0..15
        cols = np.arange(k) // group
        torch_style = (q - 8) * pairs[cols, :, 0].T + pairs[cols, :, 1].T  # (q - 8) * scale + zero
        np.testing.assert_allclose(torch_style, peers_quant.dequantize(w, s, z, group))
        no_zero = peers_quant.int4pack_scales_and_zeros(s, None)
        np.testing.assert_array_equal(no_zero[..., 1], 0.0)

    def test_inputs_name_the_stored_tensors(self):
        self.assertEqual(peers_quant.quant_inputs(16, 8192, 8192, "w4g128z"),
                         [("x", (16, 8192)), ("w", (8192, 4096)), ("s", (8192, 64)), ("z", (8192, 64))])
        self.assertEqual(peers_quant.quant_inputs(1, 64, 32, "w8"), [("x", (1, 32)), ("w", (64, 32)), ("s", (64, 1))])


@unittest.skipIf(np is None, "numpy is not installed")
class PeerCasePlumbing(unittest.TestCase):
    def test_peer_cases_are_not_kiln_bench_s(self):
        self.assertIn("attention", peers.CASES)
        self.assertIn("quant", peers.CASES)
        self.assertNotIn("attention", peers.KILN_CASES)
        self.assertNotIn("quant", peers.KILN_CASES)
        self.assertIsNone(peers.case_for_function("attention_f16_4x16x4096x128"))

    def test_every_impl_is_named_and_built(self):
        for case in peers.CASES.values():
            for impl in case.impls:
                self.assertIn(impl, peers.IMPL_NAMES, (case.name, impl))
                if not case.kiln_case:
                    self.assertIn(impl, case.builders, (case.name, impl))
        self.assertEqual(peers.IMPL_NAMES["compile-graph"], "torch.compile (CUDA graph)")
        self.assertEqual(peers.IMPL_NAMES["xla"], "jax.jit (XLA)")
        self.assertEqual(set(peers.CASES["attention"].impls), {"sdpa-cudnn", "sdpa-flash", "sdpa-efficient", "triton"})
        self.assertEqual(set(peers.CASES["quant"].impls), {"cublas", "int4pack", "compile"})
        self.assertIn("compile-graph", peers.CASES["softmax"].impls)
        self.assertIn("compile-graph", peers.CASES["gemm"].impls)

    def test_sizes_per_case(self):
        attention, quant, softmax = (peers.CASES[n] for n in ("attention", "quant", "softmax"))
        shapes = peers.case_shapes(attention, "4x16x4096x128c,8x32x1x8192x128g8", True)
        self.assertEqual([attention.text(s) for s in shapes], ["4x16x4096x128c", "8x32x1x8192x128g8"])
        self.assertEqual(peers.case_shapes(attention, None, True), list(attention.default_shapes))
        self.assertEqual(len(peers.case_shapes(quant, "1x8192x8192,16x8192x8192w8", True)), 4)
        self.assertEqual(peers.case_shapes(softmax, "4096", True), [(32768, 4096)])
        with self.assertRaises(SystemExit):
            peers.case_shapes(attention, "4096", True)

    def test_the_baseline_runs_first(self):
        quant, attention, softmax = (peers.CASES[n] for n in ("quant", "attention", "softmax"))
        self.assertEqual(peers.case_impls(quant, ["compile", "cublas"]), ["cublas", "compile"])
        self.assertEqual(peers.case_impls(quant, None)[0], "cublas")
        self.assertEqual(peers.case_impls(attention, ["kiln", "triton", "eager"]), ["triton"])
        self.assertEqual(peers.case_impls(softmax, ["kiln", "eager"]), ["kiln", "eager"])

    def test_peer_rows_validate(self):
        rows = [peers.make_row("attention_causal", "f16", [4, 16, 16, 4096, 4096, 128], "triton", 1.0, 268435456,
                               4200.0, "", "passed", 274877906944, 700.0),
                peers.make_row("quant_w4g128", "bf16", [16, 8192, 8192], "cuBLAS (dequantised)", 0.03, 34603008,
                               4200.0, "", "passed", 2 * 16 * 8192**2, 700.0)]
        result = json.loads(json.dumps(peers.make_result("NVIDIA H200", 4200.0, rows, date="2026-12-02")))
        peers.validate_result(result)
        result["rows"][0]["shape"] = [4, 16, 4096, 128]
        with self.assertRaises(ValueError):
            peers.validate_result(result)

    def test_printed_rows_show_the_ceiling_and_the_baseline(self):
        roof = peers.make_roof(4200.0, 4500.0, 4000.0)
        row = peers.make_row("quant_w4g128", "bf16", [1, 8192, 8192], "torch.compile", 0.0123, 34603008, 4200.0,
                             "cfg", "passed", 2 * 8192**2, 700.0, 0, roof)
        row.update(baseline="cuBLAS (dequantised)", vs_baseline=2.5)
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            peers.print_header()
            peers.print_row(row, 1e-3, "1x8192x8192w4g128")
        text = printed.getvalue()
        self.assertIn("%ceil", text)
        self.assertIn("0.01230", text)  # short rows print five decimals of ms
        self.assertIn("speed 2.50x cuBLAS (dequantised)'s", text)
        self.assertIn(f"{row['pct_ceiling']:.1f}", text)


@unittest.skipIf(np is None or not HAVE_TORCH, "numpy or torch is not installed")
class TorchHalves(unittest.TestCase):
    """The torch versions of the helpers, on the CPU, against the NumPy ones."""

    def test_quant_bytes_in_torch(self):
        import torch
        rng = np.random.default_rng(6)
        w = rng.integers(-8, 8, (6, 32)).astype(np.int8)
        packed = peers_quant.pack_int4_torch(torch.from_numpy(w))
        np.testing.assert_array_equal(packed.numpy(), peers_quant.pack_int4(w))
        np.testing.assert_array_equal(peers_quant.unpack_int4_torch(packed).numpy(), w)
        np.testing.assert_array_equal(peers_quant.int4pack_operand(torch.from_numpy(w)).numpy(),
                                      peers_quant.int4pack_operand(w))
        s = rng.uniform(0.5, 1.5, (6, 4))
        z = rng.integers(-2, 3, (6, 4)).astype(np.float64)
        np.testing.assert_allclose(peers_quant.int4pack_scales_and_zeros(torch.from_numpy(s), torch.from_numpy(z)),
                                   peers_quant.int4pack_scales_and_zeros(s, z))
        np.testing.assert_allclose(
            peers_quant.dequantize_torch(torch.from_numpy(w), torch.from_numpy(s), torch.from_numpy(z), 8,
                                         torch.float64), peers_quant.dequantize(w, s, z, 8))

    def test_dequant_linear_is_the_reference(self):
        import torch
        rng = np.random.default_rng(7)
        x = rng.uniform(-1, 1, (3, 32))
        w = rng.integers(-8, 8, (5, 32)).astype(np.int8)
        s = rng.uniform(0.5, 1.5, (5, 2))
        z = rng.integers(-2, 3, (5, 2)).astype(np.float64)
        want = peers_quant.reference_numpy(x, w, s, z, 16)
        got = peers_quant.dequant_linear(torch.from_numpy(x), peers_quant.pack_int4_torch(torch.from_numpy(w)),
                                         torch.from_numpy(s), torch.from_numpy(z), 4, 16)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
        shape = peers_quant.QuantShape(3, 5, 32, "w4g16z")
        inputs = [torch.from_numpy(x), peers_quant.pack_int4_torch(torch.from_numpy(w)), torch.from_numpy(s),
                  torch.from_numpy(z)]
        np.testing.assert_allclose(peers_quant.reference_torch(shape, inputs)[0].numpy(), want, rtol=1e-12)

    def test_attention_reference_in_torch(self):
        import torch
        rng = np.random.default_rng(9)
        for token in ("1x4x7x16c", "2x4x1x9x8g2", "1x2x5x6x8"):
            (shape,) = peers_attention.parse_size(token)
            q = rng.normal(size=(shape.batch, shape.heads, shape.q_len, shape.head_dim))
            k = rng.normal(size=(shape.batch, shape.kv_heads, shape.kv_len, shape.head_dim))
            v = rng.normal(size=k.shape)
            got = peers_attention.reference_torch(shape, [torch.from_numpy(a) for a in (q, k, v)])[0]
            np.testing.assert_allclose(got.numpy(), peers_attention.reference_numpy(q, k, v, shape.causal),
                                       rtol=1e-10, err_msg=token)


TRITON_INTERPRETED = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, sys.argv[1])
import numpy as np, torch
import peers_attention as pa
torch.manual_seed(3)
worst = 0.0
for token, block in (("1x4x40x16cg2", (32, 16)), ("1x2x33x47x32", (16, 16)), ("1x2x70x16c", (16, 32)),
                     ("1x4x1x300x32g2", None), ("2x2x1x100x16", None), ("1x2x3x200x16", None)):
    (shape,) = pa.parse_size(token)
    q = (torch.rand(shape.batch, shape.heads, shape.q_len, shape.head_dim) * 4 - 2).half()
    k = (torch.rand(shape.batch, shape.kv_heads, shape.kv_len, shape.head_dim) * 4 - 2).half()
    v = (torch.rand(shape.batch, shape.kv_heads, shape.kv_len, shape.head_dim) * 4 - 2).half()
    out = torch.full_like(q, float("nan"))
    launch, config = pa.triton_attention(q, k, v, out, shape.causal, block)
    launch()
    ref = pa.reference_numpy(q.double().numpy(), k.double().numpy(), v.double().numpy(), shape.causal)
    err = np.linalg.norm(out.double().numpy() - ref) / np.linalg.norm(ref)
    print(token, err, config() if callable(config) else config)
    worst = max(worst, err if np.isfinite(err) else np.inf)
print("worst", worst)
"""


@unittest.skipIf(np is None or not (HAVE_TORCH and HAVE_TRITON), "numpy, torch or triton is not installed")
class TritonAttentionInterpreted(unittest.TestCase):
    def test_prefill_causal_ragged_grouped_and_decode_splits(self):
        # Triton's interpreter runs the kernel on the CPU (fp16: its bf16 dot is not exact); a process
        # of its own, since TRITON_INTERPRET is read when triton is imported.
        done = subprocess.run([sys.executable, "-c", TRITON_INTERPRETED, HERE], capture_output=True, text=True,
                              timeout=600)
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        self.assertIn("key split(s)", done.stdout)
        self.assertIn("+ a combine kernel", done.stdout)
        worst = float(done.stdout.strip().splitlines()[-1].split()[1])
        self.assertLess(worst, 2e-3, done.stdout)


@unittest.skipIf(np is None or not (HAVE_TORCH and HAVE_JAX), "numpy, torch or jax is not installed")
class XlaOnTheCpu(unittest.TestCase):
    def test_jax_runs_the_case_on_torch_s_tensors(self):
        import torch
        gen = torch.Generator().manual_seed(2)
        for name, dtype, kind in (("softmax", torch.float16, "f16"), ("add_rmsnorm", torch.float32, "f32"),
                                  ("multi_axis_sum", torch.float32, "f32")):
            case = peers.CASES[name]
            inputs = [(torch.rand(s, generator=gen) * 1.9 + 0.1).to(dtype) for _, s in case.inputs(4, 64)]
            refs = case.reference(peers.TorchOps, *[t.double() for t in inputs], kind)
            run, holder, config, timer = peers.build_impl("xla", case, inputs, None, (4, 64))
            run()
            self.assertEqual(len(holder["outs"]), len(refs))
            for out, ref in zip(holder["outs"], refs):
                self.assertEqual(out.dtype, dtype)
                self.assertLess(peers.relative_l2(out.double().numpy(), ref.numpy()), 1e-3, name)
            self.assertGreater(timer(run), 0.0)
            self.assertIn("back-to-back calls", config())


if __name__ == "__main__":
    if np is None:
        print("bench/test_peers.py: skipped: python3 has no numpy")
        sys.exit(77)
    unittest.main()
