// The baseline families, one file each; registry.cpp lists them in preference order.
#pragma once
#include <vector>

#include "baselines/baseline.h"

namespace kiln::baselines {

std::vector<Baseline> elementwise_chain_baselines();        // elementwise_chain.cpp
std::vector<Baseline> multi_input_elementwise_baselines();  // multi_input_elementwise.cpp
std::vector<Baseline> softmax_baselines();                  // softmax.cpp
std::vector<Baseline> norm_baselines();                     // norms.cpp
std::vector<Baseline> reduction_baselines();                // reductions.cpp
std::vector<Baseline> gemm_baselines();                     // gemm.cpp
std::vector<Baseline> attention_baselines();                // attention.cpp

}  // namespace kiln::baselines
