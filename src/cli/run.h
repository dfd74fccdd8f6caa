// Runs a command body and reports its failure once: ot::Error, LlvmError,
// out-of-memory and any other exception become one "<prog>: error:" line and exit 1.
#pragma once

#include <functional>
#include <string_view>

namespace ot::cli {

int run_guarded(std::string_view prog, const std::function<int()>& body);

}  // namespace ot::cli
