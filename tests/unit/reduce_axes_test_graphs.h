// The reductions over any set of axes that the unit and GPU tests share, as Kiln text:
// `op` of an input of dtype `dt` and shape `shape` over `axes`, with or without keepdim.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::reduce_axes_test {

inline const char* const kOps[] = {"sum", "max", "min", "mean", "logsumexp", "var"};

inline std::string dims_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// The reduction's result shape: the reduced dims dropped, or kept as 1.
inline std::vector<int64_t> reduced_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes,
                                          bool keepdim) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = false;
    for (int64_t a : axes) reduced = reduced || a == static_cast<int64_t>(d);
    if (!reduced) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

inline std::string reduce_graph(const std::string& op, const std::string& dt, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& axes, bool keepdim) {
  std::string axes_text;
  for (size_t i = 0; i < axes.size(); ++i) axes_text += (i ? ", " : "") + std::to_string(axes[i]);
  const std::string in = dt + dims_str(shape), out = dt + dims_str(reduced_shape(shape, axes, keepdim));
  return "func @" + op + "_axes(%x: " + in + ") -> (" + out + ") {\n  %s = " + op + " %x {axis = [" + axes_text +
         "], keepdim = " + (keepdim ? "true" : "false") + "} : " + out + "\n  return %s\n}\n";
}

// The shapes and axis sets every pattern is tested on: a middle axis ([K1, R, K2]),
// outer and inner axes ([R1, K, R2]), two axes apart of a rank-4 tensor, all axes,
// and size-1 dims that canonicalisation drops.
struct AxesCase {
  std::vector<int64_t> shape;
  std::vector<int64_t> axes;
};
inline const AxesCase kCases[] = {
    {{3, 1000, 7}, {1}},       {{3, 1000, 7}, {0, 2}},       {{3, 1000, 7}, {0, 1, 2}},
    {{5, 33, 17, 9}, {1}},     {{5, 33, 17, 9}, {0, 2}},     {{5, 33, 17, 9}, {1, 3}},
    {{5, 33, 17, 9}, {0, 1, 2, 3}}, {{33, 1, 50, 4}, {2}}, {{128, 40, 1, 1}, {1}},
    {{16, 64, 256}, {1}},      {{4, 96, 8, 128}, {0, 2}},
};

// A middle-axis mean with an element-wise prologue (a weight broadcast along the rows,
// a cast) and epilogue (sqrt, a bias of the kept shape, a cast): one kernel.
inline const char* const kFusedMiddleAxis = R"(func @fused(%x: f16[8,300,64], %w: f16[64], %b: f32[8,1,64]) -> (bf16[8,1,64]) {
  %a = mul %x, %w : f16[8,300,64]
  %f = cast %a : f32[8,300,64]
  %q = mul %f, %f : f32[8,300,64]
  %m = mean %q {axis = [1], keepdim = true} : f32[8,1,64]
  %r = sqrt %m : f32[8,1,64]
  %s = add %r, %b : f32[8,1,64]
  %y = cast %s : bf16[8,1,64]
  return %y
})";

}  // namespace kiln::reduce_axes_test
