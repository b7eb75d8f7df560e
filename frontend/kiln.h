// Kiln's C++ DSL: the one header a user includes.
//   #include "frontend/kiln.h"
//   kiln::Graph g("softmax");
//   auto x = g.input("x", kiln::f16, {4096, 4096});
//   g.output(kiln::softmax(x));
//   std::cout << g.str();
// Besides the DSL and kiln::compile it brings what a program needs to run a graph and
// check it: gpu_available(), the reference interpreter and the comparison with it.
#pragma once
#include "frontend/compile.h"
#include "frontend/graph.h"
#include "frontend/ops.h"
#include "ir/compare.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/cuda_driver.h"
#include "runtime/npy.h"
