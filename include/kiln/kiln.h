// The header a program that uses Kiln includes: #include <kiln/kiln.h>.
// It brings the C++ DSL, kiln::compile, the runtime's host and device entry points
// and the reference interpreter (see frontend/kiln.h).
#pragma once
#include "frontend/kiln.h"
