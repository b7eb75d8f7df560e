// Launch helper, event timing and the copy-bandwidth roofline.
#include "runtime/timer.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"

namespace kiln::runtime {

void launch_kernel(CUfunction function, Dim3 grid, Dim3 block, unsigned shared_bytes, const std::vector<void*>& args,
                   std::string_view name, CUstream stream) {
  // Static and dynamic shared memory together past 48 KB need the function's opt-in.
  if (shared_bytes > 0)
    cu::func_set_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(shared_bytes));
  cu::check(driver().cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes,
                                    cu::launch_stream(stream),
                                    const_cast<void**>(args.data()), nullptr),
            "cuLaunchKernel({}, grid ({}, {}, {}), block ({}, {}, {}), {} bytes of shared memory, {} arguments)", name,
            grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, args.size());
}

void prefer_shared_blocks(CUfunction function, unsigned blocks_per_sm) {
  if (blocks_per_sm > 1)
    cu::func_set_attribute(function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, CU_SHAREDMEM_CARVEOUT_MAX_SHARED);
}

namespace {

float median(std::vector<float> times) {
  std::sort(times.begin(), times.end());
  size_t mid = times.size() / 2;
  return times.size() % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
}

}  // namespace

float time_kernel_ms(const std::function<void()>& launch, int warmup, int reps) {
  if (warmup < 0 || reps < 1)
    throw Error(fmt::format("time_kernel_ms needs warmup >= 0 and reps >= 1, got {} and {}", warmup, reps));
  Device::get();
  for (int i = 0; i < warmup; ++i) launch();
  // One pair of events per run, all recorded before waiting, so that the host never
  // stalls the GPU between runs.
  std::vector<Event> starts(reps), stops(reps);
  for (int i = 0; i < reps; ++i) {
    starts[i].record();
    launch();
    stops[i].record();
  }
  stops.back().synchronize();
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) times.push_back(stops[i].elapsed_ms_since(starts[i]));
  return median(std::move(times));
}

int warm_up_for_ms(const std::function<void()>& launch, float min_ms) {
  if (!(min_ms >= 0)) throw Error(fmt::format("warm_up_for_ms needs min_ms >= 0, got {}", min_ms));
  Device::get();
  int calls = 0, batch = 1;
  for (float spent = 0; spent < min_ms;) {
    Event start, stop;
    start.record();
    for (int i = 0; i < batch; ++i) launch();
    stop.record();
    stop.synchronize();
    calls += batch;
    spent += stop.elapsed_ms_since(start);
    batch = std::min(batch * 2, 4096);  // short kernels: larger batches keep the GPU busy
  }
  return calls;
}

namespace {

// A non-blocking stream, a captured graph and its executable, destroyed in that order.
struct CapturedGraph {
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CapturedGraph() { cu::check(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); }
  ~CapturedGraph() {
    if (exec) driver().cuGraphExecDestroy(exec);
    if (graph) driver().cuGraphDestroy(graph);
    driver().cuStreamDestroy_v2(stream);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
};

}  // namespace

float time_in_graph_ms(const std::function<void()>& launch, int warmup, int reps, int per_graph) {
  if (warmup < 0 || reps < 1 || per_graph < 1)
    throw Error(fmt::format("time_in_graph_ms needs warmup >= 0, reps >= 1 and per_graph >= 1, got {}, {} and {}",
                            warmup, reps, per_graph));
  Device::get();
  CapturedGraph g;
  const cu::ScopedLaunchStream on(g.stream);
  // Warm-up outside the capture: first launches set function attributes and load lazily.
  for (int i = 0; i < std::max(warmup, 1); ++i) launch();
  cu::check(driver().cuStreamSynchronize(g.stream), "cuStreamSynchronize");
  // Relaxed: a launch may still set a function attribute while it is captured.
  cu::check(driver().cuStreamBeginCapture_v2(g.stream, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
  try {
    for (int i = 0; i < per_graph; ++i) launch();
  } catch (...) {
    CUgraph broken = nullptr;
    driver().cuStreamEndCapture(g.stream, &broken);
    if (broken) driver().cuGraphDestroy(broken);
    throw;
  }
  cu::check(driver().cuStreamEndCapture(g.stream, &g.graph), "cuStreamEndCapture (a launch that cannot be captured?)");
  // A launch that went to a stream of its own ran outside the graph, which would time nothing.
  size_t nodes = 0;
  cu::check(driver().cuGraphGetNodes(g.graph, nullptr, &nodes), "cuGraphGetNodes");
  if (nodes == 0) throw Error("time_in_graph_ms: the captured launches put no work into the graph (a launch on a stream other than the runtime's launch stream?)");
  cu::check(driver().cuGraphInstantiateWithFlags(&g.exec, g.graph, 0), "cuGraphInstantiate");
  cu::check(driver().cuGraphLaunch(g.exec, g.stream), "cuGraphLaunch");  // the first replay uploads the graph
  std::vector<Event> starts(reps), stops(reps);
  for (int i = 0; i < reps; ++i) {
    starts[i].record(g.stream);
    cu::check(driver().cuGraphLaunch(g.exec, g.stream), "cuGraphLaunch");
    stops[i].record(g.stream);
  }
  stops.back().synchronize();
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) times.push_back(stops[i].elapsed_ms_since(starts[i]) / static_cast<float>(per_graph));
  return median(std::move(times));
}

double measure_copy_bandwidth_gbs(size_t bytes) {
  if (bytes == 0) throw Error("measure_copy_bandwidth_gbs needs a non-zero size");
  DeviceBuffer source(bytes), destination(bytes);
  source.fill_bytes(0x5a);
  destination.fill_bytes(0);
  float ms = time_kernel_ms([&] { cu::memcpy_dtod_async(destination.ptr(), source.ptr(), bytes); }, 3, 11);
  return 2.0 * static_cast<double>(bytes) / (static_cast<double>(ms) * 1e-3) / 1e9;
}

}  // namespace kiln::runtime
