// A small program on Kiln's installed API: builds y = rms_norm(x + r, w) with the DSL,
// compiles it, runs it on the GPU and checks it against the reference interpreter.
// Without a GPU it compiles for sm_90a, evaluates the reference and says so.
#include <kiln/kiln.h>

#include <iostream>

int main() {
  try {
    kiln::Graph g("consumer_add_rmsnorm");
    auto x = g.input("x", kiln::f16, {256, 1024});
    auto r = g.input("r", kiln::f16, {256, 1024});
    auto w = g.input("w", kiln::f16, {1024});
    g.output(kiln::rms_norm(x + r, w, 1e-6).name("y"));

    std::string why;
    const bool gpu = kiln::runtime::gpu_available(&why);
    kiln::CompileOptions options;
    if (!gpu) options.arch = "sm_90a";
    kiln::Program program = kiln::compile(g, options);
    std::cout << "compiled " << program.kernels().size() << " kernel(s) for " << program.arch() << "\n";

    std::vector<kiln::HostTensor> inputs = kiln::ir::random_inputs(g.ir(), 7);
    std::vector<kiln::HostTensor> reference = kiln::ir::evaluate(g.ir(), inputs);
    if (!gpu) {
      std::cout << "no GPU (" << why << "): compiled only; reference evaluated (" << reference[0].numel()
                << " values)\n";
      return 0;
    }
    kiln::Comparison c = kiln::compare(program.run(inputs)[0], reference[0]);
    std::cout << "GPU result against the reference: " << c.str() << "\n";
    return c.passed ? 0 : 1;
  } catch (const kiln::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
