// Times gemv variants in CUDA graphs (20 launches a graph, 4 weight buffers in turn, so that
// the weight is not in L2), checks each against its base, and times plain reads of the same bytes.
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <string>
#include <cstring>
#include "variants.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void fill_bytes(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = (unsigned char)h;
  }
}
__global__ void fill_bf16(__nv_bfloat16* p, size_t n, float lo, float hi, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = __float2bfloat16(lo + (hi - lo) * (h & 0xffffff) / 16777216.0f);
  }
}
template <int U>
__global__ void __launch_bounds__(256) read_floor(const uint4* __restrict__ p, size_t n16, unsigned* sink) {
  unsigned acc = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n16; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(p + i + u * stride));
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += stride) { uint4 v = p[i]; acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// Median microseconds per launch: a graph of 20 launches, replayed 15 times.
template <class F> float time_graph(cudaStream_t st, F launch) {
  for (int i = 0; i < 4; ++i) launch(i);
  CK(cudaStreamSynchronize(st));
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 20; ++i) launch(i);
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  std::vector<float> ts;
  for (int r = 0; r < 15; ++r) {
    CK(cudaEventRecord(a, st)); CK(cudaGraphLaunch(ge, st)); CK(cudaEventRecord(b, st));
    CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms * 1000.0f / 20);
  }
  CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g));
  return median(ts);
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  const size_t max_w = 8192ull * 8192ull;
  unsigned char* w[4]; for (int i = 0; i < 4; ++i) { CK(cudaMalloc(&w[i], max_w)); fill_bytes<<<1024, 256>>>(w[i], max_w, 17u); }
  __nv_bfloat16 *x, *s, *y, *y_ref; unsigned* sink;
  CK(cudaMalloc(&x, 16 * 8192 * 2)); CK(cudaMalloc(&s, 8192 * 64 * 2)); CK(cudaMalloc(&y, 16 * 8192 * 4)); CK(cudaMalloc(&y_ref, 16 * 8192 * 2));
  CK(cudaMalloc(&sink, 4));
  fill_bf16<<<256, 256>>>(x, 16 * 8192, -1.f, 1.f, 3u); fill_bf16<<<256, 256>>>(s, 8192 * 64, 0.005f, 0.02f, 5u);
  CK(cudaDeviceSynchronize());
  // Plain reads of the same byte counts.
  for (size_t bytes : {(size_t)8192 * 8192 / 2, (size_t)8192 * 8192}) {
    for (int blocks_per_sm : {2, 4, 8}) {
      const int grid = prop.multiProcessorCount * blocks_per_sm;
      float t4 = time_graph(st, [&](int i) { read_floor<4><<<grid, 256, 0, st>>>((const uint4*)w[i % 4], bytes / 16, sink); });
      float t8 = time_graph(st, [&](int i) { read_floor<8><<<grid, 256, 0, st>>>((const uint4*)w[i % 4], bytes / 16, sink); });
      printf("read %6.1f MB  %d blocks/SM: unroll 4 %6.2f us %6.0f GB/s | unroll 8 %6.2f us %6.0f GB/s\n", bytes / 1e6, blocks_per_sm,
             t4, bytes / t4 / 1e3, t8, bytes / t8 / 1e3);
    }
  }
  CK(cudaDeviceSynchronize());
  std::vector<__nv_bfloat16> ref(16 * 8192), got(16 * 8192);
  for (const Variant& v : kVariants) {
    if (only && !strstr(v.base, only)) continue;
    const int smem = strstr(v.name, "x_smem") ? 32768 : 16384;
    CK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    auto launch = [&](int i) {
      const void* wp = w[i % 4];
      void* args[] = {(void*)&x, (void*)&wp, (void*)&s, (void*)&y};
      CK(cudaLaunchKernel(v.fn, v.splitn ? dim3(32, 8) : dim3(256), dim3(256), args, smem, st));
    };
    CK(cudaMemsetAsync(y, 0, 16 * 8192 * 4, st));
    launch(0); CK(cudaStreamSynchronize(st));
    if (v.splitn) {
      std::vector<float> f(v.m * 8192);
      CK(cudaMemcpy(f.data(), y, v.m * 8192 * 4, cudaMemcpyDeviceToHost));
      for (int i = 0; i < v.m * 8192; ++i) got[i] = __float2bfloat16(f[i]);
    } else {
      CK(cudaMemcpy(got.data(), y, v.m * 8192 * 2, cudaMemcpyDeviceToHost));
    }
    double err = 0, mx = 0;
    if (!strcmp(v.name, "base")) ref = got;
    for (int i = 0; i < v.m * 8192; ++i) {
      err = std::max(err, (double)fabsf(__bfloat162float(got[i]) - __bfloat162float(ref[i])));
      mx = std::max(mx, (double)fabsf(__bfloat162float(ref[i])));
    }
    float t = time_graph(st, launch);
    printf("%-6s %-13s %7.2f us  %6.0f GB/s of weights   max |diff| / max |base| %.2e\n", v.base, v.name, t, v.wbytes / t / 1e3, err / mx);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
