// reference_outputs: the interpreter with large matmuls supplied by the GPU. See reference.h.
#include "runtime/reference.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "runtime/cuda_driver.h"
#include "runtime/knobs.h"
#include "runtime/reference_matmul.h"

namespace kiln::runtime {

int64_t matmul_multiply_adds(const ir::Node& n) {
  if (n.op != ir::OpKind::Matmul) return 0;
  const TensorType& a = n.operands[0]->type;
  const int64_t k = a.shape[a.rank() - (n.attrs.get_bool("transpose_a") ? 2 : 1)];
  return n.result->type.numel() * k;  // batch x M x N outputs, K multiply-adds each
}

bool wants_gpu_reference(const ir::Node& n) {
  return n.op == ir::OpKind::Matmul && matmul_multiply_adds(n) > kGpuReferenceMinMultiplyAdds;
}

std::vector<HostTensor> reference_outputs(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                          ReferenceReport* report) {
  bool any = false;
  for (const ir::Node* n : g.nodes()) any = any || wants_gpu_reference(*n);
  if (!any || !gpu_available()) return ir::evaluate(g, inputs);

  const auto names = ir::value_names(g);
  const bool debug = knobs::debug_level() >= 1;
  ir::EvalHooks hooks;
  hooks.supply = [&](const ir::Node& n, const std::vector<const HostTensor*>& operands) -> std::optional<HostTensor> {
    if (!wants_gpu_reference(n)) return std::nullopt;
    const std::string label = fmt::format("{} %{} {}", ir::op_name(n.op), names.at(n.result->id), n.result->type.str());
    try {
      const auto start = std::chrono::steady_clock::now();
      HostTensor product = gpu_matmul(n, *operands[0], *operands[1]);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (debug)
        std::cerr << fmt::format("kiln: reference: {} ({:.3g} multiply-adds) on the GPU, fp32 accumulation: {:.1f} ms\n",
                                 label, static_cast<double>(matmul_multiply_adds(n)), ms);
      if (report) report->gpu_nodes.push_back(label);
      return product;
    } catch (const Error& e) {
      std::cerr << fmt::format("kiln: warning: the GPU reference of {} failed ({}); computing it on the CPU\n", label,
                               e.what());
      return std::nullopt;
    }
  };
  return ir::evaluate(g, inputs, hooks);
}

}  // namespace kiln::runtime
