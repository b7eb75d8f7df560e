// `kiln run FILE`: compile a graph, run it on the GPU on random inputs (never
// zeros) or on the caller's (--inputs DIR: one NAME.npy per input, as --save
// writes them), and check every output against the reference interpreter. --bench times
// the whole graph against the device-to-device copy bandwidth measured in the same
// run; --compile-only needs no GPU: it compiles every kernel and evaluates the reference.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ir/compare.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/executable.h"
#include "runtime/knobs.h"
#include "runtime/program.h"
#include "runtime/reference.h"
#include "runtime/timer.h"
#include "tools/commands.h"
#include "runtime/npy.h"

namespace kiln::tools {

namespace {

struct RunArgs {
  std::string file;
  uint64_t seed = 1;
  bool bench = false;
  bool compile_only = false;
  std::string save_dir;
  std::string inputs_dir;
  std::string arch;
  std::string pipeline = std::string(runtime::kCompilePipeline);
};

std::string output_label(const ir::Graph& g, size_t i) {
  auto names = ir::value_names(g);
  return fmt::format("output {} %{} {}", i, names.at(g.outputs()[i]->id), g.outputs()[i]->type.str());
}

nlohmann::json tensor_entry(const std::string& name, const std::string& file, const TensorType& type) {
  return {{"name", name}, {"file", file}, {"dtype", std::string(dtype_name(type.dtype))}, {"shape", type.shape}};
}

// manifest.json names the graph and lists its inputs and outputs in order, so that a
// reader (bench/peers.py --check) knows which file is which without parsing the graph.
void write_manifest(const std::string& dir, const ir::Graph& g, bool has_outputs) {
  auto names = ir::value_names(g);
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const ir::Value* v : g.inputs()) {
    std::string name = names.at(v->id);
    inputs.push_back(tensor_entry(name, name + ".npy", v->type));
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::Value* v = g.outputs()[i];
    std::string name = names.at(v->id);
    nlohmann::json entry = tensor_entry(name, has_outputs ? fmt::format("out{}_{}.npy", i, name) : "", v->type);
    entry["reference"] = fmt::format("ref{}_{}.npy", i, name);
    outputs.push_back(entry);
  }
  nlohmann::json manifest = {{"function", g.name()}, {"inputs", inputs}, {"outputs", outputs}};
  std::ofstream f(dir + "/manifest.json");
  f << manifest.dump(2) << "\n";
  if (!f) throw Error(fmt::format("cannot write {}/manifest.json", dir));
}

void save_all(const std::string& dir, const ir::Graph& g, const std::vector<HostTensor>& inputs,
              const std::vector<HostTensor>& outputs, const std::vector<HostTensor>& reference) {
  std::filesystem::create_directories(dir);
  auto names = ir::value_names(g);
  for (size_t i = 0; i < inputs.size(); ++i)
    runtime::write_npy(dir + "/" + names.at(g.inputs()[i]->id) + ".npy", inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i)
    runtime::write_npy(fmt::format("{}/out{}_{}.npy", dir, i, names.at(g.outputs()[i]->id)), outputs[i]);
  for (size_t i = 0; i < reference.size(); ++i)
    runtime::write_npy(fmt::format("{}/ref{}_{}.npy", dir, i, names.at(g.outputs()[i]->id)), reference[i]);
  write_manifest(dir, g, !outputs.empty());
  std::cout << fmt::format("saved inputs, outputs, reference outputs (.npy) and manifest.json under {}\n", dir);
}

// The graph's inputs from DIR/NAME.npy, each checked against the input's type.
std::vector<HostTensor> load_inputs(const std::string& dir, const ir::Graph& g) {
  auto names = ir::value_names(g);
  std::vector<std::string> files;
  for (const ir::Value* v : g.inputs()) files.push_back(names.at(v->id) + ".npy");
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::Value* v = g.inputs()[i];
    const std::string what = fmt::format("input {} %{}", i, names.at(v->id));
    const std::string path = dir + "/" + files[i];
    if (!std::filesystem::exists(path))
      throw Error(fmt::format("{} ({}): {} not found; --inputs reads one NAME.npy per graph input, as --save "
                              "writes them: {}",
                              what, v->type.str(), path, fmt::join(files, ", ")));
    inputs.push_back(runtime::read_npy(path, v->type, what));
  }
  return inputs;
}

void bench(runtime::Executable& exe, const std::vector<HostTensor>& inputs) {
  std::vector<runtime::DeviceBuffer> in_bufs, out_bufs;
  for (const HostTensor& t : inputs) in_bufs.push_back(runtime::DeviceBuffer::from_host(t));
  for (int b : exe.plan().outputs) out_bufs.emplace_back(static_cast<size_t>(exe.plan().buffers[b].type.bytes()));
  std::vector<const runtime::DeviceBuffer*> ins;
  std::vector<runtime::DeviceBuffer*> outs;
  for (auto& b : in_bufs) ins.push_back(&b);
  for (auto& b : out_bufs) outs.push_back(&b);
  exe.bind(ins, outs);
  double copy_gbs = runtime::measure_copy_bandwidth_gbs();
  float ms = runtime::time_kernel_ms([&] { exe.launch(); }, 10, 100);
  double bytes = static_cast<double>(exe.min_bytes_moved());
  double gbs = bytes / (ms * 1e-3) / 1e9;
  std::cout << fmt::format("bench: {:.4f} ms median, {:.1f} MB moved at least, {:.0f} GB/s = {:.1f}% of the "
                           "copy bandwidth measured now ({:.0f} GB/s)\n",
                           ms, bytes / 1e6, gbs, 100.0 * gbs / copy_gbs, copy_gbs);
  // The same launches replayed from a CUDA graph: what is left is the kernels' own
  // time; the difference is what launching them from the host costs.
  float graph_ms = runtime::time_in_graph_ms([&] { exe.launch(); }, 3, 30);
  double graph_gbs = bytes / (graph_ms * 1e-3) / 1e9;
  std::cout << fmt::format("bench: in a CUDA graph {:.4f} ms a launch, {:.0f} GB/s = {:.1f}% of copy; launching "
                           "{} kernel{} from the host adds {:.1f} us\n",
                           graph_ms, graph_gbs, 100.0 * graph_gbs / copy_gbs, exe.plan().kernels.size(),
                           exe.plan().kernels.size() == 1 ? "" : "s", std::max(0.0f, ms - graph_ms) * 1e3f);
  if (bytes < 3.0 * static_cast<double>(runtime::Device::get().l2_bytes()))
    std::cout << "bench: note: the data is smaller than three times the L2 cache; the figure measures the cache\n";
}

int run(const RunArgs& a) {
  ir::Graph g = ir::parse_file(a.file);
  std::string why;
  bool gpu = runtime::gpu_available(&why);
  if (!gpu && !a.compile_only)
    throw Error(fmt::format("kiln run: no GPU found ({}); use --compile-only to compile the kernels and "
                            "evaluate the reference without one", why));
  runtime::ProgramOptions options;
  options.pipeline = a.pipeline;
  options.arch = a.arch.empty() && !gpu ? "sm_90a" : a.arch;
  runtime::Program program = runtime::Program::compile(g, options);
  for (const auto& k : program.kernels())
    std::cout << fmt::format("compiled {} ({}, {}) for {}: {} bytes of PTX, {} bytes of cubin{}\n", k.kernel.name,
                             ir::kernel_kind_name(k.kernel.kind), k.kernel.config.str(), program.arch(),
                             k.binary.ptx.size(), k.binary.cubin.size(), k.binary.from_cache ? " (cached)" : "");

  std::vector<HostTensor> inputs = a.inputs_dir.empty() ? ir::random_inputs(g, a.seed) : load_inputs(a.inputs_dir, g);
  if (!a.inputs_dir.empty()) std::cout << fmt::format("read {} input(s) from {}\n", inputs.size(), a.inputs_dir);
  runtime::ReferenceReport how;
  std::vector<HostTensor> reference = runtime::reference_outputs(g, inputs, &how);
  if (a.compile_only) {
    const std::string where =
        how.gpu_nodes.empty() ? "on the CPU" : fmt::format("on the CPU, {} matmul(s) on the GPU", how.gpu_nodes.size());
    for (size_t i = 0; i < reference.size(); ++i)
      std::cout << fmt::format("{}: reference evaluated {} ({} values)\n", output_label(g, i), where,
                               reference[i].numel());
    std::cout << "compile-only: every kernel compiled; nothing ran on a GPU\n";
    if (!a.save_dir.empty()) save_all(a.save_dir, g, inputs, {}, reference);
    return kExitOk;
  }

  std::cout << fmt::format("running on {} ({})\n", runtime::Device::get().name(), runtime::Device::get().arch());
  std::vector<HostTensor> outputs = program.run(inputs);
  bool ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Comparison c = compare(outputs[i], reference[i], rel_l2_bound_for(*g.outputs()[i], knobs::tf32()));
    ok = ok && c.passed;
    std::cout << fmt::format("{}: {}\n", output_label(g, i), c.str());
  }
  if (!a.save_dir.empty()) save_all(a.save_dir, g, inputs, outputs, reference);
  if (a.bench) bench(program.executable(), inputs);
  std::cout << (ok ? "PASS\n" : "FAIL\n");
  return ok ? kExitOk : kExitError;
}

}  // namespace

Command add_run_command(CLI::App& kiln) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* app = kiln.add_subcommand(
      "run", "Compile a graph, run it on the GPU on random inputs and check every output against the CPU "
             "reference interpreter.");
  app->add_option("file", args->file, "a .kiln file, or - for standard input")->required();
  app->add_option("--seed", args->seed, "seed of the random inputs (never zeros)")->capture_default_str();
  app->add_flag("--bench", args->bench,
                "also time the graph (CUDA events, warm-up, median of 100) and report GB/s against the "
                "device-to-device copy bandwidth measured in the same run");
  app->add_option("--inputs", args->inputs_dir,
                  "read the inputs from DIR/NAME.npy (one per graph input, as --save writes them) instead of "
                  "drawing random ones");
  app->add_option("--save", args->save_dir, "write inputs, outputs and reference outputs as .npy files to DIR");
  app->add_flag("--compile-only", args->compile_only,
                "compile every kernel through NVRTC and evaluate the reference; needs no GPU");
  app->add_option("--arch", args->arch, "compile for this arch (default: KILN_ARCH, else the GPU's; sm_90a "
                                        "with --compile-only and no GPU)");
  app->add_option("--pipeline", args->pipeline, "the pass pipeline")->capture_default_str();
  return Command{app, [args] { return run(*args); }};
}

}  // namespace kiln::tools
