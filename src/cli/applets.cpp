#include "cli/applets.h"

#include <algorithm>

#include "cli/llvm_tools.h"
#include "tools/tools.h"

namespace ot::cli {
namespace {

// THE table of native applets: sorted by name (checked at compile time); it
// drives dispatch, `offloadtool --help` and "did you mean".
constexpr Applet kApplets[] = {
    {"bundle", "bundle host and device files into one file", &tools::define_bundle},
    // compat's 1 means "no" (not compatible, nothing fits, violations): its errors are 2
    {"compat", "check and explain target-ID compatibility", &tools::define_compat, 2},
    {"compress", "compress, decompress, recompress or describe bundles", &tools::define_compress},
    {"join", "give kpack'd binaries their device code back", &tools::define_join},
    {"list", "list the device-code entries of any file, package or archive", &tools::define_list},
    {"package", "create, extract or list offload binaries", &tools::define_package},
    {"prune", "keep only the device code of the GPUs you ship for", &tools::define_prune},
    {"size", "bytes of device code per target: which GPU costs what", &tools::define_size},
    {"split", "move HIP binaries' code objects into per-GPU kpack archives", &tools::define_split},
    {"unbundle", "extract entries from a bundle", &tools::define_unbundle},
    {"wrap", "write a host object that registers device images", &tools::define_wrap},
};
static_assert(std::ranges::is_sorted(kApplets, {}, &Applet::name));

// LLVM tool names offloadtool answers to when installed under them.
constexpr Personality kPersonalities[] = {
    {"clang-offload-bundler", &tools::run_clang_offload_bundler, &llvmcl::bundler_tool},
    {"clang-offload-packager", &tools::run_clang_offload_packager, &llvmcl::packager_tool},
    {"llvm-offload-binary", &tools::run_clang_offload_packager, &llvmcl::packager_tool},
    {"clang-offload-wrapper", &tools::run_clang_offload_wrapper, &llvmcl::clang_offload_wrapper_tool},
    {"llvm-offload-wrapper", &tools::run_llvm_offload_wrapper, &llvmcl::llvm_offload_wrapper_tool},
};

constexpr TopLevelOption kTopLevel[] = {
    {{"-h", "--help", "help"}, "print the applets and exit", TopLevelAction::Help},
    {{"--version"}, "print the version and exit", TopLevelAction::Version},
    {{"--generate-docs"}, {}, TopLevelAction::GenerateDocs},  // <dir>: man pages, completions (cli/generate_docs.h)
};

}  // namespace

std::span<const Applet> applets() { return kApplets; }
std::span<const Personality> personalities() { return kPersonalities; }
std::span<const TopLevelOption> top_level_options() { return kTopLevel; }

PersonalityMatch find_personality(std::string_view argv0) {
  auto slash = argv0.find_last_of("/\\");
  std::string_view base = slash == std::string_view::npos ? argv0 : argv0.substr(slash + 1);
  if (base.size() > 4 && (base.ends_with(".exe") || base.ends_with(".EXE"))) base.remove_suffix(4);
  for (const Personality& p : kPersonalities) {
    for (std::size_t pos = base.find(p.name); pos != std::string_view::npos; pos = base.find(p.name, pos + 1)) {
      bool left_ok = pos == 0 || base[pos - 1] == '-';
      std::size_t end = pos + p.name.size();
      bool right_ok = end == base.size() || base[end] == '-';
      if (!left_ok || !right_ok) continue;
      PersonalityMatch m{&p, std::nullopt, std::string(base)};
      // "-N" right after the name, all digits up to the end or the next '-'.
      if (end < base.size()) {
        std::string_view tail = base.substr(end + 1);
        tail = tail.substr(0, tail.find('-'));
        if (!tail.empty() && tail.size() <= 3 && tail.find_first_not_of("0123456789") == std::string_view::npos) {
          int v = 0;
          for (char ch : tail) v = v * 10 + (ch - '0');
          m.version = v;
        }
      }
      return m;
    }
  }
  return {};
}

}  // namespace ot::cli
