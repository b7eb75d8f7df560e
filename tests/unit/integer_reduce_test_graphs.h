// The i32 reductions that the unit and GPU tests share, as Kiln text: sum, max and
// min over the last axis, the first, a middle one, several apart and all of them, on
// lengths of 1, 7, 1000 and 4097; the same with the values scaled into the range
// where sums saturate; and i32 reductions in one kernel with float ones and an
// element-wise epilogue.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reduce_axes_test_graphs.h"

namespace kiln::integer_reduce_test {

inline const char* const kOps[] = {"sum", "max", "min"};

enum class Pattern { LastAxis, FirstAxis, MiddleAxis, SeveralAxes, AllAxes };

struct Case {
  std::vector<int64_t> shape;
  std::vector<int64_t> axes;
  Pattern pattern;
};

inline const Case kCases[] = {
    {{7, 4097}, {1}, Pattern::LastAxis},          {{1000, 7}, {1}, Pattern::LastAxis},
    {{3, 5, 1000}, {2}, Pattern::LastAxis},       {{4097, 7}, {0}, Pattern::FirstAxis},
    {{1000, 1000}, {0}, Pattern::FirstAxis},      {{7, 1000, 9}, {1}, Pattern::MiddleAxis},
    {{3, 4097, 5}, {1}, Pattern::MiddleAxis},     {{5, 33, 17, 9}, {0, 2}, Pattern::SeveralAxes},
    {{7, 1000, 7}, {0, 2}, Pattern::SeveralAxes}, {{5, 33, 17, 9}, {1, 3}, Pattern::SeveralAxes},
    {{1000, 7}, {0, 1}, Pattern::AllAxes},        {{4097}, {0}, Pattern::AllAxes},
    {{7}, {0}, Pattern::AllAxes},
};

// Reductions of size-1 axes, which simplify turns into copies: the GPU tests check
// them too.
inline const Case kLengthOneCases[] = {
    {{1000, 1}, {1}, Pattern::LastAxis},
    {{1}, {0}, Pattern::AllAxes},
    {{1, 7}, {0}, Pattern::FirstAxis},
};

inline std::string reduce_graph(const std::string& op, const Case& c, bool keepdim) {
  return reduce_axes_test::reduce_graph(op, "i32", c.shape, c.axes, keepdim);
}

// The values (1..9 in magnitude from ir::random_inputs) times 3e8, saturating from 8
// on, before the reduction: sums leave the i32 range and saturate once at the end, and
// max / min meet the bounds.
inline std::string scaled_reduce_graph(const std::string& op, const Case& c, bool keepdim) {
  const std::string in = "i32" + reduce_axes_test::dims_str(c.shape);
  const std::string out = "i32" + reduce_axes_test::dims_str(reduce_axes_test::reduced_shape(c.shape, c.axes, keepdim));
  std::string axes;
  for (size_t i = 0; i < c.axes.size(); ++i) axes += (i ? ", " : "") + std::to_string(c.axes[i]);
  return "func @scaled(%x: " + in + ") -> (" + out + ") {\n  %c = const 300000000 : i32[]\n  %b = broadcast %c : " +
         in + "\n  %y = mul %x, %b : " + in + "\n  %s = " + op + " %y {axis = [" + axes + "], keepdim = " +
         (keepdim ? "true" : "false") + "} : " + out + "\n  return %s\n}\n";
}

// One row kernel: an i32 sum and max next to an f32 mean of the same rows, the i32
// results cast and combined with the float one after the reductions.
inline const char* const kMixedRows = R"(func @mixed_rows(%x: i32[37,1000]) -> (f32[37], i32[37]) {
  %s = sum %x {axis = [1]} : i32[37]
  %m = max %x {axis = [1]} : i32[37]
  %f = cast %x : f32[37,1000]
  %a = mean %f {axis = [1]} : f32[37]
  %c = cast %s : f32[37]
  %y = add %c, %a : f32[37]
  %d = sub %m, %s : i32[37]
  return %y, %d
})";

// The same over a middle axis: one col_reduce kernel.
inline const char* const kMixedColumns = R"(func @mixed_cols(%x: i32[9,4097,5]) -> (f32[9,5], i32[9,5]) {
  %s = sum %x {axis = [1]} : i32[9,5]
  %m = min %x {axis = [1]} : i32[9,5]
  %f = cast %x : f32[9,4097,5]
  %a = mean %f {axis = [1]} : f32[9,5]
  %c = cast %s : f32[9,5]
  %y = mul %c, %a : f32[9,5]
  %d = add %m, %s : i32[9,5]
  return %y, %d
})";

// An i32 sum of a float tensor cast to i32 (truncated) in a row kernel.
inline const char* const kCastThenSum = R"(func @cast_sum(%x: f32[64,777]) -> (i32[64]) {
  %t = mul %x, %x : f32[64,777]
  %k = const 1000.0 : f32[]
  %b = broadcast %k : f32[64,777]
  %u = mul %t, %b : f32[64,777]
  %i = cast %u : i32[64,777]
  %s = sum %i {axis = [1]} : i32[64]
  return %s
})";

}  // namespace kiln::integer_reduce_test
