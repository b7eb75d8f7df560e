// The attention emitter (see attention_emitter.h). The kernel is one template whose
// $NAMES are filled from the kernel IR and its config; fragment layouts (PTX ISA, mma
// m16n8k16): with g = lane / 4 and t = lane % 4, an fp32 accumulator holds rows g and
// g + 8 at columns 2t and 2t + 1; an A fragment holds rows g and g + 8 at K columns 2t,
// 2t + 1 (a[0], a[1]) and 2t + 8, 2t + 9 (a[2], a[3]), so the scores of two n8 tiles
// are, packed in pairs, the A fragment of the next product over those 16 keys.
#include "codegen/attention_emitter.h"
#include "codegen/attention_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "codegen/gemm_common.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"

namespace kiln::codegen {

namespace {

// Shared memory: the query tile, then `stages` pairs of key and value tiles; every tile
// is rows of D elements in 16-byte chunks whose order in each 128-byte line is XORed
// with row % 8, so that ldmatrix's eight rows and the copies' stores hit distinct banks.
constexpr const char* kKernel = R"(// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile.
static __device__ __forceinline__ unsigned $NAME_chunk(int row, int chunk) {
  return (unsigned)(row * $ROW_BYTES + ((chunk ^ (row & 7)) << 4));
}

// Rows [row0, row0 + ROWS) of a [rows, $D] matrix with rows `ld` elements apart into the
// tile at `tile`, as 16-byte cp.async copies; rows past the end are zeros.
template <int ROWS>
static __device__ __forceinline__ void $NAME_load_tile(unsigned tile, const $T* __restrict__ src, int row0, int rows,
                                                      long long ld) {
#pragma unroll
  for (int it = 0; it < ROWS * $CHUNKS / $THREADS; ++it) {
    const int c = (int)threadIdx.x + it * $THREADS;
    const int r = c / $CHUNKS, chunk = c % $CHUNKS;
    const bool inside = row0 + r < rows;
    const $T* from = src + (inside ? (long long)(row0 + r) * ld + chunk * 8 : 0ll);
    kiln_copy_async16_zfill(tile + $NAME_chunk(r, chunk), from, inside ? 16u : 0u);
  }
}

$SCRATCH$SCORE_FUNCTION
extern "C" __global__ void __launch_bounds__($THREADS, 1) $NAME($PARAMS) {
  extern __shared__ __align__(128) unsigned char kiln_smem[];
  const unsigned smem = (unsigned)__cvta_generic_to_shared(kiln_smem);
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int q0 = ($TILE_ORDER) * $BR;
  const unsigned batch = blockIdx.y;
  const $T* __restrict__ qb = $Q + ($Q_OFFSET);
  const $T* __restrict__ kb = $K + ($K_OFFSET);
  const $T* __restrict__ vb = $V + ($V_OFFSET);
  // The key tiles this block needs: all of them, or up to its last row's diagonal.
  const int kv_end = $KV_END;
  // The keys of this block: all of them, or its split's $KV_CHUNK_NOTE.
  const int kv_first = $KV_FIRST, kv_stop = $KV_STOP;
  const int tiles = kv_stop > kv_first ? (kv_stop - kv_first + $BC - 1) / $BC : 0;

  // Prologue: the query tile and the first $AHEAD key and value tiles, one group each
  // (the query tile goes with the first).
  $NAME_load_tile<$BR>(smem, qb, q0, $SQ, $Q_LD);
#pragma unroll
  for (int t = 0; t < $AHEAD; ++t) {
    if (t < tiles) {
      $NAME_load_tile<$BC>(smem + $Q_BYTES + t * $STAGE_BYTES, kb, kv_first + t * $BC, $SKV, $K_LD);
      $NAME_load_tile<$BC>(smem + $Q_BYTES + t * $STAGE_BYTES + $KV_BYTES, vb, kv_first + t * $BC, $SKV, $V_LD);
    }
    kiln_copy_async_commit();
  }
$PROLOGUE_COMMIT
  // This warp owns $WARP_ROWS query rows, $MT tile(s) of 16; with one tile its Q fragments
  // stay in registers, with two they are read again from shared memory each key tile
  // (two tiles' outputs and scores leave no room for them).
  constexpr int kTiles = $MT;
  constexpr bool kQHeld = kTiles == 1;
  const int warp_row = warp * $WARP_ROWS;  // the warp's first row in the query tile
  unsigned qf[kQHeld ? kTiles : 1][$D / 16][4];  // the held Q rows as A fragments, one per 16 of D
  float o[kTiles][$D / 8][4];                     // the output rows: fp32 accumulators, one per 8 of D
#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
    for (int c = 0; c < $D / 8; ++c) o[mt][c][0] = o[mt][c][1] = o[mt][c][2] = o[mt][c][3] = 0.0f;
  // Per row (2 mt + h: rows g and g + 8 of tile mt): the running max of the scores, this
  // lane's part of the running sum of their exponentials, and the last key the row sees.
  float row_max[2 * kTiles], row_sum[2 * kTiles];
  int last_key[2 * kTiles];
#pragma unroll
  for (int i = 0; i < 2 * kTiles; ++i) {
    row_max[i] = __int_as_float(0xff800000);
    row_sum[i] = 0.0f;
    [[maybe_unused]] const int row = q0 + warp_row + (i >> 1) * 16 + (i & 1) * 8 + (lane >> 2);
    last_key[i] = $LAST_KEY;
  }

  for (int t = 0; t < tiles; ++t) {
    // Start the tile $AHEAD ahead into the buffer that tile t - 1 freed; wait for tile t.
    const int ahead = t + $AHEAD;
    if (ahead < tiles) {
      const unsigned stage = smem + $Q_BYTES + (ahead % $STAGES) * $STAGE_BYTES;
      $NAME_load_tile<$BC>(stage, kb, kv_first + ahead * $BC, $SKV, $K_LD);
      $NAME_load_tile<$BC>(stage + $KV_BYTES, vb, kv_first + ahead * $BC, $SKV, $V_LD);
    }
    kiln_copy_async_commit();
    kiln_copy_async_wait_group<$AHEAD>();
    __syncthreads();
    if constexpr (kQHeld) {
      if (t == 0) {
#pragma unroll
        for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
          for (int kk = 0; kk < $D / 16; ++kk)
            kiln_ldmatrix_x4(qf[mt][kk], smem + $NAME_chunk(warp_row + mt * 16 + (lane & 15), kk * 2 + (lane >> 4)));
      }
    }
    const unsigned k_tile = smem + $Q_BYTES + (t % $STAGES) * $STAGE_BYTES;
    const unsigned v_tile = k_tile + $KV_BYTES;

    // S = Q K^T: $WARP_ROWS x $BC scores a warp, as n8 accumulators; each K fragment
    // serves every row tile of the warp.
    float s[kTiles][$BC / 8][4];
#pragma unroll
    for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
      for (int n = 0; n < $BC / 8; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < $D / 16; ++kk) {
      unsigned qa[kTiles][4];
#pragma unroll
      for (int mt = 0; mt < kTiles; ++mt) {
        if constexpr (kQHeld) {
#pragma unroll
          for (int r = 0; r < 4; ++r) qa[mt][r] = qf[mt][kk][r];
        } else {
          kiln_ldmatrix_x4(qa[mt], smem + $NAME_chunk(warp_row + mt * 16 + (lane & 15), kk * 2 + (lane >> 4)));
        }
      }
#pragma unroll
      for (int nj = 0; nj < $BC / 16; ++nj) {
        unsigned b[4];  // keys nj * 16 + 0..7 and 8..15, D columns kk * 16 + 0..7 and 8..15
        kiln_ldmatrix_x4(b, k_tile + $NAME_chunk(nj * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1)));
#pragma unroll
        for (int mt = 0; mt < kTiles; ++mt) {
          $MMA(s[mt][2 * nj], qa[mt], b[0], b[1]);
          $MMA(s[mt][2 * nj + 1], qa[mt], b[2], b[3]);
        }
      }
    }

    // The scores$SCORE_NOTE; keys past the end$CAUSAL_NOTE are -inf.
    const int kv0 = kv_first + t * $BC;
$SCORE_LOOP    if ($EDGE) {
#pragma unroll
      for (int mt = 0; mt < kTiles; ++mt)
#pragma unroll
        for (int n = 0; n < $BC / 8; ++n)
#pragma unroll
          for (int r = 0; r < 4; ++r)
            if (kv0 + n * 8 + (lane & 3) * 2 + (r & 1) > last_key[2 * mt + (r >> 1)]) s[mt][n][r] = __int_as_float(0xff800000);
    }

    // Online softmax: the rows' new max (over the 4 lanes that hold each row), the
    // exponentials against it, and the rescale of what the earlier tiles summed.
#pragma unroll
    for (int i = 0; i < 2 * kTiles; ++i) {
      const int mt = i >> 1, h = i & 1;
      float m = row_max[i];
#pragma unroll
      for (int n = 0; n < $BC / 8; ++n) m = fmaxf(m, fmaxf(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      // exp(x - max) = 2^(x c - max c): one FFMA feeds the exp unit. A row with no key
      // yet takes 0 as its max, so that exponentials of -inf are 0, never NaN.
      const float base = m == __int_as_float(0xff800000) ? 0.0f : m * $LOG2_SCALE;
      const float rescale = kiln_exp2(fmaf(row_max[i], $LOG2_SCALE, -base));
      row_max[i] = m;
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < $BC / 8; ++n) {
        s[mt][n][2 * h] = kiln_exp2(fmaf(s[mt][n][2 * h], $LOG2_SCALE, -base));
        s[mt][n][2 * h + 1] = kiln_exp2(fmaf(s[mt][n][2 * h + 1], $LOG2_SCALE, -base));
        sum += s[mt][n][2 * h] + s[mt][n][2 * h + 1];
      }
      row_sum[i] = row_sum[i] * rescale + sum;
#pragma unroll
      for (int c = 0; c < $D / 8; ++c) {
        o[mt][c][2 * h] *= rescale;
        o[mt][c][2 * h + 1] *= rescale;
      }
    }

    // O += P V: P straight from the score registers as A fragments, V through ldmatrix.trans.
#pragma unroll
    for (int kk = 0; kk < $BC / 16; ++kk) {
      unsigned p[kTiles][4];
#pragma unroll
      for (int mt = 0; mt < kTiles; ++mt) {
        p[mt][0] = $PACK(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        p[mt][1] = $PACK(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        p[mt][2] = $PACK(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        p[mt][3] = $PACK(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dj = 0; dj < $D / 16; ++dj) {
        unsigned b[4];  // keys kk * 16 + 0..15, D columns dj * 16 + 0..7 and 8..15
        kiln_ldmatrix_x4_trans(b, v_tile + $NAME_chunk(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), dj * 2 + (lane >> 4)));
#pragma unroll
        for (int mt = 0; mt < kTiles; ++mt) {
          $MMA(o[mt][2 * dj], p[mt], b[0], b[1]);
          $MMA(o[mt][2 * dj + 1], p[mt], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this buffer before a later tile's copies reuse it
  }
  kiln_copy_async_wait_group<0>();
$EPILOGUE}
)";

// One block holds all the keys: O / row sum, stored.
constexpr const char* kDirectEpilogue = R"(
  // O / row sum (a row that saw no key gives zeros), through this warp's $WARP_ROWS rows of
  // the query tile, which no other warp reads, then out as 16-byte stores.
#pragma unroll
  for (int i = 0; i < 2 * kTiles; ++i) {
    const int mt = i >> 1, h = i & 1;
    float l = row_sum[i];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float inverse = l > 0.0f ? 1.0f / l : 0.0f;
    const int r = warp_row + mt * 16 + (lane >> 2) + h * 8;
#pragma unroll
    for (int c = 0; c < $D / 8; ++c)
      *reinterpret_cast<unsigned*>(kiln_smem + $NAME_chunk(r, c) + (lane & 3) * 4) =
          $PACK(o[mt][c][2 * h] * inverse, o[mt][c][2 * h + 1] * inverse);
  }
  __syncwarp();
  $T* __restrict__ ob = $OUT + (long long)batch * $OUT_BATCH;
#pragma unroll
  for (int it = 0; it < $WARP_ROWS * $CHUNKS / 32; ++it) {
    const int c = lane + it * 32;
    const int r = c / $CHUNKS, chunk = c % $CHUNKS;
    const int row = q0 + warp_row + r;
    if (row < $SQ)
      kiln_store16(ob + (long long)row * $D + chunk * 8,
                   *reinterpret_cast<const uint4*>(kiln_smem + $NAME_chunk(warp_row + r, chunk)));
  }
)";

// The keys split over blocks (decoding): this split's partial rows in fp32, a ticket, and
// in the query tile's last block the splits combined in split order, each rescaled to
// the rows' largest max.
constexpr const char* kSplitEpilogue = R"(
  // This split's rows: the output not yet divided by the sum, the max and the sum.
#pragma unroll
  for (int i = 0; i < 2 * kTiles; ++i) {
    const int mt = i >> 1, h = i & 1;
    float l = row_sum[i];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int row = q0 + warp_row + mt * 16 + (lane >> 2) + h * 8;
    if (row < $SQ) {
      const long long at = ((long long)blockIdx.z * $BATCHES + batch) * $SQ + row;
#pragma unroll
      for (int c = 0; c < $D / 8; ++c) {
        $NAME_o_part[at * $D + c * 8 + (lane & 3) * 2] = o[mt][c][2 * h];
        $NAME_o_part[at * $D + c * 8 + (lane & 3) * 2 + 1] = o[mt][c][2 * h + 1];
      }
      if ((lane & 3) == 0) {
        $NAME_m_part[at] = row_max[i];
        $NAME_l_part[at] = l;
      }
    }
  }
  __syncthreads();  // the partials are written before the ticket is taken
  __shared__ bool last_split;
  if (threadIdx.x == 0) {
    const int ticket = (int)batch * (int)gridDim.x + (int)blockIdx.x;
    last_split = kiln_take_ticket(&$NAME_tickets[ticket]) == $SPLITS - 1u;
    if (last_split) $NAME_tickets[ticket] = 0;  // the next launch starts from zero
  }
  __syncthreads();
  if (!last_split) return;
  $T* __restrict__ ob = $OUT + (long long)batch * $OUT_BATCH;
  const int rows_here = min($BR, $SQ - q0);
  for (int e = (int)threadIdx.x; e < rows_here * $D; e += $THREADS) {
    const int row = q0 + e / $D, d = e % $D;
    float m = __int_as_float(0xff800000);
    for (int z = 0; z < $SPLITS; ++z) m = fmaxf(m, __ldcg(&$NAME_m_part[((long long)z * $BATCHES + batch) * $SQ + row]));
    const float base = m == __int_as_float(0xff800000) ? 0.0f : m * $LOG2_SCALE;
    float l = 0.0f, acc = 0.0f;
    for (int z = 0; z < $SPLITS; ++z) {  // in split order: the same bits every run
      const long long at = ((long long)z * $BATCHES + batch) * $SQ + row;
      const float w = kiln_exp2(fmaf(__ldcg(&$NAME_m_part[at]), $LOG2_SCALE, -base));
      l += __ldcg(&$NAME_l_part[at]) * w;
      acc += __ldcg(&$NAME_o_part[at * $D + d]) * w;
    }
    ob[(long long)row * $D + d] = $STORE(l > 0.0f ? acc / l : 0.0f);  // a row that saw no key gives zeros
  }
)";

// The split partials and the tickets, at module scope (zero at load).
constexpr const char* kSplitScratch = R"(__device__ float $NAME_o_part[$O_PARTS];
__device__ float $NAME_m_part[$ROW_PARTS];
__device__ float $NAME_l_part[$ROW_PARTS];
__device__ int $NAME_tickets[$TICKETS];
)";

std::string header(const ir::Kernel& k) {
  const ir::AttentionCore& a = k.attention;
  const ir::TileConfig& c = k.config;
  std::string s = attention_header_title(k);
  s += "// Config " + c.str() + ":\n";
  const int tiles = ir::attention_warp_row_tiles(c);
  s += fmt::format("//   a block owns {} query rows of one batch entry: {} warps x {} rows, Q {}\n", c.br, c.warps,
                   16 * tiles,
                   tiles == 1 ? "in registers as A fragments" : "read from shared memory as A fragments each key tile");
  s += fmt::format("//   K and V tiles of {} rows stream through {} swizzled shared-memory buffer{} (cp.async)\n", c.bc,
                   c.stages, c.stages > 1 ? "s" : "");
  s += fmt::format("//   S = Q K^T and O += P V on mma.sync m16n8k16 {} (fp32 sums); online softmax in registers "
                   "(exp2, scale {} folded into log2 e)\n",
                   dtype_name(a.dtype), ir::attr_value_str(ir::AttrValue{a.scale}));
  if (!ir::attention_plain_score(k)) s += "//   score ops between the products: " + k.name + "_score\n";
  if (a.causal) s += "//   causal: key tiles past a block's last diagonal skipped, the longest blocks first\n";
  if (ir::attention_kv_splits(c) > 1)
    s += fmt::format("//   decoding: the keys split over {} blocks of {} keys (grid z); each writes fp32 partials and the "
                     "last block of a query tile combines them in split order\n",
                     ir::attention_kv_splits(c), ir::attention_kv_chunk(k, c));
  return s + "\n";
}

}  // namespace

LaunchDims attention_launch_dims(const ir::Kernel& k) {
  const ir::TileConfig& c = k.config;
  if (c.br <= 0 || c.bc <= 0) throw Error(fmt::format("kernel @{} has no attention tile config", k.name));
  if (c.schedule == ir::kWgmma) return attention_wgmma_launch_dims(k);
  LaunchDims d;
  d.grid[0] = static_cast<unsigned>((k.attention.sq + c.br - 1) / c.br);
  d.grid[1] = static_cast<unsigned>(ir::attention_batch_count(k.attention));
  d.grid[2] = static_cast<unsigned>(ir::attention_kv_splits(c));
  d.block[0] = static_cast<unsigned>(ir::attention_threads(c));
  d.shared_bytes = static_cast<unsigned>(ir::attention_shared_bytes(k, c));
  return d;
}

std::string emit_attention(const ir::Kernel& k) {
  ir::verify(k);
  ir::validate(k, k.config);
  if (!is_c_identifier(k.name))
    throw Error(fmt::format("kernel @{}: its name must be a C identifier to name a CUDA function", k.name));
  if (k.config.schedule == ir::kWgmma) return emit_attention_wgmma(k);
  const ir::AttentionCore& a = k.attention;
  const ir::TileConfig& c = k.config;
  const std::vector<std::string> params = param_names(k);
  const bool plain = ir::attention_plain_score(k);
  const bool bf16 = a.dtype == DType::bf16;
  auto ld = [&](int arg) { return std::to_string(ir::attention_layout(k, arg).ld) + "ll"; };
  auto offset = [&](int arg) {
    return batch_offset_code(a.batch, ir::attention_layout(k, arg).batch_strides, "batch");
  };
  // The plain score stays q . k: the scale joins log2 e in the exponent's FFMA (a
  // positive scale keeps the max where it was). Other scores run the score function
  // on every element inside the matrices.
  const int tiles = ir::attention_warp_row_tiles(c);
  const std::string score_loop =
      plain ? ""
            : "#pragma unroll\n    for (int mt = 0; mt < kTiles; ++mt) {\n"
              "      const int row0 = q0 + warp_row + mt * 16 + (lane >> 2);  // this lane's rows: row0, row0 + 8\n" +
                  attention_score_loop(k, params, c.bc, "s[mt][n][r]") + "    }\n";
  const int row_bytes = static_cast<int>(a.d) * 2;
  const int splits = ir::attention_kv_splits(c);
  const int64_t batches = ir::attention_batch_count(a), q_tiles = (a.sq + c.br - 1) / c.br;
  const std::string chunk = std::to_string(ir::attention_kv_chunk(k, c));
  std::map<std::string, std::string> v{
      {"KV_FIRST", splits > 1 ? "(int)blockIdx.z * " + chunk : "0"},
      {"KV_STOP", splits > 1 ? "min(kv_end, kv_first + " + chunk + ")" : "kv_end"},
      {"KV_CHUNK_NOTE", splits > 1 ? fmt::format("{} keys (split blockIdx.z of {})", chunk, splits) : "(one split)"},
      {"SPLITS", std::to_string(splits)},
      {"BATCHES", std::to_string(batches) + "ll"},
      {"O_PARTS", std::to_string(ir::attention_workspace_floats(k, c) / (a.dv + 2) * a.dv)},
      {"ROW_PARTS", std::to_string(ir::attention_workspace_floats(k, c) / (a.dv + 2))},
      {"TICKETS", std::to_string(batches * q_tiles)},
      {"STORE", bf16 ? "__float2bfloat16_rn" : "__float2half_rn"},
      {"NAME", k.name},
      {"T", std::string(storage_type(a.dtype))},
      {"MMA", bf16 ? "kiln_mma_bf16" : "kiln_mma_f16"},
      {"PACK", bf16 ? "kiln_pack2_bf16" : "kiln_pack2_f16"},
      {"THREADS", std::to_string(ir::attention_threads(c))},
      {"BR", std::to_string(c.br)},
      {"BC", std::to_string(c.bc)},
      {"D", std::to_string(a.d)},
      {"CHUNKS", std::to_string(a.d / 8)},
      {"ROW_BYTES", std::to_string(row_bytes)},
      {"STAGES", std::to_string(c.stages)},
      {"AHEAD", std::to_string(c.stages - 1)},
      {"PROLOGUE_COMMIT", c.stages == 1 ? "  kiln_copy_async_commit();  // the query tile alone\n" : ""},
      {"SQ", std::to_string(a.sq)},
      {"SKV", std::to_string(a.skv)},
      {"Q_BYTES", std::to_string(c.br * row_bytes) + "u"},
      {"KV_BYTES", std::to_string(c.bc * row_bytes) + "u"},
      {"STAGE_BYTES", std::to_string(2 * c.bc * row_bytes) + "u"},
      {"Q_LD", ld(a.q)},
      {"K_LD", ld(a.k)},
      {"V_LD", ld(a.v)},
      {"Q", params[static_cast<size_t>(a.q)]},
      {"K", params[static_cast<size_t>(a.k)]},
      {"V", params[static_cast<size_t>(a.v)]},
      {"OUT", params[static_cast<size_t>(a.out)]},
      {"Q_OFFSET", offset(a.q)},
      {"K_OFFSET", offset(a.k)},
      {"V_OFFSET", offset(a.v)},
      {"OUT_BATCH", std::to_string(a.sq * a.dv) + "ll"},
      {"PARAMS", fmt::format("{}", fmt::join(gemm_pointer_params(k, params), ", "))},
      {"SCORE_FUNCTION", plain ? "" : attention_score_function(k, params)},
      {"TILE_ORDER", a.causal ? "(int)(gridDim.x - 1 - blockIdx.x)" : "(int)blockIdx.x"},
      {"KV_END", a.causal ? fmt::format("min({}, q0 + {})", a.skv, c.br) : std::to_string(a.skv)},
      {"CAUSAL_NOTE", a.causal ? " and keys after the query" : ""},
      {"EDGE", a.causal ? fmt::format("kv0 + {} > {} || kv0 + {} > q0 + warp_row", c.bc, a.skv, c.bc - 1)
                        : fmt::format("kv0 + {} > {}", c.bc, a.skv)},
      {"LAST_KEY", a.causal ? fmt::format("min(row, {})", a.skv - 1) : std::to_string(a.skv - 1)},
      {"MT", std::to_string(tiles)},
      {"WARP_ROWS", std::to_string(16 * tiles)},
      {"SCORE_LOOP", score_loop},
      {"SCORE_NOTE", plain ? " (q . k, scaled in the exponent)" : " (the fused score ops on the scaled q . k)"},
      {"LOG2_SCALE", attention_float_literal((plain ? a.scale : 1.0) * kAttentionLog2e)},
  };
  // The epilogue and the split scratch go in before the names are filled.
  std::string text = kKernel;
  text.replace(text.find("$EPILOGUE"), 9, splits > 1 ? kSplitEpilogue : kDirectEpilogue);
  text.replace(text.find("$SCRATCH"), 8, splits > 1 ? kSplitScratch : "");
  return header(k) + attention_fill(text, v);
}

namespace {

constexpr DeviceHelper kAttentionHelpers[] = {
    // 2^x on the exp unit (ex2.approx, flushing subnormals): one instruction; 2^-inf = 0.
    {"kiln_exp2",
     "static __device__ __forceinline__ float kiln_exp2(float x) {\n"
     "  float y;\n  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n  return y;\n}\n"},
    // Two fp32 values as one register of two f16 / bf16 (the first in the low half), as
    // an mma A fragment register holds two neighbouring columns.
    {"kiln_pack2_f16",
     "static __device__ __forceinline__ unsigned kiln_pack2_f16(float lo, float hi) {\n"
     "  const __half2 h = __floats2half2_rn(lo, hi);\n  return *reinterpret_cast<const unsigned*>(&h);\n}\n"},
    {"kiln_pack2_bf16",
     "static __device__ __forceinline__ unsigned kiln_pack2_bf16(float lo, float hi) {\n"
     "  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);\n  return *reinterpret_cast<const unsigned*>(&h);\n}\n"},
};

}  // namespace

std::string attention_helper_definitions(const std::string& code) {
  return called_helpers(code, kAttentionHelpers, std::size(kAttentionHelpers));
}

}  // namespace kiln::codegen
