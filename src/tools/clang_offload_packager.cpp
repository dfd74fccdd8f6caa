// The clang-offload-packager personality (also llvm-offload-binary): LLVM
// 19.1.7's command line and messages (llvm-behaviour.md 3.5) over the shared
// packager engine.
#include <cstdlib>

#include "cli/diagnostics.h"
#include "cli/llvm_cl.h"
#include "cli/llvm_tools.h"
#include "cli/run.h"
#include "packager/llvm19_messages.h"
#include "packager/packager.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

// LLVM's writeArchive switches to the 64-bit symbol table at this member
// offset; its tests lower it through SYM64_THRESHOLD, and so do ours.
std::uint64_t sym64_threshold() {
  std::uint64_t v = std::uint64_t{1} << 32;
  if (const char* env = std::getenv("SYM64_THRESHOLD")) {
    std::uint64_t parsed = 0;
    std::string_view s = env;
    bool ok = !s.empty() && s.size() <= 19;
    for (char c : s) ok = ok && c >= '0' && c <= '9', parsed = parsed * 10 + static_cast<std::uint64_t>(c - '0');
    if (ok) v = parsed;
  }
  return v;
}

}  // namespace

int run_clang_offload_packager(const cli::Invocation& inv) {
  auto parsed = cli::llvmcl::parse(cli::llvmcl::packager_tool(inv.release), inv);
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  const cli::llvmcl::Parsed& p = std::get<cli::llvmcl::Parsed>(parsed);

  return cli::run_guarded(inv.argv0, [&] {
    const std::string output = p.value("o").value_or("");
    const std::vector<std::string> positionals = p.positionals();
    const std::string input = positionals.empty() ? std::string() : positionals.back();
    std::vector<packager::ImageArgs> images;
    for (const std::string& text : p.values("image")) images.push_back(packager::ImageArgs::parse(text));

    if (!output.empty() && !input.empty())
      throw LlvmError(std::string(packager::llvm19::kModesExclusive));
    if (!output.empty()) {
      packager::create_package(images, output, packager::Diagnostics::Llvm19);
    } else if (!input.empty()) {
      packager::ExtractOptions options;
      options.selectors = std::move(images);
      options.archive = p.flag("archive");
      options.sym64_threshold = sym64_threshold();
      options.warn = [&](const std::string& w) { cli::print_warning(inv.argv0, w); };
      packager::extract_package(input, options, packager::Diagnostics::Llvm19);
    }
    return 0;
  });
}

}  // namespace ot::tools
