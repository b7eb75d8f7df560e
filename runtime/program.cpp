#include "runtime/program.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "ir/error.h"
#include "ir/tile_config.h"
#include "runtime/autotuner.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "runtime/knobs.h"

namespace kiln::runtime {

namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error(fmt::format("cannot write {}", path.string()));
}

}  // namespace

void dump_kernels(const std::vector<CompiledKernel>& kernels, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("cannot create the dump folder {}: {}", dir, ec.message()));
  std::string listing;
  for (const CompiledKernel& k : kernels) {
    listing += ir::print(k.kernel) + "\n";
    write_text(std::filesystem::path(dir) / (k.kernel.name + ".cu"), k.source);
    write_text(std::filesystem::path(dir) / (k.kernel.name + ".ptx"), k.binary.ptx);
  }
  write_text(std::filesystem::path(dir) / "kernels.txt", listing);
}

Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;
Program::~Program() = default;

Program Program::compile(const ir::Graph& graph, const ProgramOptions& options) {
  Program p;
  p.source_ = std::make_unique<ir::Graph>(graph.clone());
  p.optimised_ = std::make_unique<ir::Graph>(graph.clone());
  p.arch_ = resolve_arch(CompileOptions{options.arch, {}});
  const ir::TargetScope target(p.arch_);  // tile configs for this GPU generation
  passes::PassManager pm(options.pipeline, options.passes);
  pm.run(*p.optimised_);
  p.plan_ = passes::lower(*p.optimised_);
  if (options.tune) p.tune_kernels();

  const int debug = knobs::debug_level();
  for (const ir::Kernel& k : p.plan_.kernels) {
    CompiledKernel ck;
    ck.kernel = k;
    ck.source = codegen::emit_cuda(k);
    ck.launch = codegen::launch_dims(k);
    ck.binary = CompileCache::global().compile(ck.source, graph.name() + "_" + k.name, CompileOptions{p.arch_, {}});
    if (debug >= 2) std::cerr << fmt::format("kiln: {} config {}\n", k.name, k.config.str());
    if (debug >= 4) std::cerr << ck.source << "\n";
    p.kernels_.push_back(std::move(ck));
  }
  // Dumps are written whether the binaries came from NVRTC or from the cache.
  if (options.passes.dump_dir) dump_kernels(p.kernels_, *options.passes.dump_dir);
  return p;
}

// Tunes the lowered kernels that need it, records them in the database and puts the
// chosen configs into both the plan and the optimised graph's groups.
void Program::tune_kernels() {
  const knobs::TuneMode mode = knobs::tune_mode();
  if (mode == knobs::TuneMode::Off) {
    if (knobs::debug_level() >= 1) std::cerr << "kiln: KILN_TUNE=off: not tuning; heuristic configs only\n";
    return;
  }
  std::string why;
  if (!gpu_available(&why)) throw Error(fmt::format("compiling with tuning needs a GPU ({})", why));
  const std::string db_path = knobs::tune_db();
  const TuningDb db = TuningDb::load(db_path);
  std::vector<size_t> todo;
  for (size_t i = 0; i < plan_.kernels.size(); ++i)
    if (mode == knobs::TuneMode::Refresh || !db.find(current_key(plan_.kernels[i], arch_))) todo.push_back(i);
  if (todo.empty()) return;

  std::vector<KernelReference> refs = kernel_references(*optimised_, plan_.kernels);
  TuneOptions tune_options;
  tune_options.arch = arch_;
  std::vector<TuningRecord> tuned;
  for (size_t i : todo) {
    ir::Kernel& k = plan_.kernels[i];
    TuneResult r = tune_kernel(k, refs[i], tune_options);
    if (r.best < 0) throw Error(fmt::format("kernel @{}: no tile config passed its check while tuning", k.name));
    tuned.push_back(to_record(r));
    k.config = r.kernel.config;
    for (int g = 0; g < static_cast<int>(optimised_->groups().size()); ++g)
      if (optimised_->groups()[g].name == k.name) optimised_->group(g).tile = k.config.to_attrs();
    if (knobs::debug_level() >= 2)
      std::cerr << fmt::format("kiln: {}: tuned {} configs in {:.2f} s; chose {}\n", k.name, r.trials.size(), r.wall_s,
                               k.config.str());
  }
  TuningDb::record(db_path, tuned);  // merged with what other processes recorded meanwhile
}

Executable& Program::executable() {
  if (!executable_) executable_ = std::make_unique<Executable>(plan_, kernels_);
  return *executable_;
}

std::vector<HostTensor> Program::run(const std::vector<HostTensor>& inputs) { return executable().run(inputs); }

void Program::run(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs,
                  CUstream stream) {
  check_device_tensors(plan_, inputs, outputs);
  executable().run(inputs, outputs, stream);
}

}  // namespace kiln::runtime
