// Compiling and running a DSL graph: gelu(x * s + b) + r is fused into one kernel,
// compiled with NVRTC and run on the GPU on random inputs, then checked against the
// CPU reference interpreter. Without a GPU it compiles for sm_90a and stops there.
#include <iostream>

#include "frontend/kiln.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "runtime/cuda_driver.h"

int main() {
  try {
    kiln::Graph g("chain");
    auto x = g.input("x", kiln::f16, {1024, 4099});
    auto s = g.input("s", kiln::f16, {4099});
    auto b = g.input("b", kiln::f16, {4099});
    auto r = g.input("r", kiln::f16, {1024, 4099});
    g.output(kiln::gelu(x * s + b, "tanh") + r);

    std::string why;
    const bool gpu = kiln::runtime::gpu_available(&why);
    kiln::CompileOptions options;
    if (!gpu) options.arch = "sm_90a";  // no GPU: compile for the H200 all the same
    kiln::Program program = kiln::compile(g, options);
    for (const auto& k : program.kernels())
      std::cout << "kernel " << k.kernel.name << " " << k.kernel.config.str() << ": " << k.binary.cubin.size()
                << " bytes of cubin for " << program.arch() << "\n";
    if (!gpu) {
      std::cout << "no GPU (" << why << "): compiled only\n";
      return 0;
    }

    std::vector<kiln::HostTensor> inputs;
    for (size_t i = 0; i < g.ir().inputs().size(); ++i)
      inputs.push_back(kiln::random_tensor(g.ir().inputs()[i]->type, 42 + i));
    std::vector<kiln::HostTensor> outputs = program.run(inputs);
    kiln::Comparison c = kiln::compare(outputs[0], kiln::ir::evaluate(g.ir(), inputs)[0]);
    std::cout << "GPU result against the reference: " << c.str() << "\n";
    return c.passed ? 0 : 1;
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
