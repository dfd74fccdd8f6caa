// Where compat/cuda_probe.c runs, chosen by the build (compat/meson.build
// compiles one of the two files that define run_cuda_probe):
//   cuda_probe_in_process.cpp  the shared build: in this process, plain dlopen
//   cuda_probe_helper.cpp      the static build: in a small dynamically linked
//                              helper the binary carries and runs (why: there)
#pragma once

#include <string>

namespace ot::compat {

// The probe's lines (compat/cuda_probe.h) for `library`. `how` is set to
// "dlopen" or "helper"; `error` to why the probe could not run, or stopped,
// when it could not or did (the lines it wrote before are still returned).
std::string run_cuda_probe(const std::string& library, std::string& how, std::string& error);

}  // namespace ot::compat
