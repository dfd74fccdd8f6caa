// NVIDIA GPUs through the CUDA driver API: compat/cuda_probe.c asks the
// driver and writes lines; this file reads them. Where the probe runs is the
// build's choice (compat/cuda_probe_run.h): in this process with plain dlopen
// (the shared build), or in a helper the static binary carries and executes
// (why: compat/cuda_probe_helper.cpp; docs/gpu-detection.md).
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>

#include <fmt/format.h>

#include "compat/cuda_probe_run.h"
#include "compat/detect.h"
#include "support/error.h"

namespace ot::compat {
namespace {

int to_int(std::string_view s) {
  int v = 0;
  bool neg = !s.empty() && s.front() == '-';
  if (neg) s.remove_prefix(1);
  for (char c : s) {
    if (c < '0' || c > '9' || v > 100000000) return 0;
    v = v * 10 + (c - '0');
  }
  return neg ? -v : v;
}

std::string_view next_word(std::string_view& rest) {
  auto sp = rest.find(' ');
  std::string_view w = rest.substr(0, sp);
  rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
  return w;
}

std::string result_text(int code, std::string_view name) {
  return name.empty() || name == "-" ? fmt::format("CUresult {}", code) : fmt::format("{} ({})", name, code);
}

// compat/cuda_probe.h's lines -> the result. A probe that stopped before its
// "end" (or a line after which nothing follows by design) is an error.
void read_probe_lines(std::string_view text, CudaResult& r) {
  bool ended = false;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    std::string_view rest = line;
    std::string_view key = next_word(rest);
    if (key == "library") {
      continue;
    } else if (key == "open-error") {
      r.no_driver = true;
      r.error = fmt::format("no NVIDIA driver ({})", rest);
      ended = true;
    } else if (key == "missing") {
      r.error = fmt::format("{} is not a CUDA driver library: it has no {}", r.library, rest);
      ended = true;
    } else if (key == "driver") {
      r.loaded = true;
      r.driver_version = to_int(rest);
    } else if (key == "init") {
      r.loaded = true;
      int code = to_int(next_word(rest));
      r.init_result = code;
      r.init_result_name = rest == "-" ? "" : std::string(rest);
      if (code == 34) {  // CUDA_ERROR_STUB_LIBRARY: the toolkit's link-time stub, whose cuGetErrorName names nothing
        r.no_driver = true;
        r.error = fmt::format("no NVIDIA driver ({} is CUDA's stub library: cuInit returned CUDA_ERROR_STUB_LIBRARY (34))",
                              r.library);
      } else if (code == 100) {  // CUDA_ERROR_NO_DEVICE
        r.no_device = true;
        r.error = fmt::format("no NVIDIA GPU (the driver, {}, found none: cuInit returned {})", r.library,
                              result_text(code, rest));
      } else if (code != 0) {
        r.error = fmt::format("the NVIDIA driver ({}) failed: cuInit returned {}", r.library, result_text(code, rest));
      }
      if (code != 0) ended = true;
    } else if (key == "count-error") {
      int code = to_int(next_word(rest));
      r.error = fmt::format("the NVIDIA driver ({}) failed: cuDeviceGetCount returned {}", r.library,
                            result_text(code, rest));
      ended = true;
    } else if (key == "count") {
      if (to_int(rest) == 0) r.no_device = true;
    } else if (key == "device") {
      CudaGpu g;
      g.ordinal = to_int(next_word(rest));
      g.major = to_int(next_word(rest));
      g.minor = to_int(next_word(rest));
      int code = to_int(next_word(rest));
      g.name = std::string(rest);
      if (code != 0)
        g.note = fmt::format("the driver could not give its compute capability: {}", result_text(code, ""));
      else if (g.major <= 0 || g.minor < 0 || g.minor > 9)
        g.note = fmt::format("the driver gave compute capability {}.{}, which names no sm_ target", g.major, g.minor);
      else
        g.target = fmt::format("sm_{}{}", g.major, g.minor);
      r.gpus.push_back(std::move(g));
    } else if (key == "end") {
      ended = true;
    }
  }
  if (!ended && r.error.empty()) r.error = fmt::format("the CUDA probe of {} stopped before its end", r.library);
}

}  // namespace

std::string cuda_library() {
  const char* env = std::getenv("OFFLOADTOOL_LIBCUDA");
  return env && *env ? env : "libcuda.so.1";
}

CudaResult detect_cuda(const std::string& library) {
  CudaResult r;
  r.library = library;
  // A path (dlopen searches nothing for a name with a slash) that is not there:
  // no driver, said without loading anything. This is also what makes the
  // answer the same where the static build's helper cannot start (an aarch64
  // binary under qemu-user, which cannot execute the helper it writes).
  if (library.find('/') != std::string::npos) {
    struct stat st;
    if (::stat(library.c_str(), &st) != 0) {
      r.how = "none";
      r.no_driver = true;
      r.error = fmt::format("no NVIDIA driver ({}: {})", library, std::strerror(errno));
      return r;
    }
  }
  std::string probe_error;
  std::string text = run_cuda_probe(library, r.how, probe_error);
  // What the helper said before it failed (if it did) is kept; its failure is the error.
  read_probe_lines(text, r);
  if (!probe_error.empty()) r.error = std::move(probe_error);
  return r;
}

std::string cuda_no_gpu_reason(const CudaResult& r) {
  if (!r.error.empty()) return r.error;
  if (r.gpus.empty()) return fmt::format("no NVIDIA GPU (the driver, {}, reports 0 devices)", r.library);
  return {};
}

}  // namespace ot::compat
