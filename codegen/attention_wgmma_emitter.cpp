// The attention kind's wgmma schedule (sm_90a), after FlashAttention-3. Blocks are
// persistent, one an SM: each takes work items (128 or 192 query rows of one batch entry)
// from a counter until none is left, so that one item's last products and output overlap
// the next one's loads.
//
//   warpgroup 0 (producer): gives back most of its registers; its first thread takes the
//     next item, hands it to the consumers through shared memory and has the copy engine
//     load its query tile (once the consumers' last products on the previous one have
//     finished), then each key tile and each value tile into the next of `stages`
//     buffers as soon as the consumers have freed it (an `empty` mbarrier per buffer; a
//     `full` one completes when the bytes have landed).
//   warpgroups 1, 2 (and 3 at br 192; consumers): take the registers; each owns 64 query
//     rows of the item. For key tile t a consumer issues S = Q K^T (wgmma, both operands
//     in shared memory), then O += P V for tile t - 1 (wgmma with P from its registers as
//     the A operand, V read N-major), and while those run, the online softmax of tile
//     t - 1 is done, so it runs the softmax of tile t on S as soon as S is ready, then
//     rescales O once the product of tile t - 1 has finished and packs the new P into
//     its A fragments.
//     The consumers take turns at the Tensor Cores (a ring of named barriers): one's
//     softmax runs while the others' products do.
//
// Every tile is rows of 128 bytes (64 f16 / bf16 elements) with the 128-byte swizzle;
// a head dim of 128 is two such column blocks. The wgmma accumulator layout per warp is
// mma.sync's m16n8 one (rows g and g + 8 of the warp's 16, columns 2t and 2t + 1 of each
// n8 block), so the scores of 16 keys packed in pairs are P's A fragment for them, as on
// mma.sync.
#include <fmt/format.h>

#include <map>

#include "codegen/attention_emitter.h"
#include "codegen/attention_template.h"
#include "codegen/gemm_common.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"
#include "ir/tile_config_attention_wgmma.h"

namespace kiln::codegen {

namespace {

constexpr int kSwizzleBytes = 128;  // one swizzled row: 64 elements of a column block
constexpr int kColumnBlock = 64;

constexpr const char* kKernel = R"(
extern "C" __global__ void __launch_bounds__($THREADS, 1) $NAME($PARAMS) {
  extern __shared__ __align__(1024) unsigned char kiln_smem[];
  // The query tile, then $STAGES pairs of a key and a value tile, 1024-byte aligned (the
  // swizzle repeats every 8 rows of 128 bytes), then the mbarriers and the slot through
  // which the producer hands each work item to the consumers.
  const unsigned smem = ((unsigned)__cvta_generic_to_shared(kiln_smem) + 1023u) & ~1023u;
  const unsigned q_tile = smem, bars = smem + $Q_BYTES + $STAGES * 2 * $KV_BYTES;
  const unsigned q_full = bars, q_empty = bars + 8u, k_full = bars + 16u, v_full = k_full + $STAGES * 8u;
  const unsigned k_empty = v_full + $STAGES * 8u, v_empty = k_empty + $STAGES * 8u;
  const unsigned slot = v_empty + $STAGES * 8u;
  volatile int* const handed =
      reinterpret_cast<volatile int*>(kiln_smem + (slot - (unsigned)__cvta_generic_to_shared(kiln_smem)));
  if (threadIdx.x == 0) {
    kiln_mbarrier_init(q_full, 1u);
    kiln_mbarrier_init(q_empty, $CONSUMER_WARPSu);  // one arrival per consumer warp
    for (int s = 0; s < $STAGES; ++s) {
      kiln_mbarrier_init(k_full + 8u * s, 1u);  // the producer's arrival, then the bytes
      kiln_mbarrier_init(v_full + 8u * s, 1u);
      kiln_mbarrier_init(k_empty + 8u * s, $CONSUMER_WARPSu);
      kiln_mbarrier_init(v_empty + 8u * s, $CONSUMER_WARPSu);
    }
    kiln_mbarrier_init_fence();
  }
  __syncthreads();
  const int warpgroup = (int)threadIdx.x / 128;

  if (warpgroup == 0) {  // the producer
    kiln_registers_release<$PRODUCER_REGISTERS>();
    if (threadIdx.x != 0) return;
    unsigned loaded = 0;  // key tiles loaded so far, over the block's items
    for (unsigned j = 0;; ++j) {
      const int item = (int)atomicAdd(&$NAME_next_item, 1u);
      // The consumers' last products on the previous item's query tile have finished.
      kiln_mbarrier_wait(q_empty, (j & 1u) ^ 1u);
      if (item >= $ITEMS) {
        *handed = -1;  // no more work: the consumers leave
        kiln_mbarrier_arrive(q_full);
        break;
      }
      *handed = item;
$PRODUCER_ITEM      kiln_mbarrier_expect_bytes(q_full, $Q_BYTES);
$LOAD_Q
      // (Not unrolled: with a known count ptxas would unroll it past the producer's 24
      // registers and spill.)
#pragma unroll 1
      for (int t = 0; t < tiles; ++t, ++loaded) {
        const int stage = (int)(loaded % $STAGESu);
        const unsigned phase = (loaded / $STAGESu) & 1u;
        const unsigned k_tile = smem + $Q_BYTES + stage * 2 * $KV_BYTES, v_tile = k_tile + $KV_BYTES;
        const int kv0 = t * $BC;
        kiln_mbarrier_wait(k_empty + 8u * stage, phase ^ 1u);  // every consumer is done with it
        kiln_mbarrier_expect_bytes(k_full + 8u * stage, $KV_BYTES);
$LOAD_K
        kiln_mbarrier_wait(v_empty + 8u * stage, phase ^ 1u);
        kiln_mbarrier_expect_bytes(v_full + 8u * stage, $KV_BYTES);
$LOAD_V
      }
    }
    // Every block has taken its last item: the last one here resets the counters for the
    // next launch.
    __threadfence();
    if (atomicAdd(&$NAME_blocks_done, 1u) == gridDim.x - 1) {
      atomicExch(&$NAME_next_item, 0u);
      atomicExch(&$NAME_blocks_done, 0u);
    }
    return;
  }

  // A consumer: query rows [q0 + consumer * 64, +64) of each item, 16 a warp.
  kiln_registers_claim<$CONSUMER_REGISTERS>();
  const int consumer = warpgroup - 1;
  const int lane = (int)threadIdx.x % 32;
  // This thread's first row in an item: 16 a warp after the producer's 4 warps, 64 a consumer.
  const int first_row = ((int)threadIdx.x / 32 - 4) * 16 + lane / 4;
  const unsigned q_rows = q_tile + (unsigned)consumer * 64u * $SWIZZLE_BYTES;
  // The consumers take turns at the Tensor Cores: consumer c waits at barrier 2 + c and
  // lets the next go with an arrival at its barrier once it has issued its products.
  if (consumer == $CONSUMERS - 1) kiln_named_barrier_arrive(2, 256);  // the first turn is consumer 0's
  unsigned used = 0;  // key tiles used so far, over the block's items
  for (unsigned j = 0;; ++j) {
    kiln_mbarrier_wait(q_full, j & 1u);
    const int item = *handed;
    if (item < 0) break;
$CONSUMER_ITEM    const int row0 = q0 + first_row;  // this thread's rows: row0, row0 + 8
    float s[$BC / 2];       // the scores of the current key tile (fp32 accumulators)
    unsigned p[$BC / 16][4];  // the previous tile's probabilities as A fragments, 16 keys each
    float o[$D / 2];        // the output rows (fp32 accumulators)
#pragma unroll
    for (int c = 0; c < $D / 2; ++c) o[c] = 0.0f;
    // Per row: the running max of the scores and this lane's part of the running sum of
    // their exponentials.
    float row_max[2] = {__int_as_float(0xff800000), __int_as_float(0xff800000)}, row_sum[2] = {0.0f, 0.0f};

    // Key tile 0: S alone.
    {
      const int t = 0, stage = (int)(used % $STAGESu);
      kiln_named_barrier_sync(2 + consumer, 256);
      kiln_mbarrier_wait(k_full + 8u * stage, (used / $STAGESu) & 1u);
      kiln_wgmma_fence();
$SCORES
      kiln_wgmma_commit();
      kiln_named_barrier_arrive($NEXT_TURN, 256);
      kiln_wgmma_wait<0>();
      if (lane == 0) {
        kiln_mbarrier_arrive(k_empty + 8u * stage);
        if (tiles == 1) kiln_mbarrier_arrive(q_empty);  // the producer may load the next item's Q
      }
$SOFTMAX
$PACK_P
    }
    // Key tile t: S = Q K^T of tile t, then O += P V of tile t - 1 in the same turn; the
    // softmax of tile t runs while the second product does.
    for (int t = 1; t < tiles; ++t) {
      const unsigned at = used + (unsigned)t;
      const int stage = (int)(at % $STAGESu), last = (int)((at - 1u) % $STAGESu);
      kiln_named_barrier_sync(2 + consumer, 256);
      kiln_mbarrier_wait(k_full + 8u * stage, (at / $STAGESu) & 1u);
      // (V of tile t - 1 was loaded before K of tile t; waiting here keeps the products'
      // issue free of a spin loop, which would serialise them.)
      kiln_mbarrier_wait(v_full + 8u * last, ((at - 1u) / $STAGESu) & 1u);
      kiln_wgmma_fence();
$SCORES
      kiln_wgmma_commit();
$VALUES
      kiln_wgmma_commit();
      kiln_named_barrier_arrive($NEXT_TURN, 256);
      kiln_wgmma_wait<1>();  // S has landed; O += P V may still run
      if (lane == 0) {
        kiln_mbarrier_arrive(k_empty + 8u * stage);
        if (t == tiles - 1) kiln_mbarrier_arrive(q_empty);
      }
$SOFTMAX
      // The previous tile's product has finished: its value tile is free, O takes the
      // rescale, and P's registers take this tile's probabilities.
      kiln_wgmma_wait<0>();
      if (lane == 0) kiln_mbarrier_arrive(v_empty + 8u * last);
#pragma unroll
      for (int c = 0; c < $D / 8; ++c) {
        o[4 * c] *= rescale[0];
        o[4 * c + 1] *= rescale[0];
        o[4 * c + 2] *= rescale[1];
        o[4 * c + 3] *= rescale[1];
      }
$PACK_P
    }
    // The last tile's O += P V.
    {
      const unsigned at = used + (unsigned)tiles - 1u;
      const int last = (int)(at % $STAGESu);
      kiln_mbarrier_wait(v_full + 8u * last, (at / $STAGESu) & 1u);
      kiln_wgmma_fence();
$VALUES
      kiln_wgmma_commit();
      kiln_wgmma_wait<0>();
      if (lane == 0) kiln_mbarrier_arrive(v_empty + 8u * last);
    }
    used += (unsigned)tiles;

    // O / row sum (a row that saw no key gives zeros), stored from the registers: the
    // query tile's shared memory already takes the next item's Q. Each of a row's 4 lanes
    // holds a pair (4 bytes) of every 8 columns; they trade them (a 4 x 4 transpose in two
    // rounds of shuffles) so that each stores whole 16-byte chunks, and the quad 64
    // contiguous bytes a store: 4-byte stores took 8 times the L2 requests, and blocks that
    // finish together queued on them.
    $T* __restrict__ ob = $OUT + (long long)batch * $OUT_BATCH;
    const int quad = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = row_sum[h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inverse = l > 0.0f ? 1.0f / l : 0.0f;
      const int row = row0 + h * 8;
#pragma unroll
      for (int g = 0; g < $D / 32; ++g) {  // chunks 4g .. 4g + 3 of the row
        unsigned w[4];  // this lane's pair of each, then the 4 pairs of chunk 4g + quad
#pragma unroll
        for (int j = 0; j < 4; ++j)
          w[j] = $PACK(o[4 * (4 * g + j) + 2 * h] * inverse, o[4 * (4 * g + j) + 2 * h + 1] * inverse);
#pragma unroll
        for (int m = 2; m > 0; m /= 2)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if ((j & m) == 0) {  // swap w[j + m] with the partner's w[j] (by this lane's bit m)
              const bool high = (quad & m) != 0;
              const unsigned got = __shfl_xor_sync(0xffffffffu, high ? w[j] : w[j + m], m);
              if (high) w[j] = got;
              else w[j + m] = got;
            }
        if (row < $SQ) kiln_store16(ob + (long long)row * $D + (4 * g + quad) * 8, make_uint4(w[0], w[1], w[2], w[3]));
      }
    }
  }
  // The last consumer arrived once more than consumer 0 waited (its head start): take it.
  if (consumer == 0) kiln_named_barrier_sync(2, 256);
}
)";

// S = Q K^T of key tile t (in buffer `stage`), 16 of the head dim a product.
constexpr const char* kScores = R"(    {
      const unsigned k_tile = smem + $Q_BYTES + stage * 2 * $KV_BYTES;
#pragma unroll
      for (int kk = 0; kk < $D / 16; ++kk)
        $NAME_scores(s, kiln_wgmma_desc(q_rows + (kk / 4) * $Q_BLOCK + (kk % 4) * 32u, 16u, 1024u),
                     kiln_wgmma_desc(k_tile + (kk / 4) * $KV_BLOCK + (kk % 4) * 32u, 16u, 1024u), kk > 0);
    })";

// O += P V of the key tile in buffer `last`, 16 keys a product.
constexpr const char* kValues = R"(    {
      const unsigned v_tile = smem + $Q_BYTES + last * 2 * $KV_BYTES + $KV_BYTES;
#pragma unroll
      for (int kk = 0; kk < $BC / 16; ++kk)
        $NAME_values(o, p[kk], kiln_wgmma_desc(v_tile + kk * 16u * $SWIZZLE_BYTES, $KV_BLOCK, 1024u));
    })";

// The score ops and masks on tile t's scores, then the online softmax: the rows' new
// max (over the 4 lanes that hold each row), the exponentials against it in place, and
// `rescale`, what the earlier tiles' sums are multiplied by.
constexpr const char* kSoftmax = R"(    // The scores$SCORE_NOTE; keys past the end$CAUSAL_NOTE are -inf.
    const int kv0 = t * $BC;
$SCORE_LOOP    if ($EDGE) {
      const int last_key[2] = {$LAST_KEY0, $LAST_KEY1};  // the last key each row sees
#pragma unroll
      for (int n = 0; n < $BC / 8; ++n)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          if (kv0 + n * 8 + (lane & 3) * 2 + (r & 1) > last_key[r >> 1]) s[4 * n + r] = __int_as_float(0xff800000);
    }
    float rescale[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = row_max[h];
#pragma unroll
      for (int n = 0; n < $BC / 8; ++n) m = fmaxf(m, fmaxf(s[4 * n + 2 * h], s[4 * n + 2 * h + 1]));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      // exp(x - max) = 2^(x c - max c): one FFMA feeds the exp unit. A row with no key
      // yet takes 0 as its max, so that exponentials of -inf are 0, never NaN.
      const float base = m == __int_as_float(0xff800000) ? 0.0f : m * $LOG2_SCALE;
      rescale[h] = kiln_exp2(fmaf(row_max[h], $LOG2_SCALE, -base));
      row_max[h] = m;
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < $BC / 8; ++n) {
        s[4 * n + 2 * h] = kiln_exp2(fmaf(s[4 * n + 2 * h], $LOG2_SCALE, -base));
        s[4 * n + 2 * h + 1] = kiln_exp2(fmaf(s[4 * n + 2 * h + 1], $LOG2_SCALE, -base));
        sum += s[4 * n + 2 * h] + s[4 * n + 2 * h + 1];
      }
      row_sum[h] = row_sum[h] * rescale[h] + sum;
    })";

// The probabilities packed in pairs: the A fragments of O += P V, 16 keys each.
constexpr const char* kPackP = R"(#pragma unroll
    for (int kk = 0; kk < $BC / 16; ++kk) {
      p[kk][0] = $PACK(s[8 * kk], s[8 * kk + 1]);
      p[kk][1] = $PACK(s[8 * kk + 2], s[8 * kk + 3]);
      p[kk][2] = $PACK(s[8 * kk + 4], s[8 * kk + 5]);
      p[kk][3] = $PACK(s[8 * kk + 6], s[8 * kk + 7]);
    })";

class AttentionWgmmaEmitter {
public:
  explicit AttentionWgmmaEmitter(const ir::Kernel& k) : k_(k), a_(k.attention), c_(k.config), params_(param_names(k)) {}

  std::string emit() const {
    const bool plain = ir::attention_plain_score(k_);
    const bool bf16 = a_.dtype == DType::bf16;
    const int q_block = c_.br * kSwizzleBytes, kv_block = c_.bc * kSwizzleBytes;
    std::vector<std::string> params = gemm_pointer_params(k_, params_);
    for (const char* map : {"map_q", "map_k", "map_v"})
      params.push_back(fmt::format("const __grid_constant__ kiln_tensor_map {}", map));
    const std::map<std::string, std::string> v{
        {"NAME", k_.name},
        {"T", std::string(storage_type(a_.dtype))},
        {"PACK", bf16 ? "kiln_pack2_bf16" : "kiln_pack2_f16"},
        {"THREADS", std::to_string(ir::attention_threads(c_))},
        {"PRODUCER_REGISTERS", std::to_string(ir::kAttentionWgmmaProducerRegisters)},
        {"CONSUMER_REGISTERS", std::to_string(ir::attention_wgmma_consumer_registers(c_))},
        {"CONSUMERS", std::to_string(consumers())},
        {"CONSUMER_WARPS", std::to_string(4 * consumers())},
        {"NEXT_TURN", consumers() == 2 ? "3 - consumer" : fmt::format("2 + (consumer + 1) % {}", consumers())},
        {"BR", std::to_string(c_.br)},
        {"BC", std::to_string(c_.bc)},
        {"D", std::to_string(a_.d)},
        {"STAGES", std::to_string(c_.stages)},
        {"SWIZZLE_BYTES", std::to_string(kSwizzleBytes) + "u"},
        {"Q_BYTES", std::to_string(c_.br * a_.d * 2) + "u"},
        {"KV_BYTES", std::to_string(c_.bc * a_.d * 2) + "u"},
        {"Q_BLOCK", std::to_string(q_block) + "u"},
        {"KV_BLOCK", std::to_string(kv_block) + "u"},
        {"SQ", std::to_string(a_.sq)},
        {"OUT", params_[static_cast<size_t>(a_.out)]},
        {"OUT_BATCH", std::to_string(a_.sq * a_.dv) + "ll"},
        {"PARAMS", fmt::format("{}", fmt::join(params, ", "))},
        {"LOAD_Q", loads(a_.q, "map_q", "q_tile", "q_full", "q0", q_block)},
        {"LOAD_K", loads(a_.k, "map_k", "k_tile", "k_full + 8u * stage", "kv0", kv_block)},
        {"LOAD_V", loads(a_.v, "map_v", "v_tile", "v_full + 8u * stage", "kv0", kv_block)},
        {"ITEMS", std::to_string(items())},
        {"PRODUCER_ITEM", item_coordinates("      ")},
        {"CONSUMER_ITEM", item_coordinates("    ")},
        {"CAUSAL_NOTE", a_.causal ? " and keys after the query" : ""},
        {"EDGE", a_.causal ? fmt::format("kv0 + {} > {} || kv0 + {} > row0 - lane / 4", c_.bc, a_.skv, c_.bc - 1)
                           : fmt::format("kv0 + {} > {}", c_.bc, a_.skv)},
        {"LAST_KEY0", a_.causal ? fmt::format("min(row0, {})", a_.skv - 1) : std::to_string(a_.skv - 1)},
        {"LAST_KEY1", a_.causal ? fmt::format("min(row0 + 8, {})", a_.skv - 1) : std::to_string(a_.skv - 1)},
        {"SCORE_LOOP", plain ? "" : attention_score_loop(k_, params_, c_.bc, "s[4 * n + r]")},
        {"SCORE_NOTE", plain ? " (q . k, scaled in the exponent)" : " (the fused score ops on the scaled q . k)"},
        {"LOG2_SCALE", attention_float_literal((plain ? a_.scale : 1.0) * kAttentionLog2e)},
    };
    std::string s = header();
    s += "#ifndef KILN_TENSOR_MAP\n#define KILN_TENSOR_MAP\n"
         "// A tensor map as the driver encodes it (opaque, 128 bytes, 64-byte aligned).\n"
         "struct __align__(64) kiln_tensor_map { unsigned long long words[16]; };\n#endif\n";
    s += scratch();
    s += product("scores", c_.bc, false) + product("values", static_cast<int>(a_.dv), true);
    if (!plain) s += attention_score_function(k_, params_);
    std::string kernel = kKernel;
    for (auto [name, piece] : {std::pair{"$SCORES", kScores}, std::pair{"$VALUES", kValues},
                               std::pair{"$SOFTMAX", kSoftmax}, std::pair{"$PACK_P", kPackP}})
      for (size_t at = kernel.find(name); at != std::string::npos; at = kernel.find(name, at))
        kernel.replace(at, std::string(name).size(), piece);
    return s + attention_fill(kernel, v);
  }

private:
  int consumers() const { return ir::attention_wgmma_consumers(c_); }
  int64_t row_tiles() const { return ir::attention_wgmma_row_tiles(k_, c_); }
  int64_t items() const { return ir::attention_wgmma_items(k_, c_); }

  // A work item is one row tile of one batch entry, taken in the order a grid of blocks
  // would run them: the row tiles of entry 0 first (they share its K and V in L2), under
  // a causal mask the longest (last) first.
  std::string item_coordinates(const std::string& in) const {
    std::string s;
    s += fmt::format("{}const int q0 = {} * {};\n", in,
                     a_.causal ? fmt::format("({} - item % {})", row_tiles() - 1, row_tiles())
                               : fmt::format("(item % {})", row_tiles()),
                     c_.br);
    s += fmt::format("{}const unsigned batch = (unsigned)(item / {});\n", in, row_tiles());
    s += fmt::format("{}// The key tiles of this item: all of them, or up to its last row's diagonal.\n", in);
    s += fmt::format("{}const int tiles = ({} + {}) / {};\n", in,
                     a_.causal ? fmt::format("min({}, q0 + {})", a_.skv, c_.br) : std::to_string(a_.skv), c_.bc - 1,
                     c_.bc);
    return s;
  }

  // Module-scope scratch: the next work item and the blocks that have taken their last
  // (zero at load; the last block of a launch resets them). A module's kernel runs on one
  // stream at a time.
  std::string scratch() const {
    return fmt::format("__device__ unsigned {0}_next_item;\n__device__ unsigned {0}_blocks_done;\n", k_.name);
  }

  std::string header() const {
    std::string s = attention_header_title(k_);
    s += "// Config " + c_.str() + " (FlashAttention-3's schedule):\n";
    s += fmt::format("//   {} persistent blocks (one an SM) take work items of {} query rows of one batch entry from a "
                     "counter; a block is a producer warpgroup (TMA) and {} consumer warpgroups of 64 rows, {} bytes of "
                     "shared memory\n",
                     ir::attention_wgmma_blocks(k_, c_), c_.br, consumers() == 2 ? "two" : "three",
                     ir::attention_shared_bytes(k_, c_));
    s += fmt::format("//   an item's Q loaded once, while the last one finishes; K and V tiles of {} rows through {} "
                     "buffers each, 128-byte swizzled\n",
                     c_.bc, c_.stages);
    s += fmt::format("//   S = Q K^T on wgmma m64n{}k16 from shared memory; O += P V on wgmma m64n{}k16 with P from "
                     "registers, V N-major; fp32 sums\n",
                     c_.bc, a_.dv);
    s += "//   the consumers take turns at the Tensor Cores; each overlaps a tile's softmax with the previous "
         "tile's P V\n";
    if (!ir::attention_plain_score(k_)) s += "//   score ops between the products: " + k_.name + "_score\n";
    if (a_.causal) s += "//   causal: key tiles past a block's last diagonal skipped, the longest blocks first\n";
    return s + "\n";
  }

  // The coordinates of batch entry `batch` along the batch dims the operand's map keeps.
  std::vector<std::string> batch_coordinates(int arg) const {
    const std::vector<int64_t> strides = ir::attention_layout(k_, arg).batch_strides;
    std::vector<std::string> out;
    for (size_t d = 0; d < a_.batch.size(); ++d) {
      if (strides[d] == 0) continue;
      int64_t inner = 1;
      for (size_t e = d + 1; e < a_.batch.size(); ++e) inner *= a_.batch[e];
      out.push_back(fmt::format("(int)(batch / {}u % {}u)", inner, a_.batch[d]));
    }
    return out;
  }

  // The tensor loads of one tile: a box of 64 columns a column block, rows from `row0`.
  std::string loads(int arg, const std::string& map, const std::string& tile, const std::string& bar,
                    const std::string& row0, int block_bytes) const {
    const std::vector<std::string> batch = batch_coordinates(arg);
    const int rank = 2 + static_cast<int>(batch.size());
    const int64_t cols = arg == a_.v ? a_.dv : a_.d;
    std::string s;
    for (int64_t b = 0; b < cols / kColumnBlock; ++b) {
      std::vector<std::string> coords = {std::to_string(b * kColumnBlock), row0};
      coords.insert(coords.end(), batch.begin(), batch.end());
      s += fmt::format("{}kiln_tma_load_{}d({} + {}u, &{}, {}, {});\n", arg == a_.q ? "    " : "      ", rank, tile,
                       b * block_bytes, map, bar, fmt::join(coords, ", "));
    }
    return s;
  }

  // One wgmma of the warpgroup's 64 rows: `scores` (S (+)= Q K^T, both from shared
  // memory, K-major) or `values` (O += P V, P from registers, V N-major).
  std::string product(const std::string& what, int n, bool values) const {
    const std::string type = a_.dtype == DType::bf16 ? "bf16" : "f16";
    const int regs = n / 2;
    std::vector<std::string> dregs, outs;
    for (int i = 0; i < regs; ++i) {
      dregs.push_back(fmt::format("%{}", i));
      outs.push_back(fmt::format("\"+f\"(acc[{}])", i));
    }
    std::string s;
    if (values) {
      s += fmt::format("// acc += P V over 16 keys: P as the warpgroup's A fragments, V's 16 x {} slice N-major.\n", n);
      s += fmt::format("static __device__ __forceinline__ void {}_values(float (&acc)[{}], const unsigned (&p)[4], "
                       "unsigned long long b) {{\n",
                       k_.name, regs);
      s += fmt::format("  asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{}, 0;\\n\"\n", regs + 5);
      s += fmt::format("               \"wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, {{%{}, %{}, %{}, %{}}}, "
                       "%{}, p, 1, 1, 1;\\n}}\"\n",
                       n, type, type, fmt::join(dregs, ", "), regs, regs + 1, regs + 2, regs + 3, regs + 4);
      s += fmt::format("               : {}\n", fmt::join(outs, ", "));
      s += "               : \"r\"(p[0]), \"r\"(p[1]), \"r\"(p[2]), \"r\"(p[3]), \"l\"(b), \"n\"(1) : \"memory\");\n}\n";
      return s;
    }
    s += fmt::format("// acc (+)= Q K^T over 16 of the head dim: Q's 64 rows against {} keys, both K-major in shared\n"
                     "// memory; `accumulate` 0 starts the sums from zero.\n",
                     n);
    s += fmt::format("static __device__ __forceinline__ void {}_{}(float (&acc)[{}], unsigned long long a, "
                     "unsigned long long b, int accumulate) {{\n",
                     k_.name, what, regs);
    s += fmt::format("  asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{}, 0;\\n\"\n", regs + 2);
    s += fmt::format("               \"wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, %{}, %{}, p, 1, 1, 0, "
                     "0;\\n}}\"\n",
                     n, type, type, fmt::join(dregs, ", "), regs, regs + 1);
    s += fmt::format("               : {}\n", fmt::join(outs, ", "));
    s += "               : \"l\"(a), \"l\"(b), \"r\"(accumulate) : \"memory\");\n}\n";
    return s;
  }

  const ir::Kernel& k_;
  const ir::AttentionCore& a_;
  const ir::TileConfig& c_;
  std::vector<std::string> params_;
};

}  // namespace

std::string emit_attention_wgmma(const ir::Kernel& k) { return AttentionWgmmaEmitter(k).emit(); }

LaunchDims attention_wgmma_launch_dims(const ir::Kernel& k) {
  const ir::AttentionCore& a = k.attention;
  const ir::TileConfig& c = k.config;
  LaunchDims d;
  // Persistent blocks, one an SM, that take work items (row tiles) until none is left.
  d.grid[0] = static_cast<unsigned>(ir::attention_wgmma_blocks(k, c));
  d.block[0] = static_cast<unsigned>(ir::attention_threads(c));
  d.shared_bytes = static_cast<unsigned>(ir::attention_shared_bytes(k, c));
  for (int arg : {a.q, a.k, a.v}) {
    const ir::AttentionLayout l = ir::attention_layout(k, arg);
    TensorMapSpec spec;
    spec.arg = arg;
    spec.dtype = a.dtype;
    spec.dims[0] = static_cast<uint64_t>(arg == a.v ? a.dv : a.d);
    spec.dims[1] = static_cast<uint64_t>(arg == a.q ? a.sq : a.skv);
    spec.strides[0] = static_cast<uint64_t>(l.ld * 2);
    spec.box[0] = kColumnBlock;
    spec.box[1] = static_cast<uint32_t>(arg == a.q ? c.br : c.bc);
    int rank = 2;
    for (size_t b = 0; b < l.batch_strides.size(); ++b) {
      if (l.batch_strides[b] == 0) continue;  // broadcast: every entry reads the same matrix
      spec.dims[static_cast<size_t>(rank)] = static_cast<uint64_t>(a.batch[b]);
      spec.strides[static_cast<size_t>(rank - 1)] = static_cast<uint64_t>(l.batch_strides[b] * 2);
      spec.box[static_cast<size_t>(rank)] = 1;
      ++rank;
    }
    spec.rank = rank;
    d.tensor_maps.push_back(spec);
  }
  return d;
}

}  // namespace kiln::codegen
