// The clang-offload-bundler personality: LLVM's command line, validation
// order and messages (reference 2.1, 2.2) in the release impersonated (19's
// and 22's differ in bundle-ID rules, the CCOB version written and one
// message: target/llvm_release.h), over the shared bundler engine.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <filesystem>

#include "bundler/offload_bundler.h"
#include "cli/diagnostics.h"
#include "cli/llvm_cl.h"
#include "cli/llvm_tools.h"
#include "cli/run.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

// StringRef::getAsInteger(10, int&): an optional '-', then decimal digits only
// (no spaces, no '+'), in range.
std::optional<int> decimal_int(std::string_view v) {
  std::string_view digits = v.starts_with('-') ? v.substr(1) : v;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  long long value = 0;
  for (char ch : digits) {
    value = value * 10 + (ch - '0');
    if (value > static_cast<long long>(INT_MAX) + 1) return std::nullopt;
  }
  if (v.starts_with('-')) value = -value;
  if (value < INT_MIN || value > INT_MAX) return std::nullopt;
  return static_cast<int>(value);
}

// The environment's defaults (OffloadBundlerConfig's constructor).
void apply_environment(bundler::Config& c) {
  const char* ignore = std::getenv("OFFLOAD_BUNDLER_IGNORE_ENV_VAR");
  if (ignore && std::string_view(ignore) == "1") return;
  if (const char* v = std::getenv("OFFLOAD_BUNDLER_VERBOSE")) c.verbose = std::string_view(v) == "1";
  if (const char* v = std::getenv("OFFLOAD_BUNDLER_COMPRESS")) c.compress = std::string_view(v) == "1";
  if (const char* v = std::getenv("OFFLOAD_BUNDLER_COMPRESSION_LEVEL")) {
    if (auto level = decimal_int(v))
      c.compression.level = *level;
    else
      cli::print_raw(fmt::format("Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: {}. Ignoring it.\n", v));
  }
  if (const char* v = std::getenv("COMPRESSED_BUNDLE_FORMAT_VERSION")) {
    auto version = decimal_int(v);
    if (!version)
      cli::print_raw(fmt::format(
          "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {}. Using default version {}.\n", v,
          c.ccob_version));
    else if (*version != 2 && *version != 3)
      cli::print_raw(fmt::format("Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {}. Valid values are "
                                 "2 or 3. Using default version {}.\n",
                                 v, c.ccob_version));
    else
      c.ccob_version = static_cast<std::uint16_t>(*version);
  }
}

// Where LLVM would find llvm-objcopy (beside the executable, then PATH); only
// used to print -### commands: offloadtool never runs it.
std::string objcopy_for_display(const std::string& argv0) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (argv0.find('/') != std::string::npos) self = fs::path(argv0);
  fs::path beside = self.parent_path() / "llvm-objcopy";
  if (!self.empty() && access(beside.c_str(), X_OK) == 0) return beside.string();
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      auto colon = rest.find(':');
      fs::path candidate = fs::path(std::string(rest.substr(0, colon))) / "llvm-objcopy";
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return "llvm-objcopy";
}

// The bundler itself, over parsed options: LLVM 19's validation order and messages.
int run(const cli::llvmcl::Parsed& p, const cli::Invocation& inv) {
  const target::ReleaseTraits& release = target::traits(inv.release);
  bundler::Config c;
  c.ccob_version = release.ccob_version;
  c.id_rules = release.bundle_ids;
  c.reading = inv.release;
  c.out = [](std::string_view s) { print(s); };
  c.err = [](std::string_view s) { cli::print_raw(s); };
  apply_environment(c);
  // Flags given on the command line override the environment.
  if (p.given("compress")) c.compress = p.flag("compress");
  if (p.given("verbose")) c.verbose = p.flag("verbose");
  if (p.given("compression-level")) c.compression.level = *p.int_value("compression-level");
  c.type = p.value("type").value_or("");
  c.allow_missing_bundles = p.flag("allow-missing-bundles");
  c.hip_openmp_compatible = p.flag("hip-openmp-compatible");
  c.print_commands = p.flag("###");
  if (c.print_commands) c.objcopy_path = objcopy_for_display(inv.argv0);  // only -### shows it
  if (p.given("bundle-align")) c.bundle_align = *p.uint_value("bundle-align");
  // LLVM divides by zero here; an alignment of 0 is refused instead.
  if (c.bundle_align == 0) fail_llvm("invalid -bundle-align value 0: the alignment must be at least 1");

  const bool unbundling = p.flag("unbundle"), listing = p.flag("list");
  const std::vector<std::string> input = p.values("input"), inputs = p.values("inputs");
  const std::vector<std::string> output = p.values("output"), outputs = p.values("outputs");
  if (!input.empty() && !inputs.empty()) fail_llvm("-inputs and -input cannot be used together, use only -input instead");
  if (!inputs.empty()) cli::print_warning(inv.argv0, "-inputs is deprecated, use -input instead");
  c.inputs = inputs.empty() ? input : inputs;
  if (!output.empty() && !outputs.empty())
    fail_llvm("-outputs and -output cannot be used together, use only -output instead");
  if (!outputs.empty()) cli::print_warning(inv.argv0, "-outputs is deprecated, use -output instead");
  c.outputs = outputs.empty() ? output : outputs;
  c.targets = p.values("targets");

  if (listing) {
    if (unbundling) fail_llvm("-unbundle and -list cannot be used together");
    if (c.inputs.size() != 1) fail_llvm("only one input file supported for -list");
    if (!c.outputs.empty()) fail_llvm("-outputs option is invalid for -list");
    if (!c.targets.empty()) fail_llvm("-targets option is invalid for -list");
    bundler::list(c);
    return 0;
  }
  if (p.flag("check-input-archive")) {
    if (!unbundling) fail_llvm("-check-input-archive cannot be used while bundling");
    if (c.type != "a") fail_llvm("-check-input-archive can only be used for unbundling archives (-type=a)");
    c.check_input_archive = true;
  }
  if (c.outputs.empty()) fail_llvm("no output file specified!");
  if (!p.given("targets")) fail_llvm("for the --targets option: must be specified at least once!");
  if (unbundling) {
    if (c.inputs.size() != 1) fail_llvm("only one input file supported in unbundling mode");
    if (c.outputs.size() != c.targets.size())
      fail_llvm("number of output files and targets should match in unbundling mode");
  } else {
    if (c.type == "a") fail_llvm("Archive files are only supported for unbundling");
    if (c.outputs.size() != 1) fail_llvm("only one output file supported in bundling mode");
    if (c.inputs.size() != c.targets.size()) fail_llvm("number of input files and targets should match in bundling mode");
  }
  auto targets = bundler::check_targets(c, unbundling);
  if (unbundling)
    bundler::unbundle(c, targets);
  else
    bundler::bundle(c, targets);
  return 0;
}

}  // namespace

int run_clang_offload_bundler(const cli::Invocation& inv) {
  auto parsed = cli::llvmcl::parse(cli::llvmcl::bundler_tool(inv.release), inv);
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  const cli::llvmcl::Parsed& p = std::get<cli::llvmcl::Parsed>(parsed);

  return cli::run_guarded(inv.argv0, [&] {
    try {
      return run(p, inv);
    } catch (const Error& e) {
      // Where LLVM has a message of its own for the defect (its archive
      // reader's), that comes first, as LLVM prints it; ours follows.
      if (e.llvm_text().empty()) throw;
      fail_llvm("{}; {}", e.llvm_text(), e.what());
    }
  });
}

}  // namespace ot::tools
