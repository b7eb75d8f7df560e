# Builds variants.cuh: each generated gemv kernel in its own namespace, with variants.
import re, sys
bases = {"w4m1": ("w4m1.cu", "unsigned char", 1, 8192*8192//2, 8192*64),
         "w4m16": ("w4m16.cu", "unsigned char", 16, 8192*8192//2, 8192*64),
         "w8m1": ("w8m1.cu", "signed char", 1, 8192*8192, 8192)}
LD = 'ld.global.nc.L1::no_allocate.v4.u32'
def variants(src):
    v = {"base": src}
    v["l2_128"] = src.replace(LD, 'ld.global.nc.L1::no_allocate.L2::128B.v4.u32')
    v["l2_256"] = src.replace(LD, 'ld.global.nc.L1::no_allocate.L2::256B.v4.u32')
    v["ldg_plain"] = src.replace(LD, 'ld.global.nc.v4.u32')
    # compute only: the weight loads return address bits
    co = re.sub(r'(static __device__ __forceinline__ uint4 kiln_load_stream16\(const void\* p\) \{)(.*?)(\n\})',
                lambda m: m.group(1) + '\n  const unsigned a = (unsigned)(size_t)p; return make_uint4(a, a * 3u, a * 5u, a * 7u);' + m.group(3),
                src, flags=re.S)
    assert co != src
    v["compute_only"] = co
    # loads only: everything between the activations' load and the end of the K loop becomes an xor
    a = src.index("    uint4 x_piece0[1][")
    b = src.index("  // Each warp's accumulators into shared memory")
    loop_end = src.rindex("  }\n", a, b)
    body = ("    #pragma unroll\n    for (int j = 0; j < 4; ++j) { const unsigned v = w_piece[0][j].x ^ w_piece[0][j].y ^ "
            "w_piece[0][j].z ^ w_piece[0][j].w ^ scale2[0][j]; acc[j >> 1][j & 1] += __uint_as_float(v & 0x3f7fffffu); }\n")
    v["loads_only"] = src[:a] + body + src[loop_end:]
    c = src.index("#pragma unroll\n    for (int u = 0; u < 1; ++u) {\n      #pragma unroll\n      for (int f = 0;", a)
    two = "x_piece1" in src
    xb = ("    #pragma unroll\n    for (int p = 0; p < 4; ++p) { const unsigned v = x_piece0[0][p].x ^ x_piece0[0][p].w" +
          (" ^ x_piece1[0][p].y ^ x_piece1[0][p].z" if two else "") + "; acc[0][p & 3] += __uint_as_float(v & 0x3f7fffffu); }\n")
    v["loads_x"] = src[:c] + body + xb + src[loop_end:]
    if "0x43084308u), zero2" in src:
        fo = re.sub(r'kiln_sub2_bf16\((kiln_and_xor\([^;]*?0x43084308u\)), zero2\[u\]\[[^\]]*\]\)', r'\1', src)
        fo = fo.replace("      #pragma unroll\n      for (int f = 0; f <", "      float xs[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n      #pragma unroll\n      for (int f = 0; f <")
        fo = re.sub(r'kiln_mma_bf16\(part, a, (__byte_perm\([^)]*\)), (__byte_perm\([^)]*\))\); \}',
                    r'kiln_mma_bf16(part, a, \1, \2); if (f == 0) { const unsigned o[4] = {0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u}; kiln_mma_bf16(xs, o, \1, \2); } }', fo)
        fo = re.sub(r'kiln_mma_bf16\(part, a, (p\d\d), (p\d\d)\); \}',
                    r'kiln_mma_bf16(part, a, \1, \2); if (f == 0) kiln_mma_bf16(xs, a, 0x3f803f80u, 0x3f803f80u); }', fo)
        fo = re.sub(r'fmaf\(part\[(\d)\], (s\d), ', r'fmaf(fmaf(xs[\1], -136.0f, part[\1]), \2, ', fo)
        assert "kiln_sub2_bf16(kiln_and_xor" not in fo and "xs[3]" in fo and "kiln_mma_bf16(xs" in fo
        v["fold"] = fo
    # split N: each warp its own 32 rows over a K slice of 1024 (grid 32 x 8), sums by atomics into f32
    sn = src.replace("const int n0 = (int)blockIdx.x * 32;", "const int n0 = ((int)blockIdx.x * 8 + warp) * 32;")
    sn = sn.replace("const int k_begin = 0, k_end = 8192;", "const int k_begin = (int)blockIdx.y * 1024, k_end = k_begin + 1024;")
    sn = sn.replace("const int kc0 = k_begin + warp * 128;", "const int kc0 = k_begin;")
    sn = sn.replace("kc += 1024", "kc += 128").replace("(kc + 1024)", "(kc + 128)")
    e = sn.index("  // Each warp's accumulators into shared memory")
    if "x_piece1" in src:   # weights as B: acc[f] = (token g / g + 8, rows 8f + 2t, + 1)
        tail = ("  float* yf = reinterpret_cast<float*>(out_y);\n#pragma unroll\n  for (int f = 0; f < 4; ++f) {\n"
                "    atomicAdd(yf + g * 8192 + n0 + 8 * f + 2 * t, acc[f][0]); atomicAdd(yf + g * 8192 + n0 + 8 * f + 2 * t + 1, acc[f][1]);\n"
                "    atomicAdd(yf + (g + 8) * 8192 + n0 + 8 * f + 2 * t, acc[f][2]); atomicAdd(yf + (g + 8) * 8192 + n0 + 8 * f + 2 * t + 1, acc[f][3]);\n  }\n}\n")
    else:                   # weights as A: acc[f] = (token 2t / 2t + 1, rows 16f + g, + 8)
        tail = ("  float* yf = reinterpret_cast<float*>(out_y);\n  if (t == 0) {\n#pragma unroll\n  for (int f = 0; f < 2; ++f) {\n"
                "    atomicAdd(yf + n0 + 16 * f + g, acc[f][0]); atomicAdd(yf + n0 + 16 * f + g + 8, acc[f][2]);\n  }\n  }\n}\n")
    v["splitn"] = sn[:e] + tail
    return v
out = []
table = []
for name, (f, wt, m, wbytes, sn) in bases.items():
    def load(path):
        t = open(path).read().replace('extern "C" __global__', '__global__')
        return t[t.index("// N consecutive"):]
    src = load(f)
    vv = variants(src)
    vv["emitted_now"] = load(f.replace(".cu", "_new.cu"))
    if m == 1:  # the activations staged in shared memory once (after the sums' 16 KB)
        xs = vv["emitted_now"]
        xs = xs.replace("#pragma unroll 2\n  for (", "  __nv_bfloat16* x_smem = reinterpret_cast<__nv_bfloat16*>(kiln_smem + 16384);\n"
                        "  for (int i = threadIdx.x; i < 8192 / 8; i += 256) reinterpret_cast<uint4*>(x_smem)[i] = __ldg(reinterpret_cast<const uint4*>(in_x) + i);\n"
                        "  __syncthreads();\n#pragma unroll 2\n  for (", 1)
        xs = xs.replace("__ldg(reinterpret_cast<const uint4*>(x_row0 + k + 8 * p))", "*reinterpret_cast<const uint4*>(x_smem + k + 8 * p)")
        assert "x_smem + k" in xs and "__syncthreads();\n#pragma unroll 2" in xs
        vv["now_x_smem"] = xs
    for vn, vs in vv.items():
        ns = f"{name}_{vn}"
        out.append(f"namespace {ns} {{\n{vs}\n}}  // namespace {ns}\n")
        table.append(f'  {{"{name}", "{vn}", (const void*){ns}::k0, {m}, {1 if vn == "splitn" else 0}, {wbytes}ull, {sn}ull}},\n')
open("variants.cuh", "w").write('#include <cuda_bf16.h>\n#include <cstdint>\n' + "".join(out) +
    "struct Variant { const char* base; const char* name; const void* fn; int m; int splitn; unsigned long long wbytes, scales; };\n"
    "static const Variant kVariants[] = {\n" + "".join(table) + "};\n")
