// Opening a vendor library at run time (dlopen), as the CUDA driver is opened, so that
// Kiln builds and runs on machines without it and can say why a row is missing.
#pragma once
#include <initializer_list>
#include <string>

namespace kiln::runtime {

// The first of `names` that dlopen finds (kept open for the life of the process), or
// nullptr with *why saying what was tried ("libcublasLt.so.13 not found (tried ...)").
void* open_shared_library(std::initializer_list<const char*> names, std::string* why);

// `library`'s symbol `name`, or nullptr.
void* library_symbol(void* library, const char* name);

// Empty when the GPU's primary context, which a vendor library's handle runs in, is
// ready (made current here); otherwise why not ("no GPU: ...").
std::string primary_context_problem();

}  // namespace kiln::runtime
