// How many cycles an SM takes per wgmma m64nNk16 (bf16 in, fp32 accumulators) with the A
// operand in registers (as dequant_wgmma issues them) or in shared memory, by N and by
// warpgroups an SM: one block an SM, each warpgroup a chain of products into its own
// accumulators, three in flight (wait_group 3 before each, as the kernel does). The
// operands are zeros: the rate does not depend on the values.
// Build: nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o wgmma_rate wgmma_rate.cu
#include <cstdio>
#include <cuda_runtime.h>

template <int N> struct Acc { float v[N / 2]; };

__device__ __forceinline__ unsigned long long desc_of(unsigned addr) {
  // No swizzle; leading 128 bytes, stride 256 bytes (any legal layout: the values are zeros).
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(128 >> 4) << 16) |
         ((unsigned long long)(256 >> 4) << 32);
}

#define D8(i) "+f"(a.v[i]), "+f"(a.v[i + 1]), "+f"(a.v[i + 2]), "+f"(a.v[i + 3]), "+f"(a.v[i + 4]), "+f"(a.v[i + 5]), "+f"(a.v[i + 6]), "+f"(a.v[i + 7])

template <bool RS> __device__ __forceinline__ void product64(Acc<64>& a, const unsigned (&r)[4], unsigned long long da, unsigned long long db) {
  if (RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}"
                 : D8(0), D8(8), D8(16), D8(24) : "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "l"(db), "n"(1) : "memory");
  else
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1, 0, 0;"
                 : D8(0), D8(8), D8(16), D8(24) : "l"(da), "l"(db) : "memory");
}

template <bool RS> __device__ __forceinline__ void product128(Acc<128>& a, const unsigned (&r)[4], unsigned long long da, unsigned long long db) {
  if (RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}"
                 : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56) : "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "l"(db), "n"(1) : "memory");
  else
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1, 1, 1, 0, 0;"
                 : D8(0), D8(8), D8(16), D8(24), D8(32), D8(40), D8(48), D8(56) : "l"(da), "l"(db) : "memory");
}

template <int N, bool RS> __global__ void rate(int iters, float* sink, long long* cycles) {
  __shared__ __align__(1024) unsigned char tile[32768];
  for (int i = threadIdx.x; i < 32768 / 4; i += blockDim.x) reinterpret_cast<unsigned*>(tile)[i] = 0u;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const unsigned base = (unsigned)__cvta_generic_to_shared(tile);
  const unsigned long long da = desc_of(base), db = desc_of(base + 16384);
  // Eight sets of A registers taken in turn, as ptxas gives the kernel's (one set
  // reloaded in the loop would wait for the product that reads it).
  unsigned r[8][4];
  for (int set = 0; set < 8; ++set)
    for (int i = 0; i < 4; ++i) r[set][i] = reinterpret_cast<const volatile unsigned*>(tile)[threadIdx.x + set + i];
  Acc<N> acc;
  for (int i = 0; i < N / 2; ++i) acc.v[i] = 0.0f;
  const long long t0 = clock64();
  for (int it = 0; it < iters; it += 8) {
#pragma unroll
    for (int set = 0; set < 8; ++set) {
      asm volatile("wgmma.wait_group.sync.aligned 3;" ::: "memory");
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      if constexpr (N == 64) product64<RS>(acc, r[set], da, db);
      else product128<RS>(acc, r[set], da, db);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    }
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  const long long t1 = clock64();
  float s = 0.0f;
  for (int i = 0; i < N / 2; ++i) s += acc.v[i];
  if (s != 0.0f) sink[threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int N, bool RS> void run(int warpgroups, float* sink, long long* cycles) {
  const int iters = 4096, blocks = 132;
  rate<N, RS><<<blocks, 128 * warpgroups>>>(iters, sink, cycles);
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a);
  rate<N, RS><<<blocks, 128 * warpgroups>>>(iters, sink, cycles);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0; cudaEventElapsedTime(&ms, a, b);
  long long c = 0; cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost);
  const double products = double(iters) * warpgroups;  // an SM's
  const double flops = 2.0 * 64 * N * 16 * products * blocks;
  printf("m64n%dk16 %s, %d warpgroup(s) an SM: %.1f cycles a product an SM (block 0's clock), %.0f TFLOP/s (%.3f ms) %s\n",
         N, RS ? "A in registers" : "A in shared", warpgroups, c / products, flops / ms / 1e9, ms,
         cudaGetErrorString(cudaGetLastError()));
}

int main() {
  float* sink; long long* cycles;
  cudaMalloc(&sink, 4096 * sizeof(float)); cudaMalloc(&cycles, 132 * sizeof(long long));
  for (int w : {1, 2, 4}) {
    run<64, true>(w, sink, cycles);
    run<64, false>(w, sink, cycles);
    run<128, true>(w, sink, cycles);
    run<128, false>(w, sink, cycles);
  }
  return 0;
}
