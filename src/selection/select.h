// Which entry a runtime loads for a GPU (select), and whether a file's bundles
// follow the composition rules (verify): an engine over what contents/walker
// finds, using the target-ID rules of compat/target_spec below it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compat/target_spec.h"
#include "contents/walker.h"

namespace ot::selection {

// The containers and entries the rules apply to: contents/walker's.
using FoundContainer = contents::FoundContainer;
using FoundEntry = contents::Entry;
using compat::CheckOptions;
using compat::CheckResult;
using compat::TargetSpec;

struct Candidate {
  FoundEntry entry;
  std::string location;            // "<container>, entry <index>"
  std::optional<TargetSpec> spec;  // nullopt when the ID does not parse
  CheckResult result;              // empty steps when the ID does not parse or is a host entry
  std::string verdict;             // "selected", "compatible" (but another is preferred), "rejected"
  std::string reason;              // why rejected, or why another one was preferred
};

struct Selection {
  std::vector<Candidate> candidates;  // file order
  std::optional<std::size_t> chosen;  // index into candidates
  std::string hint;                   // when nothing fits: what would
};

// The runtimes' choice (HIP's CLR and OpenMP's plugins behave alike): among the
// compatible entries a specific processor before a generic target (or, for
// NVPTX, an exact sm before a compatible sm/PTX), then the entry whose
// features are set as the target's before one built for any setting, then
// file order. An entry whose ID fits but whose AMDGPU code object header names
// an incompatible target is rejected, as the loader would.
Selection select_entry(const std::vector<FoundContainer>& containers, const TargetSpec& target,
                       const CheckOptions& options = {});

// A kpack'd binary (the walker's record containers, Container::kpack_key):
// per record, the code object AMD's loader takes for `target`. For each
// architecture string in the loader's order (contents::kpack_arch_order:
// the target ID with its feature subsets, most specific first, then its
// generic target), the archives in the order the loader tries them (the
// walker's) whose gfx_arches lists it and whose name the loader forms (the
// "@GFXARCH@" of its path stood for one of those strings); the first holding
// the record's key under that string is taken. An archive listing the string
// without the key is passed, as the HIP runtime does since rocm-systems
// #9953; `stub` notes it (an older runtime stops there: hipErrorInvalidImage).
struct KpackRecordSelection {
  std::string key;      // "lib/libx.so#0"
  Selection selection;  // its candidates: the entries its archives hold for the key
  std::vector<std::string> stubs;  // archives that list a string tried before the choice but lack the key
};
std::vector<KpackRecordSelection> select_kpack(const std::vector<FoundContainer>& containers, const TargetSpec& target);

struct Finding {
  std::string rule;       // "duplicate-id", "mixed-features", "invalid-id", "several-hosts", "code-object-mismatch",
                          // "non-canonical"
  std::string severity;   // "error" (a violation) or "warning"
  std::string container;
  std::vector<std::string> ids;
  std::string message;
};

// The composition rules, per container: no ID twice (also after canonical
// spelling: aliases, feature order), for one kind, triple and processor either
// every entry leaves a feature as "any" or every entry sets it, every ID
// parses, at most one host entry, an AMDGPU code object's ELF header names the
// entry's target ID; non-canonical spellings are warnings.
std::vector<Finding> verify_containers(const std::vector<FoundContainer>& containers);

}  // namespace ot::selection
