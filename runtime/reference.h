// The reference outputs Kiln checks its kernels against: the CPU interpreter's (the
// meaning of every op, double accumulation), except that a matmul too large for the
// CPU to finish in reasonable time is computed on the GPU when one is present
// (runtime/reference_matmul.h: fp32 accumulation, rounded as the interpreter rounds)
// and the rest of the graph (its epilogue) is evaluated on the CPU on that value.
// Without a GPU everything runs on the CPU. KILN_DEBUG >= 1 says which nodes ran on
// the GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::runtime {

// A matmul of more multiply-adds than this goes to the GPU: 2^28 take the interpreter
// a fraction of a second on many cores, while 4096^3 (2^36) takes it many seconds.
inline constexpr int64_t kGpuReferenceMinMultiplyAdds = int64_t{1} << 28;

// batch x M x N x K of a matmul node.
int64_t matmul_multiply_adds(const ir::Node& matmul);
// Whether `n` is a matmul that reference_outputs computes on the GPU when it can.
bool wants_gpu_reference(const ir::Node& n);

// What reference_outputs did, for messages: the nodes it computed on the GPU
// ("matmul %c f16[4096,4096]").
struct ReferenceReport {
  std::vector<std::string> gpu_nodes;
};

// The graph's outputs for `inputs` (in the order of g.inputs()), as ir::evaluate gives
// them but with large matmuls on the GPU (see above). Throws kiln::Error as
// ir::evaluate does. A GPU product that fails (out of memory, ...) is computed on the
// CPU instead, with a warning on stderr.
std::vector<HostTensor> reference_outputs(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                          ReferenceReport* report = nullptr);

}  // namespace kiln::runtime
