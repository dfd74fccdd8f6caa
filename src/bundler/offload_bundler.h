// The offload bundler: bundling, unbundling and listing with LLVM 19's
// semantics, shared by the clang-offload-bundler personality and the native
// bundle / unbundle / list applets. Knows nothing of command lines: options
// arrive in a Config, messages leave through its callbacks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codec/codec.h"
#include "target/bundle_id.h"

namespace ot {
class InputFile;
}

namespace ot::bundler {

struct Config {
  std::string type;                  // i ii cui hipi d ll s bc gch ast o a
  std::vector<std::string> targets;  // as given; standardised by check_targets
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  bool allow_missing_bundles = false;
  bool hip_openmp_compatible = false;
  bool check_input_archive = false;  // -check-input-archive: see bundler/archive_unbundle.h
  bool print_commands = false;       // -###: print the llvm-objcopy commands LLVM would run
  std::string objcopy_path = "llvm-objcopy";
  std::uint64_t bundle_align = 1;
  bool compress = false;
  codec::Params compression;      // method, level, long distance, threads
  std::uint16_t ccob_version = 2;    // the release's default (target::traits), then the environment's
  // How -targets are parsed and standardised (the release's), and whether a
  // target 22 would write losing its processor is refused (bundling only).
  target::BundleIdRules id_rules = target::BundleIdRules::LastDashArch;
  // Whose reading of inputs applies (target::traits: which inputs are CCOBs).
  target::LlvmRelease reading = target::LlvmRelease::Llvm19;
  bool verbose = false;
  // The input may hold several bundles or CCOBs one after another (a linked
  // .hip_fatbin section), read as newer LLVM does: unbundling drains the
  // requested targets across them, listing lists them all. LLVM 19 reads only
  // the first, so its personality leaves this off.
  bool concatenated = false;
  // Where text goes: `out` = standard output (list), `err` = diagnostics
  // (verbose statistics, -### commands). Each call is one or more whole lines.
  std::function<void(std::string_view)> out;
  std::function<void(std::string_view)> err;
  // inputs[0], already opened by the caller: standard input can be read only
  // once, and the native applets read it to detect its type before the work.
  // Null: each step opens inputs[0] itself, as LLVM does (so under the
  // personality a second read of standard input finds it empty, as in LLVM).
  std::shared_ptr<InputFile> first_input;
};

// config.first_input, or inputs[0] opened now.
std::shared_ptr<InputFile> open_first_input(const Config& config);

// Steps 11-14 of LLVM's validation (reference 2.2): duplicate targets, invalid
// targets, conflicting target IDs, the host-count rule. Returns the parsed
// targets; throws LlvmError with LLVM's texts.
std::vector<target::BundleId> check_targets(const Config& config, bool unbundling);

// The requested targets as LLVM works with them from there on: their
// standardised names, parsed again. So a request "host-x86_64-unknown-linux-gnu"
// is the ID "host-...-gnu-", whose target ID is (by LLVM's parsing quirk) the
// whole string again.
struct Requested {
  std::vector<std::string> names;
  std::vector<target::BundleId> ids;
};
Requested standardised(const std::vector<target::BundleId>& targets,
                       target::BundleIdRules rules = target::BundleIdRules::LastDashArch);

void bundle(const Config& config, const std::vector<target::BundleId>& targets);
void unbundle(const Config& config, const std::vector<target::BundleId>& targets);
// Prints every bundle ID in file order. (LLVM 19 prints binary bundles in its
// hash-table order, which carries no meaning; file order is deliberate.)
void list(const Config& config);

// "A", "A and B", "A, B, and C" over the sorted names (LLVM's missing-bundle list).
std::string join_missing(std::vector<std::string> names);

}  // namespace ot::bundler
