// The GPU reference product: its CUDA source and its host side. See reference_matmul.h.
#include "runtime/reference_matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"
#include "runtime/helper_kernel.h"
#include "runtime/timer.h"

namespace kiln::runtime {

namespace {

constexpr unsigned kThreads = 256;
constexpr int64_t kTile = 64;            // BM = BN: outputs per block along M and N
constexpr unsigned kMaxGridYZ = 65535;   // CUDA's limit on grid.y and grid.z

// ELEM_T and LOAD (an element as a float, exactly) come from the prefix for the dtype.
// A(m, k) = a[offset + m * a_m + k * a_k]; B(k, n) = b[offset + k * b_k + n * b_n]; the
// per-batch offsets are in `offsets` (A's, then B's, per output matrix), 0 strides where
// a batch dim broadcasts. C is packed fp32 [batches, M, N].
constexpr const char* kSource = R"(
#define BM 64
#define BN 64
#define BK 32
extern "C" __global__ void __launch_bounds__(256) kiln_reference_matmul(
    const ELEM_T* __restrict__ a, const ELEM_T* __restrict__ b, float* __restrict__ c,
    const long long* __restrict__ offsets, long long batches, long long m_size, long long n_size,
    long long k_size, long long a_m, long long a_k, long long b_k, long long b_n, int a_k_contiguous,
    int b_n_contiguous) {
  __shared__ float as[BK][BM + 1];  // +1: the tile loads below write columns without bank conflicts
  __shared__ float bs[BK][BN + 1];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const long long n0 = (long long)blockIdx.x * BN;
  for (long long batch = blockIdx.z; batch < batches; batch += gridDim.z) {
    const ELEM_T* pa = a + offsets[2 * batch];
    const ELEM_T* pb = b + offsets[2 * batch + 1];
    float* pc = c + batch * m_size * n_size;
    for (long long m0 = (long long)blockIdx.y * BM; m0 < m_size; m0 += (long long)gridDim.y * BM) {
      float acc[4][4], lost[4][4];  // the running sum, and what its additions rounded away
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = lost[i][j] = 0.0f;
      for (long long k0 = 0; k0 < k_size; k0 += BK) {
        // Consecutive threads walk each operand's contiguous dim, so loads coalesce.
        for (int e = t; e < BM * BK; e += blockDim.x) {
          const int mm = a_k_contiguous ? e / BK : e % BM, kk = a_k_contiguous ? e % BK : e / BM;
          const long long m = m0 + mm, k = k0 + kk;
          as[kk][mm] = m < m_size && k < k_size ? LOAD(pa[m * a_m + k * a_k]) : 0.0f;
        }
        for (int e = t; e < BK * BN; e += blockDim.x) {
          const int kk = b_n_contiguous ? e / BN : e % BK, nn = b_n_contiguous ? e % BN : e / BK;
          const long long k = k0 + kk, n = n0 + nn;
          bs[kk][nn] = k < k_size && n < n_size ? LOAD(pb[k * b_k + n * b_n]) : 0.0f;
        }
        __syncthreads();
        // The tile's own sum first, then one compensated (Kahan) addition to the running
        // sum, so that the error does not grow with the number of tiles.
        float part[4][4];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) part[i][j] = 0.0f;
        for (int kk = 0; kk < BK; ++kk)
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) part[i][j] = fmaf(as[kk][ty + 16 * i], bs[kk][tx + 16 * j], part[i][j]);
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            const float y = part[i][j] - lost[i][j], t = acc[i][j] + y;
            lost[i][j] = (t - acc[i][j]) - y;  // no multiply here, so nothing contracts into an FMA
            acc[i][j] = t;
          }
        __syncthreads();
      }
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const long long m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
          if (m < m_size && n < n_size) pc[m * n_size + n] = acc[i][j];
        }
    }
  }
}
)";

// Per output matrix (row-major over the result's batch dims): where A's and B's
// matrices start, in elements. A batch dim of size 1 (or missing) in an operand reads
// the same matrix for every index of that dim.
std::vector<long long> batch_offsets(const Shape& out_batch, const Shape& a_shape, const Shape& b_shape,
                                     int64_t a_matrix, int64_t b_matrix) {
  const size_t rank = out_batch.size();
  // Each operand's stride (in matrices) per output batch dim, 0 where it broadcasts.
  auto strides_of = [&](const Shape& s, int64_t matrix) {
    std::vector<int64_t> strides(rank, 0);
    const size_t own = s.size() - 2;  // the operand's batch rank
    int64_t stride = matrix;
    for (size_t d = own; d-- > 0;) {
      const size_t out_d = rank - own + d;
      if (s[d] != 1) strides[out_d] = stride;
      stride *= s[d];
    }
    return strides;
  };
  const std::vector<int64_t> sa = strides_of(a_shape, a_matrix), sb = strides_of(b_shape, b_matrix);
  const int64_t count = numel(out_batch);
  std::vector<long long> offsets(static_cast<size_t>(2 * count));
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < count; ++e) {
    long long oa = 0, ob = 0;
    for (size_t d = 0; d < rank; ++d) {
      oa += index[d] * sa[d];
      ob += index[d] * sb[d];
    }
    offsets[static_cast<size_t>(2 * e)] = oa;
    offsets[static_cast<size_t>(2 * e + 1)] = ob;
    for (size_t d = rank; d-- > 0;) {  // odometer over the batch dims
      if (++index[d] < out_batch[d]) break;
      index[d] = 0;
    }
  }
  return offsets;
}

}  // namespace

std::string reference_matmul_source(DType t) {
  switch (t) {
    case DType::f32: return std::string("#define ELEM_T float\n#define LOAD(x) (x)\n") + kSource;
    case DType::f16:
      return std::string("#include <cuda_fp16.h>\n#define ELEM_T __half\n#define LOAD(x) __half2float(x)\n") + kSource;
    case DType::bf16:
      return std::string("#include <cuda_bf16.h>\n#define ELEM_T __nv_bfloat16\n#define LOAD(x) __bfloat162float(x)\n") +
             kSource;
    default: break;
  }
  throw Error(fmt::format("the GPU reference matmul takes f16, bf16 or f32 operands, not {}", dtype_name(t)));
}

HostTensor gpu_matmul(const ir::Node& n, const HostTensor& a, const HostTensor& b) {
  if (n.op != ir::OpKind::Matmul || n.operands.size() != 2)
    throw Error(fmt::format("gpu_matmul: {} is not a matmul", ir::op_name(n.op)));
  if (a.type != n.operands[0]->type || b.type != n.operands[1]->type)
    throw Error(fmt::format("gpu_matmul: operands {} and {} given for a matmul of {} and {}", a.type.str(),
                            b.type.str(), n.operands[0]->type.str(), n.operands[1]->type.str()));
  const TensorType& type = n.result->type;
  const bool ta = n.attrs.get_bool("transpose_a"), tb = n.attrs.get_bool("transpose_b");
  const int rank = type.rank();
  const int64_t m = type.shape[rank - 2], nn = type.shape[rank - 1];
  const int64_t k = a.type.shape[a.type.rank() - (ta ? 2 : 1)];
  const Shape batch(type.shape.begin(), type.shape.end() - 2);
  const int64_t batches = numel(batch);
  // A stored [M, K] (or [K, M] transposed), B stored [K, N] (or [N, K]).
  long long a_m = ta ? 1 : k, a_k = ta ? m : 1, b_k = tb ? 1 : nn, b_n = tb ? k : 1;
  int a_k_contiguous = ta ? 0 : 1, b_n_contiguous = tb ? 0 : 1;

  Device& device = Device::get();
  CUfunction fn = helper_kernel(reference_matmul_source(a.type.dtype), kReferenceMatmulEntry, device.compile_target());
  DeviceBuffer da = DeviceBuffer::from_host(a), db = DeviceBuffer::from_host(b);
  const std::vector<long long> offsets = batch_offsets(batch, a.type.shape, b.type.shape, m * k, k * nn);
  DeviceBuffer doff(offsets.size() * sizeof(long long));
  doff.upload(offsets.data(), offsets.size() * sizeof(long long));
  const TensorType f32_type{DType::f32, type.shape};
  DeviceBuffer dc(static_cast<size_t>(f32_type.bytes()));

  CUdeviceptr pa = da.ptr(), pb = db.ptr(), pc = dc.ptr(), po = doff.ptr();
  long long nb = batches, ms = m, ns = nn, ks = k;
  std::vector<void*> args = {&pa, &pb, &pc, &po, &nb, &ms, &ns, &ks, &a_m, &a_k, &b_k, &b_n, &a_k_contiguous,
                             &b_n_contiguous};
  const auto tiles = [](int64_t size) { return static_cast<unsigned>((size + kTile - 1) / kTile); };
  if ((nn + kTile - 1) / kTile > 0x7fffffff)
    throw Error(fmt::format("gpu_matmul: N = {} needs more blocks than a grid holds", nn));
  const Dim3 grid{tiles(nn), std::min(tiles(m), kMaxGridYZ),
                  static_cast<unsigned>(std::min<int64_t>(batches, kMaxGridYZ))};
  if (type.numel() > 0) launch_kernel(fn, grid, Dim3{kThreads}, 0, args, kReferenceMatmulEntry);
  std::vector<std::byte> bytes(static_cast<size_t>(f32_type.bytes()));
  dc.download(bytes.data(), bytes.size());  // synchronous: waits for the kernel
  HostTensor product = HostTensor::from_bytes(f32_type, bytes.data());
  return HostTensor(type, std::move(product.values));  // rounded to the node's dtype
}

}  // namespace kiln::runtime
