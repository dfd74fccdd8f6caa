// Where AMD's loader looks for the kpack archives of a kpack'd binary
// (rocm-kpack runtime/src/loader.cpp, docs/kpack.md "How archives are found"):
//
//   ROCM_KPACK_DISABLE   set (non-empty, not starting with '0'): nothing is loaded
//   ROCM_KPACK_PATH      non-empty: its ':'-separated files are the only
//                        candidates, used as they are (no @GFXARCH@, no folder)
//   otherwise            ROCM_KPACK_PATH_PREFIX's entries, then the marker's
//                        kpack_search_paths; a relative path is taken from the
//                        binary's folder (symbolic links resolved, as
//                        /proc/self/maps gives it); the first "@GFXARCH@" of a
//                        path is replaced by each architecture the device accepts
//
// The loader knows its device's architectures; a listing does not, so it
// takes every file of the path's folder whose name fits the pattern with some
// architecture in the placeholder's place.
#pragma once

#include <string>
#include <vector>

#include "formats/kpack.h"

namespace ot::contents {

struct KpackEnv {
  bool disabled = false;             // ROCM_KPACK_DISABLE
  std::vector<std::string> path;     // ROCM_KPACK_PATH, empty parts dropped
  std::vector<std::string> prefix;   // ROCM_KPACK_PATH_PREFIX, likewise
  static KpackEnv from_environment();
};

// The loader's candidate paths in its order, placeholders not yet expanded.
// `binary_dir`: the binary's folder, symbolic links resolved.
std::vector<std::string> kpack_candidates(const formats::KpackRef& ref, const std::string& binary_dir,
                                          const KpackEnv& env);

struct KpackFound {
  std::string arch;  // what the placeholder stands for; "" for a path without one
  std::string path;
};

// The regular files `candidate` names: itself (if it is one) when it has no
// placeholder, else every regular file of its folder whose name is the
// pattern with an architecture the loader could ask for (a target ID:
// "gfx1100", "gfx90a:xnack-"; not "multi") in place of the placeholder, sorted
// by name. A placeholder outside the file name is expanded by no listing:
// nothing is found.
std::vector<KpackFound> kpack_glob(const std::string& candidate);

// The architectures AMD's loader tries for a device whose target ID is `isa`
// ("gfx942:sramecc+:xnack-", "amdgcn-amd-amdhsa--" stripped if there), most
// specific first: the processor with every subset of its features (features
// dropped from the right first), then the same for its generic target
// (gfx1103 -> gfx11-generic) where it has one.
std::vector<std::string> kpack_arch_order(std::string_view isa);

}  // namespace ot::contents
