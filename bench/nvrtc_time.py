#!/usr/bin/env python3
"""Times NVRTC on CUDA files with the options Kiln's runtime passes (runtime/nvrtc.cpp),
best of three compiles each, on this machine: the compile time a user waits for a kernel
(`kiln opt FILE.kiln --emit=cuda --arch=sm_90a > k.cu` writes one to time).

    usage: python3 bench/nvrtc_time.py [--arch sm_90a] FILE.cu ...
"""
import argparse
import ctypes
import os
import time


def nvrtc():
    cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    for sub in ("lib64", "lib"):
        path = os.path.join(cuda, sub, "libnvrtc.so.13")
        if os.path.exists(path):
            return ctypes.CDLL(path), os.path.join(cuda, "include")
    raise SystemExit(f"libnvrtc.so.13 not found under {cuda}")


def compile_ms(lib, include, arch, path):
    source = open(path, "rb").read()
    program = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(program), source, os.path.basename(path).encode(), 0, None, None):
        raise SystemExit(f"{path}: nvrtcCreateProgram failed")
    options = [f"-arch={arch}", "-std=c++17", "-default-device", f"--include-path={include}", "-lineinfo"]
    argv = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    start = time.perf_counter()
    status = lib.nvrtcCompileProgram(program, len(options), argv)
    ms = (time.perf_counter() - start) * 1e3
    lib.nvrtcDestroyProgram(ctypes.byref(program))
    if status:
        raise SystemExit(f"{path}: NVRTC failed (status {status})")
    return ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    lib, include = nvrtc()
    for path in args.files:
        best = min(compile_ms(lib, include, args.arch, path) for _ in range(3))
        print(f"{path}: {best:.0f} ms (best of 3, {args.arch})")


if __name__ == "__main__":
    main()
