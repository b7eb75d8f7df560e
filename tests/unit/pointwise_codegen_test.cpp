// The pointwise emitter and the scalar table: the shape of the generated CUDA, and
// that it compiles through NVRTC for sm_90a and sm_80 for every element-wise op, every
// dtype, broadcasts, views, and sizes from 1 element to past 2^31.
#include <gtest/gtest.h>

#include "codegen_test_util.h"

#include <fmt/format.h>

#include <limits>

#include "codegen/emit.h"
#include "codegen/pointwise_emitter.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "passes/pass.h"
#include "runtime/nvrtc.h"

namespace kiln {
namespace {

// The kernels of a graph (text), renamed `prefix`_k0, ... so that several graphs can
// share one translation unit.
std::vector<ir::Kernel> kernels_of(const std::string& text, const std::string& prefix = "") {
  ir::Graph g = ir::parse(text, "pointwise_codegen_test");
  passes::create_pass("fuse")->run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  if (!prefix.empty())
    for (ir::Kernel& k : ks) k.name = prefix + "_" + k.name;
  return ks;
}

std::string source_of(const std::string& text) { return codegen::emit_cuda(kernels_of(text)); }

// As source_of, with `config` in place of the heuristic's (which gives small graphs like
// these one element a thread): the shape of vectorised code at a size a test can read.
std::string source_with(const std::string& text, const ir::TileConfig& config) {
  std::vector<ir::Kernel> ks = kernels_of(text);
  for (ir::Kernel& k : ks) k.config = config;
  return codegen::emit_cuda(ks);
}


using test::contains;
using test::expect_compiles;

void append(std::vector<ir::Kernel>& to, std::vector<ir::Kernel> more) {
  for (ir::Kernel& k : more) to.push_back(std::move(k));
}

std::string type(const std::string& dt, const std::string& shape) { return dt + "[" + shape + "]"; }

// One graph with every unary op of the op table applied to %x (log, sqrt, rsqrt to |x|).
std::string all_unary(const std::string& dt, const std::string& shape) {
  std::string t = type(dt, shape), body = "  %a = abs %x : " + t + "\n", outs, sig;
  int n = 0;
  for (ir::OpKind op : ir::all_ops()) {
    if (ir::op_info(op).category != ir::OpCategory::Unary) continue;
    std::string name(ir::op_name(op));
    std::string src = name == "log" || name == "sqrt" || name == "rsqrt" ? "%a" : "%x";
    std::string attrs = op == ir::OpKind::Gelu ? " {approximate = \"tanh\"}" : "";
    body += fmt::format("  %u{} = {} {}{} : {}\n", n, name, src, attrs, t);
    outs += fmt::format("{}%u{}", n ? ", " : "", n);
    sig += (n ? ", " : "") + t;
    ++n;
  }
  body += "  %ge = gelu %x {approximate = \"none\"} : " + t + "\n";
  return fmt::format("func @u(%x: {}) -> ({}, {}) {{\n{}  return {}, %ge\n}}\n", t, sig, t, body, outs);
}

// Binary arithmetic, comparisons and select of %x [33,65] with a row-broadcast %y [65].
std::string all_binary(const std::string& dt) {
  std::string t = type(dt, "33,65"), b = type("i1", "33,65"), body, outs, sig;
  bool is_int = dt == "i32";
  int n = 0;
  for (ir::OpKind op : ir::all_ops()) {
    auto cat = ir::op_info(op).category;
    if (cat != ir::OpCategory::Binary && cat != ir::OpCategory::Compare) continue;
    if (op == ir::OpKind::Pow && is_int) continue;  // pow is floating point only
    std::string rt = cat == ir::OpCategory::Compare ? b : t;
    body += fmt::format("  %v{} = {} %x, %y : {}\n", n, ir::op_name(op), rt);
    outs += fmt::format("{}%v{}", n ? ", " : "", n);
    sig += (n ? ", " : "") + rt;
    ++n;
  }
  body += "  %c = lt %x, %y : " + b + "\n  %s = select %c, %x, %y : " + t + "\n";
  return fmt::format("func @b(%x: {}, %y: {}) -> ({}, {}) {{\n{}  return {}, %s\n}}\n", t, type(dt, "65"), sig, t, body,
                     outs);
}

// Casts from `from` to every other dtype.
std::string all_casts(const std::string& from) {
  std::string body, outs, sig;
  int n = 0;
  for (const char* to : {"f32", "f16", "bf16", "i32", "i1"}) {
    if (from == to) continue;
    std::string t = type(to, "3,1001");
    body += fmt::format("  %c{} = cast %x : {}\n", n, t);
    outs += fmt::format("{}%c{}", n ? ", " : "", n);
    sig += (n ? ", " : "") + t;
    ++n;
  }
  return fmt::format("func @c(%x: {}) -> ({}) {{\n{}  return {}\n}}\n", type(from, "3,1001"), sig, body, outs);
}

// ---- the shape of the code ----

const char* kChain = R"(func @chain(%x: f16[64,256], %s: f16[256], %c: f16[64,1], %r: f16[64,256]) -> (f16[64,256]) {
  %m = mul %x, %s : f16[64,256]
  %a = add %m, %c : f16[64,256]
  %g = gelu %a {approximate = "tanh"} : f16[64,256]
  %y = add %g, %r : f16[64,256]
  return %y
})";

std::string add_of(const std::string& t) {
  return "func @add(%x: " + t + ", %y: " + t + ") -> (" + t + ") {\n  %a = add %x, %y : " + t + "\n  return %a\n}\n";
}

TEST(PointwiseCodegen, IncludesHalfHeadersOnlyWhenNeeded) {
  std::string f32 = source_of(add_of("f32[64]"));
  EXPECT_FALSE(contains(f32, "cuda_fp16.h"));
  EXPECT_FALSE(contains(f32, "cuda_bf16.h"));
  std::string f16 = source_of(add_of("f16[64]"));
  EXPECT_TRUE(contains(f16, "#include <cuda_fp16.h>"));
  EXPECT_FALSE(contains(f16, "cuda_bf16.h"));
  EXPECT_TRUE(contains(source_of(add_of("bf16[64]")), "#include <cuda_bf16.h>"));
}

TEST(PointwiseCodegen, SignatureFollowsTheArgumentOrder) {
  EXPECT_TRUE(contains(source_of(kChain),
                       "extern \"C\" __global__ void __launch_bounds__(64) k0(const __half* __restrict__ in_x, "
                       "const __half* __restrict__ in_s, const __half* __restrict__ in_c, "
                       "const __half* __restrict__ in_r, __half* __restrict__ out_y) {"));
}

const ir::TileConfig kVectors8{64, 8, 8};

TEST(PointwiseCodegen, HeaderNamesTheFusedNodesAndTheConfig) {
  std::string src = source_with(kChain, kVectors8);
  EXPECT_TRUE(contains(src, "//   %g = gelu %a {approximate = \"tanh\"} : f16[64,256]\n"));
  EXPECT_TRUE(contains(src, "// Config {threads = 64, elems = 8, vec = 8}: grid 32 x 64 threads"));
}

TEST(PointwiseCodegen, ContiguousHalvesMoveAs16ByteVectors) {
  std::string src = source_with(kChain, kVectors8);
  EXPECT_TRUE(contains(src, "= *reinterpret_cast<const kiln_vec<__half, 8>*>(in_x + base);"));
  EXPECT_TRUE(contains(src, "*reinterpret_cast<kiln_vec<__half, 8>*>(out_y + base) = "));
}

TEST(PointwiseCodegen, RowBroadcastLoadsVectorsAlongTheRow) {
  std::string src = source_with(kChain, kVectors8);
  EXPECT_TRUE(contains(src, "const unsigned int off1 = c1;"));  // %s: the column index
  EXPECT_TRUE(contains(src, "*reinterpret_cast<const kiln_vec<__half, 8>*>(in_s + off1);"));
}

TEST(PointwiseCodegen, ColumnBroadcastLoadsOneValuePerVector) {
  std::string src = source_of(kChain);
  EXPECT_TRUE(contains(src, "const unsigned int off2 = c0;"));  // %c: the row index
  EXPECT_TRUE(contains(src, "const __half v2 = in_c[off2];"));
}

TEST(PointwiseCodegen, TransposedArgumentIsReadElementByElement) {
  std::string src = source_of(R"(func @t(%x: f32[10,6], %y: f32[6,10]) -> (f32[6,10]) {
  %t = transpose %x {perm = [1, 0]} : f32[6,10]
  %a = add %t, %y : f32[6,10]
  return %a
})");
  EXPECT_TRUE(contains(src, "const unsigned int off0 = c0 + c1 * 6u;"));
  EXPECT_TRUE(contains(src, "in_x[off0 + (unsigned int)j * 6u]"));
}

TEST(PointwiseCodegen, VectorsCrossingRowsIndexEachElement) {
  // Rows of 10 do not hold whole vectors of 4: the broadcast %w is indexed per element.
  std::string src = source_with(R"(func @r(%x: f32[6,10], %w: f32[10]) -> (f32[6,10]) {
  %a = mul %x, %w : f32[6,10]
  return %a
})", ir::TileConfig{64, 4, 4});
  EXPECT_TRUE(contains(src, "const unsigned int e1 = eq % 10u;"));
  EXPECT_TRUE(contains(src, "in_w[e1]"));
}

TEST(PointwiseCodegen, ShapesAreBakedInAsConstants) {
  EXPECT_TRUE(contains(source_of(add_of("f32[1000003]")), "const unsigned int n = 1000003u;"));
}

TEST(PointwiseCodegen, ScalarTailOnlyWhenTheSizeIsNotAMultipleOfTheVector) {
  EXPECT_TRUE(contains(source_of(add_of("f32[1000003]")), "} else if (base < n) {"));
  EXPECT_FALSE(contains(source_of(add_of("f32[1048576]")), "else if"));
}

TEST(PointwiseCodegen, IndicesWidenTo64BitsAt2To31Elements) {
  std::string below = source_of(add_of("i32[2147483647]"));
  EXPECT_TRUE(contains(below, "const unsigned int n = 2147483647u;"));
  EXPECT_FALSE(contains(below, "unsigned long long"));
  std::string at = source_of(add_of("i32[2147483648]"));
  EXPECT_TRUE(contains(at, "const unsigned long long n = 2147483648ull;"));
}

TEST(PointwiseCodegen, LaunchDimsCoverTheIterationSpace) {
  std::vector<ir::Kernel> ks = kernels_of(add_of("f32[1000003]"));
  ks[0].config = ir::TileConfig{256, 4, 4};
  codegen::LaunchDims d = codegen::launch_dims(ks[0]);
  EXPECT_EQ(d.grid[0], 977u);  // ceil(1000003 / 1024)
  EXPECT_EQ(d.block[0], 256u);
  EXPECT_EQ(d.grid[1] * d.grid[2] * d.block[1] * d.block[2], 1u);
  EXPECT_EQ(d.shared_bytes, 0u);
}

TEST(PointwiseCodegen, IllegalConfigIsRefused) {
  std::vector<ir::Kernel> ks = kernels_of(add_of("f32[64]"));
  ks[0].config = ir::TileConfig{256, 8, 8};
  EXPECT_THROW(codegen::emit_cuda(ks), Error);
}

TEST(PointwiseCodegen, TwoKernelsWithOneNameAreRefused) {
  std::vector<ir::Kernel> ks = kernels_of(add_of("f32[64]"));
  ks.push_back(ks[0]);
  EXPECT_THROW(codegen::emit_cuda(ks), Error);
}

// ---- the scalar table ----

TEST(ScalarEmit, EveryElementwiseOpHasAnExpressionForEveryDtypeItAccepts) {
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1};
  int covered = 0;
  for (ir::OpKind op : ir::all_ops()) {
    if (!ir::is_elementwise(op)) continue;
    const int arity = ir::op_info(op).arity;
    for (DType t : dtypes)
      for (DType to : dtypes) {
        if (op != ir::OpKind::Cast && to != dtypes[0]) continue;  // only casts have a free result type
        std::vector<TensorType> in(arity, TensorType{t, {4}});
        if (op == ir::OpKind::Select) in[0].dtype = DType::i1;
        ir::Attrs attrs = ir::complete_attrs(op, {});
        TensorType result;
        try {
          result = ir::infer_type(op, in, attrs, TensorType{to, {4}});
        } catch (const Error&) {
          continue;  // the op table rejects this combination
        }
        std::vector<DType> types;
        std::vector<std::string> names;
        for (int i = 0; i < arity; ++i) {
          types.push_back(in[i].dtype);
          names.push_back("r" + std::to_string(i));
        }
        EXPECT_NO_THROW(codegen::op_expr(op, attrs, result.dtype, types, names))
            << ir::op_name(op) << " " << dtype_name(t) << " -> " << dtype_name(result.dtype);
        ++covered;
      }
  }
  EXPECT_GT(covered, 80);
}

TEST(ScalarEmit, ComparisonsOfHalvesSeeRoundedValues) {
  EXPECT_EQ(codegen::op_expr(ir::OpKind::Lt, {}, DType::i1, {DType::f16, DType::f16}, {"r0", "r1"}),
            "(kiln_round_f16(r0) < kiln_round_f16(r1) && kiln_is_number(kiln_round_f16(r0)) && "
            "kiln_is_number(kiln_round_f16(r1)))");
  EXPECT_EQ(codegen::op_expr(ir::OpKind::Lt, {}, DType::i1, {DType::i32, DType::i32}, {"r0", "r1"}), "(r0 < r1)");
}

// ptxas folds `x * x >= 0` and `fabsf(x) >= 0` to true, NaN or not; every ordered float
// compare tests its operands' bits for NaN too, and ne (true on NaN) needs no test.
TEST(ScalarEmit, OrderedFloatComparesTestForNaN) {
  for (ir::OpKind op : {ir::OpKind::Lt, ir::OpKind::Le, ir::OpKind::Gt, ir::OpKind::Ge, ir::OpKind::Eq}) {
    const std::string e = codegen::op_expr(op, {}, DType::i1, {DType::f32, DType::f32}, {"r0", "r1"});
    EXPECT_TRUE(contains(e, "kiln_is_number(r0) && kiln_is_number(r1)")) << e;
    EXPECT_TRUE(contains(codegen::helper_definitions(e), "(__float_as_uint(x) & 0x7fffffffu) <= 0x7f800000u"));
  }
  EXPECT_EQ(codegen::op_expr(ir::OpKind::Ne, {}, DType::i1, {DType::f32, DType::f32}, {"r0", "r1"}), "(r0 != r1)");
}

// An erf GELU whose result is f16 or bf16 takes the short helper (its error is hundredths of
// their spacing; every 16-bit input is checked on the GPU); an f32 result keeps erfcf.
TEST(ScalarEmit, GeluErfOfAShortResultTakesTheShortHelper) {
  ir::Attrs erf;
  erf.set("approximate", std::string("none"));
  for (DType dt : {DType::f16, DType::bf16}) {
    const std::string e = codegen::op_expr(ir::OpKind::Gelu, erf, dt, {dt}, {"r0"});
    EXPECT_EQ(e, "kiln_gelu_erf_short(r0)");
    EXPECT_TRUE(contains(codegen::helper_definitions(e), "ex2.approx.ftz.f32"));
  }
  const std::string f32 = codegen::op_expr(ir::OpKind::Gelu, erf, DType::f32, {DType::f32}, {"r0"});
  EXPECT_TRUE(contains(f32, "erfcf(")) << f32;
}

TEST(ScalarEmit, CastsRoundTheirSourceThenConvert) {
  EXPECT_EQ(codegen::op_expr(ir::OpKind::Cast, {}, DType::i32, {DType::bf16}, {"r0"}),
            "__float2int_rz(kiln_round_bf16(r0))");
  EXPECT_EQ(codegen::op_expr(ir::OpKind::Cast, {}, DType::f16, {DType::i32}, {"r0"}), "kiln_round_f16((float)r0)");
  EXPECT_EQ(codegen::op_expr(ir::OpKind::Cast, {}, DType::f32, {DType::i1}, {"r0"}), "(r0 ? 1.0f : 0.0f)");
}

TEST(ScalarEmit, IntegerDivisionByZeroIsDefined) {
  std::string e = codegen::op_expr(ir::OpKind::Div, {}, DType::i32, {DType::i32, DType::i32}, {"r0", "r1"});
  EXPECT_EQ(e, "kiln_div_i32(r0, r1)");
  std::string helpers = codegen::helper_definitions(e);
  EXPECT_TRUE(contains(helpers, "return b == 0 ? 0 : kiln_sat_i32((long long)a / b);"));
  EXPECT_LT(helpers.find("int kiln_sat_i32("), helpers.find("int kiln_div_i32("));  // callee first
}

TEST(ScalarEmit, MaxPropagatesNaN) {
  std::string helpers = codegen::helper_definitions("kiln_max(a, b)");
  EXPECT_TRUE(contains(helpers, "(a != a || a > b) ? a : b"));
  EXPECT_FALSE(contains(helpers, "kiln_min"));
}

TEST(ScalarEmit, ConstantLiterals) {
  EXPECT_EQ(codegen::const_expr(DType::f32, 3.0), "3.0f");
  EXPECT_EQ(codegen::const_expr(DType::f32, -0.5), "-0.5f");
  EXPECT_EQ(codegen::const_expr(DType::f16, 0.0999755859375), "0.0999755859f");
  EXPECT_EQ(codegen::const_expr(DType::f32, 1e30), "1.00000002e+30f");
  EXPECT_EQ(codegen::const_expr(DType::f32, std::numeric_limits<double>::infinity()), "__int_as_float(0x7f800000)");
  EXPECT_EQ(codegen::const_expr(DType::i32, -2147483648.0), "(-2147483647 - 1)");
  EXPECT_EQ(codegen::const_expr(DType::i1, 1.0), "true");
}

// ---- NVRTC accepts the code ----

TEST(PointwiseCompile, EveryUnaryOpInEveryFloatDtype) {
  std::vector<ir::Kernel> ks;
  for (const char* dt : {"f32", "f16", "bf16"}) append(ks, kernels_of(all_unary(dt, "7,1000"), std::string("u_") + dt));
  expect_compiles(ks, "unary");
}

TEST(PointwiseCompile, EveryBinaryOpComparisonAndSelect) {
  std::vector<ir::Kernel> ks;
  for (const char* dt : {"f32", "f16", "bf16", "i32"}) append(ks, kernels_of(all_binary(dt), std::string("b_") + dt));
  expect_compiles(ks, "binary");
}

TEST(PointwiseCompile, BooleanComparisonsAndSelect) {
  expect_compiles(kernels_of(R"(func @bo(%p: i1[17,31], %q: i1[31], %x: f16[17,31])
    -> (i1[17,31], i1[17,31], f16[17,31]) {
  %e = eq %p, %q : i1[17,31]
  %n = ne %p, %q : i1[17,31]
  %s = select %e, %x, %x : f16[17,31]
  return %e, %n, %s
})"),
                  "bool");
}

TEST(PointwiseCompile, CastsBetweenEveryPairOfDtypes) {
  std::vector<ir::Kernel> ks;
  for (const char* dt : {"f32", "f16", "bf16", "i32", "i1"})
    append(ks, kernels_of(all_casts(dt), std::string("c_") + dt));
  expect_compiles(ks, "casts");
}

TEST(PointwiseCompile, BroadcastAlongEachAxis) {
  std::vector<ir::Kernel> ks;
  for (const char* dt : {"f32", "f16"}) {
    std::string t = type(dt, "5,6,7");
    append(ks, kernels_of(fmt::format(R"(func @bc(%x: {0}, %a: {1}[6,7], %b: {1}[5,1,7], %c: {1}[5,6,1], %d: {1}[1,6,1],
    %s: {1}[]) -> ({0}) {{
  %0 = add %x, %a : {0}
  %1 = mul %0, %b : {0}
  %2 = sub %1, %c : {0}
  %3 = add %2, %d : {0}
  %4 = mul %3, %s : {0}
  return %4
}})",
                                      t, dt),
                          std::string("bc_") + dt));
  }
  append(ks, kernels_of(R"(func @rows(%x: f16[64,256], %w: f16[256], %c: f16[64,1]) -> (f16[64,256]) {
  %a = mul %x, %w : f16[64,256]
  %b = add %a, %c : f16[64,256]
  return %b
})",
                        "rows"));
  expect_compiles(ks, "broadcast");
}

TEST(PointwiseCompile, TransposeReshapeIotaAndBroadcastViews) {
  std::vector<ir::Kernel> ks;
  append(ks, kernels_of(R"(func @t(%x: f32[5,6,7], %y: f16[64,48], %z: f16[48,64]) -> (f32[6,7,5], f16[48,64]) {
  %t = transpose %x {perm = [2, 0, 1]} : f32[7,5,6]
  %u = transpose %t {perm = [2, 0, 1]} : f32[6,7,5]
  %e = exp %u : f32[6,7,5]
  %ty = transpose %y {perm = [1, 0]} : f16[48,64]
  %a = add %ty, %z : f16[48,64]
  return %e, %a
})",
                        "t"));
  append(ks, kernels_of(R"(func @r(%x: f32[6,10], %w: f32[10,6], %z: f32[4,15]) -> (f32[60], f32[10,6], f32[4,15]) {
  %t = transpose %x {perm = [1, 0]} : f32[10,6]
  %r = reshape %t : f32[60]
  %e = exp %r : f32[60]
  %u = add %t, %w : f32[10,6]
  %q = reshape %z : f32[3,4,5]
  %n = neg %q : f32[3,4,5]
  %f = reshape %n : f32[4,15]
  %g = add %f, %z : f32[4,15]
  return %e, %u, %g
})",
                        "r"));
  append(ks, kernels_of(R"(func @io(%x: f32[9,11], %y: f16[5,1,37]) -> (f32[9,11], i32[9,11], bf16[9,11], f16[5,8,37]) {
  %i = iota {axis = 0} : f32[9,11]
  %a = add %x, %i : f32[9,11]
  %j = iota {axis = 1} : i32[9,11]
  %k = iota {axis = 1} : bf16[9,11]
  %e = exp %y : f16[5,1,37]
  %b = broadcast %e : f16[5,8,37]
  return %a, %j, %k, %b
})",
                        "io"));
  expect_compiles(ks, "views");
}

TEST(PointwiseCompile, SizesFromOneElementToPast2To31) {
  std::vector<ir::Kernel> ks;
  for (const char* n : {"1", "7", "1000003"}) append(ks, kernels_of(add_of(type("f16", n)), std::string("n") + n));
  append(ks, kernels_of(add_of("f16[2147483653]"), "wide_contiguous"));
  append(ks, kernels_of(R"(func @big(%x: i1[3,715827883], %c: i1[715827883]) -> (i1[3,715827883]) {
  %y = ne %x, %c : i1[3,715827883]
  return %y
})",
                        "wide_broadcast"));
  EXPECT_TRUE(contains(codegen::emit_cuda({ks.back()}), "unsigned long long"));
  expect_compiles(ks, "sizes");
}

TEST(PointwiseCompile, EveryVectorWidthAndBlockShape) {
  std::vector<ir::Kernel> chain = kernels_of(kChain);
  std::vector<ir::Kernel> ks;
  for (const ir::TileConfig& c : ir::candidates(chain[0])) {
    if (c.threads != 64 && c.threads != 1024) continue;
    if (c.elems != c.vec && c.elems != 16) continue;
    ir::Kernel k = chain[0];
    k.name = fmt::format("t{}_e{}_v{}", c.threads, c.elems, c.vec);
    k.config = c;
    ks.push_back(std::move(k));
  }
  EXPECT_EQ(ks.size(), 16u);  // 2 block sizes x 4 vector widths x 2 element counts (vec 1: 1 and 16, ...)
  expect_compiles(ks, "configs");
}

}  // namespace
}  // namespace kiln
