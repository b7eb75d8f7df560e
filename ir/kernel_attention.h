// The attention kind's part of the kernel IR: softmax(score(q k^T)) v in one kernel.
//
// An attention kernel computes, for every output element (batch..., i, c),
//   out[i, c] = sum_j p[i, j] v[j, c] / sum_j p[i, j],   p[i, j] = exp(s[i, j] - max_j s[i, j])
// where the score s[i, j] is the kernel's scalar body run at the element (batch..., i, j)
// of the score space [batch..., Sq, Skv]: its `acc` op reads scale * (q[i] . k[j]) in
// fp32, its last op is the score. With `causal`, keys j > i are masked out after the
// body (top-left aligned), and the kernel skips the key tiles that lie wholly above
// the diagonal. A row whose every score is -inf gives zeros. No value of the score
// space is ever stored: the softmax is computed online, one key tile at a time.
//
// q, k and v are arguments whose strides span their logical [batch..., S, D] (one
// stride per output batch dim, 0 where the operand broadcasts: grouped-query attention
// reads one k and v for a group of query heads); the body's other loads (an additive
// bias) have strides over the score space; the output is [batch..., Sq, Dv], contiguous.
//   kernel @k0 attention(%q: f16[2,128,64], %k: f16[2,128,64], %v: f16[2,128,64], out %y: f16[2,128,64])
//       attention batch [2] 128x128 d 64 dv 64 q %q strides[8192,64,1] k %k ... f16 scale 0.125 causal
//       config {schedule = mma_sync, br = 128, bc = 64, warps = 8, stages = 2} {
//     %0 = acc : f32
//   }
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace kiln::ir {

struct Kernel;

struct AttentionCore {
  Shape batch;  // the output's batch dims (q's, k's and v's broadcast to them)
  int64_t sq = 0, skv = 0;  // query and key/value sequence lengths
  int64_t d = 0, dv = 0;    // head dims of q / k and of v
  DType dtype = DType::f16;  // q, k, v and the output: f16 or bf16
  int q = -1, k = -1, v = -1, out = -1;  // Kernel::args entries
  double scale = 1.0;  // multiplies q . k before the body
  bool causal = false;  // keys after the query masked, after the body
};

// How an operand (q, k or v) is stored: one row of S per `ld` elements, its head dim
// contiguous, `batch_strides` per output batch dim (0 where it broadcasts).
struct AttentionLayout {
  int64_t ld = 0;
  std::vector<int64_t> batch_strides;
};
AttentionLayout attention_layout(const Kernel& k, int arg);

// Whether argument `arg` is q, k or v.
bool attention_operand(const Kernel& k, int arg);
// Whether the body only reads the scaled product: no mask or bias beyond `causal`.
bool attention_plain_score(const Kernel& k);
// The number of (batch...) entries: query-tile rows of the grid run over each.
int64_t attention_batch_count(const AttentionCore& a);

// The attention line of the kernel's text form.
std::string attention_core_str(const Kernel& k);
// Checks the core: sizes and dtypes, q, k, v in bounds with a contiguous head dim, the
// output contiguous over [batch..., Sq, Dv], a body of loads, constants, indices and
// element-wise ops whose last op is the score.
void verify_attention(const Kernel& k);

}  // namespace kiln::ir
