// The shared build's run_cuda_probe (compat/cuda_probe_run.h): libcuda is
// loaded into this process with plain dlopen, as any CUDA program loads it.
#include "compat/cuda_probe.h"
#include "compat/cuda_probe_run.h"

namespace ot::compat {
namespace {

void append_line(void* context, const char* line) {
  std::string& out = *static_cast<std::string*>(context);
  out += line;
  out += '\n';
}

}  // namespace

std::string run_cuda_probe(const std::string& library, std::string& how, std::string& /*error*/) {
  how = "dlopen";
  std::string out;
  ot_cuda_probe(library.c_str(), append_line, &out);
  return out;
}

}  // namespace ot::compat
