// The byte arrays an LLVM bitcode module places in the ".llvm.offloading"
// section: what clang's -fembed-offload-object produces when the host output
// is bitcode (-flto, -foffload-lto, -emit-llvm), and what LLVM's
// extractOffloadBinaries reads back through !llvm.embedded.objects.
#pragma once

#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot::formats {

// The initialisers of the first module's global variables whose section is
// ".llvm.offloading", in global order. LLVM selects them through the
// !llvm.embedded.objects metadata, which clang attaches to exactly these
// globals; reading the section name needs no metadata parsing. Only the module
// header, its BLOCKINFO and its module-level constants are decoded; functions,
// metadata and the rest are skipped by their length.
std::vector<std::vector<std::byte>> read_bitcode_embedded_objects(Bytes data, const std::string& file);

}  // namespace ot::formats
