// Target specs as the compat applet reads them: a bundle entry ID
// (<kind>-<triple>[-<target id>]) or a bare target ID (<processor>(:<feature>±)*),
// parsed with the full processor knowledge of target/processors.h, put in
// canonical form, and compared under the runtimes' rules or LLVM 19's or 22's bundler's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "target/llvm_release.h"

namespace ot::formats {
struct OffloadEntry;
}

namespace ot::compat {

enum class Family { None, Amdgpu, Nvptx, Other };  // None: no processor (host entries, empty IDs)

struct TargetSpec {
  std::string text;             // as given
  bool bundle_id = false;       // false: a bare target ID
  std::string kind;             // offload kind; "" for bare target IDs
  std::string triple;           // 4-field triple; for bare IDs the one the processor implies
  Family family = Family::None;
  std::string processor;        // primary name ("fiji" -> "gfx803"); "" when the ID names none
  std::string processor_given;  // as written
  std::map<std::string, bool, std::less<>> features;  // named features: on (+) / off (-); absent = any

  bool is_generic() const;
  // "<processor>(:<feature><sign>)*", features in alphabetical order.
  std::string target_id() const;
  // Bundle IDs: "<kind>-<4-field triple>-<target id>" (what clang writes); bare: target_id().
  std::string canonical() const;
  // "on", "off" or "any".
  std::string feature_setting(std::string_view feature) const;
};

// Throws ot::Error (no file) saying what is wrong: unknown kind, triple
// architecture, processor (with a "did you mean"), feature or sign, a feature
// the processor does not support, duplicates.
TargetSpec parse_spec(std::string_view text);

// Targets as every native applet takes them (unbundle --extract-dir --target,
// prune --keep/--drop): each of `texts` a comma-separated list of specs
// ("gfx90a,sm_80"), each read by parse_spec, whose errors name the target
// (an empty item is "empty target").
std::vector<TargetSpec> parse_spec_list(const std::vector<std::string>& texts);

// Is `entry` (a code object's spec) of exactly the bare target `target`? Both
// name the same processor of the same vendor (a generic target only code built
// for it), and every feature `target` gives has that setting in `entry`; a
// feature `target` leaves out matches any setting. Kinds are not compared.
// unbundle --extract-dir's rule for bare targets.
bool is_of_target(const TargetSpec& target, const TargetSpec& entry);

// An OffloadBinary entry as a bundle entry ID, what parse_spec reads:
// "<kind>-<4-field triple>-<arch>" ("openmp-amdgcn-amd-amdhsa--gfx90a:xnack-").
// Not its stored ID (formats::OffloadEntry::id, "<kind>-<triple>-<arch>"):
// after a 3-field triple, an arch ending in a feature turned off ends in a
// dash, "gfx90a:xnack" is read as the triple's 4th field, and the entry names
// no processor.
std::string offload_bundle_id(const formats::OffloadEntry& e);

enum class Rules {
  Runtime,   // what the HIP/OpenMP runtimes accept: generic targets, CUDA's sm rules
  Bundler    // exactly the clang-offload-bundler of CheckOptions::release (isCodeObjectCompatible)
};

struct CheckOptions {
  Rules rules = Rules::Runtime;
  bool hip_openmp_compatible = false;  // the bundler's -hip-openmp-compatible
  target::LlvmRelease release = target::LlvmRelease::Llvm19;  // whose bundler, for Rules::Bundler
};

struct Step {
  std::string rule;     // "kind", "triple", "processor", "xnack", ... ("exact" for LLVM's first test)
  std::string verdict;  // "pass", "fail" or "skip"
  std::string detail;
};

struct CheckResult {
  bool compatible = false;
  bool generic = false;          // matched through a generic target
  int features_any = 0;          // target features the code object leaves as "any"
  // NVPTX: how far the code is from the target, what the CUDA driver's choice
  // follows: a cubin's minor versions below the GPU's (0: the GPU's own), PTX
  // 100 + the compute capabilities between (a compatible cubin is preferred
  // over JIT-compiling PTX: offloadtool's rule, NVIDIA documents no order).
  int distance = 0;
  std::vector<Step> steps;       // in rule order; the first "fail" decides
  std::string reason() const;    // the first failing step's detail ("" when compatible)
};

// May `code` (a code object / bundle entry) be loaded for `target`?
CheckResult check(const TargetSpec& code, const TargetSpec& target, const CheckOptions& options = {});

}  // namespace ot::compat
