#!/usr/bin/env python3
"""Fits the constants of kiln_gelu_erf_short (codegen/scalar_emit.cpp) and reports its error.

gelu(x) = x Phi(x), and Phi(-|x|) = erfc(z) / 2 with z = |x| / sqrt 2. Write
erfc(z) = t exp(-z^2 + P(t)) with t = 1 / (1 + c z): then P(t) = log(erfc(z) / t) + z^2 is
smooth on (0, 1] and tends to log(c / sqrt(pi)) as z grows, so a polynomial of degree 8 fits
it, and P's absolute error is erfc's relative error. The fit is least squares reweighted
toward the minimax (Lawson's iteration) over z in [0, 10] (past z = 9.4 fp32's exponential
flushes to zero), for c on a grid; the best c is kept. The kernel folds log2(e) and the 1/2
into the coefficients and evaluates exp with ex2.approx.

The second half replays the kernel's fp32 arithmetic in numpy and prints the largest
relative error of gelu by range of x against a double-precision erfc.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy && /tmp/v/bin/python scripts/fit-gelu-erf.py
"""
import math

import numpy as np

DEGREE = 8
Z_MAX = 10.0


def p_of_t(t, c):
    z = (1 / t - 1) / c
    return np.array([math.log(math.erfc(zz) / tt) + zz * zz for zz, tt in zip(z, t)])


def fit(c, iters=100):
    t = np.linspace(1 / (1 + c * Z_MAX), 1.0, 20000)
    target = p_of_t(t, c)
    vander = np.vander(t, DEGREE + 1, increasing=True)
    weight = np.ones_like(t)
    for _ in range(iters):
        root = np.sqrt(weight)
        coef, *_ = np.linalg.lstsq(vander * root[:, None], target * root, rcond=None)
        err = np.abs(vander @ coef - target)
        weight = weight * err
        weight /= weight.sum()
    return coef, float(np.max(np.abs(vander @ coef - target)))


def kernel_constants(c, coef):
    log2e = math.log2(math.e)
    folded = [np.float32(log2e * v) for v in coef]
    folded[0] = np.float32(log2e * coef[0] - 1.0)  # the 1/2 of Phi = erfc / 2
    return np.float32(c / math.sqrt(2)), np.float32(-log2e / 2), folded


def gelu_fp32(x, t_scale, exp_scale, folded):
    f = np.float32
    x = x.astype(f)
    ax = np.abs(x)
    t = (f(1) / (ax * t_scale + f(1)).astype(f)).astype(f)
    p = folded[-1]
    for coefficient in reversed(folded[:-1]):
        p = (p * t + coefficient).astype(f)
    m = (ax * exp_scale).astype(f)
    a = (ax.astype(np.float64) * m + p).astype(f)  # one fma
    h = (np.exp2(a.astype(np.float64)).astype(f) * t).astype(f)
    return (x * np.where(x > 0, (f(1) - h).astype(f), h)).astype(f)


def main():
    best = min((fit(c) + (c,) for c in np.arange(0.30, 0.56, 0.025)), key=lambda r: r[1])
    coef, err, c = best
    print(f"c = {c:.3f}, degree {DEGREE}: P's largest error {err:.2e} (erfc's relative error)")
    t_scale, exp_scale, folded = kernel_constants(c, coef)
    print(f"t = 1 / (1 + {t_scale:.9g} |x|); exponent scale {exp_scale:.9g}")
    print("coefficients, t^0 first:", ", ".join(f"{v:.9g}f" for v in folded))

    x = np.concatenate([np.linspace(-9, 14, 1000001), -np.logspace(-8, 0.9, 50000), np.logspace(-8, 1.1, 50000)])
    x = x.astype(np.float32)
    want = np.array([0.5 * float(v) * math.erfc(-float(v) / math.sqrt(2)) for v in x])
    got = gelu_fp32(x, t_scale, exp_scale, folded).astype(np.float64)
    rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    for lo, hi in ((-9, -5), (-5, -1), (-1, 0), (0, 1), (1, 5), (5, 14)):
        sel = (x >= lo) & (x < hi) & (want != 0)
        print(f"x in [{lo}, {hi}): largest relative error of gelu {rel[sel].max():.2e}")


if __name__ == "__main__":
    main()
