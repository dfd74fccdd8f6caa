#include "support/error.h"

#include <cstring>

namespace ot {

Error::Error(Where where, std::string message, std::string llvm_text)
    : std::runtime_error(render(where, message)),
      where_(std::move(where)),
      message_(std::move(message)),
      llvm_text_(std::move(llvm_text)) {}

std::string Error::render(const Where& where, const std::string& message) {
  std::string out;
  if (!where.file.empty()) out = where.file + ": ";
  out += message;
  if (where.offset) out += fmt::format(", at offset 0x{:x}", *where.offset);
  return out;
}

std::string errno_text(int errno_value) { return std::strerror(errno_value); }

}  // namespace ot
