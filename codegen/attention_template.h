// What the attention emitters share: their kernels are CUDA templates whose $NAMES are
// filled from the kernel IR and its config, and the score loop that runs a fused score
// body on every element of a key tile's scores.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/kernel.h"

namespace kiln::codegen {

inline constexpr double kAttentionLog2e = 1.4426950408889634;

// `text` with every $NAME replaced by its value (longest names first, so that $Q_BYTES
// is not read as $Q followed by _BYTES). Throws kiln::Error if a $ is left.
std::string attention_fill(std::string text, const std::map<std::string, std::string>& values);

// The kernel header's first lines: its shapes and dtype, and the graph ops it fuses.
std::string attention_header_title(const ir::Kernel& k);

// A float literal: "0.0883883476f".
std::string attention_float_literal(double v);

// The loop that replaces each of a thread's bc / 2 scores by the kernel's score function
// at its element, or -inf past the ends. The scores are in the m16n8 accumulator layout
// (row0 and row0 + 8, keys kv0 + 8 n + 2 (lane % 4) and the next); `element` names score
// r (0..3) of n8 block n, as "s[n][r]".
std::string attention_score_loop(const ir::Kernel& k, const std::vector<std::string>& params, int bc,
                                 const std::string& element);

}  // namespace kiln::codegen
