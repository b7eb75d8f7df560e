// Kiln's C++ DSL: the one header a user includes.
//   #include "frontend/kiln.h"
//   kiln::Graph g("softmax");
//   auto x = g.input("x", kiln::f16, {4096, 4096});
//   g.output(kiln::softmax(x));
//   std::cout << g.str();
#pragma once
#include "frontend/compile.h"
#include "frontend/graph.h"
#include "frontend/ops.h"
#include "ir/error.h"
#include "ir/printer.h"
