// The clang-offload-packager personality (also llvm-offload-binary): the
// command line and messages of LLVM 19.1.7's clang-offload-packager
// (llvm-behaviour.md 3.5) or of 22.1.8's or 23.1.4's llvm-offload-binary, by the release
// impersonated (target::ReleaseTraits, packager_* fields), over the shared
// packager engine.
#include <cstdlib>

#include <fmt/format.h>

#include "cli/diagnostics.h"
#include "cli/llvm_cl.h"
#include "cli/llvm_tools.h"
#include "cli/run.h"
#include "packager/llvm_messages.h"
#include "packager/packager.h"
#include "support/error.h"
#include "support/llvm_path.h"
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

// LLVM 22 tests sys::path::stem(argv[0]).ends_with("clang-offload-packager"):
// x86_64-linux-gnu-clang-offload-packager and clang-offload-packager.exe warn,
// clang-offload-packager-22 and llvm-offload-binary do not.
bool invoked_under_old_name(const cli::Invocation& inv) {
  return llvm_path::stem(inv.argv0).ends_with("clang-offload-packager");
}

}  // namespace

int run_clang_offload_packager(const cli::Invocation& inv) {
  const target::ReleaseTraits& traits = target::traits(inv.release);
  const cli::llvmcl::Tool& tool = cli::llvmcl::packager_tool(inv.release);
  auto parsed = cli::llvmcl::parse(tool, inv);
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  const cli::llvmcl::Parsed& p = std::get<cli::llvmcl::Parsed>(parsed);

  if (traits.packager_old_name_deprecated && invoked_under_old_name(inv))
    cli::print_raw(packager::llvm_text::kOldNameDeprecated22);
  const std::string output = p.value("o").value_or("");
  const std::vector<std::string> positionals = p.positionals();
  const std::string input = positionals.empty() ? std::string() : positionals.back();
  // With neither -o nor an input 19 does nothing at all (exit 0); 22 prints
  // its help, as for its -h (a plain flag in that release's option table).
  if (traits.packager_help_without_arguments && (p.flag("h") || (output.empty() && input.empty()))) {
    print(cli::llvmcl::help_list_text(tool, inv));
    return 0;
  }

  return cli::run_guarded(inv.argv0, [&] {
    std::vector<packager::ImageArgs> images;
    for (const std::string& text : p.values("image")) images.push_back(packager::ImageArgs::parse(text));

    if (!output.empty() && !input.empty())
      throw LlvmError(std::string(packager::llvm_text::kModesExclusive));
    if (!output.empty()) {
      packager::create_package(images, output, packager::Diagnostics::Llvm19, inv.release);
    } else if (!input.empty()) {
      packager::ExtractOptions options;
      options.selectors = std::move(images);
      options.archive = p.flag("archive");
      options.sym64_threshold = sym64_threshold();
      options.kind_release = inv.release;
      options.release = inv.release;
      options.warn = [&](const std::string& w) { cli::print_warning(inv.argv0, w); };
      const packager::ExtractResult result = packager::extract_package(input, options, packager::Diagnostics::Llvm19);
      // 23 reports each file it wrote under a generated name (after writing it:
      // offloadtool commits them all first).
      if (traits.packager_extracts_all)
        for (const std::string& name : result.generated) print(fmt::format("Extracted: {}\n", name));
    }
    return 0;
  });
}

}  // namespace ot::tools
