// One error type for the whole library: a display file name, an optional byte
// offset and a message. Library code throws; cli/run.cpp reports it once.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace ot {

struct Where {
  std::string file;                      // display name; empty when no file applies
  std::optional<std::uint64_t> offset{};  // byte offset inside `file`
};

class Error : public std::runtime_error {
 public:
  Error(Where where, std::string message, std::string llvm_text = {});

  const std::string& file() const { return where_.file; }
  const std::optional<std::uint64_t>& offset() const { return where_.offset; }
  const std::string& message() const { return message_; }
  // What LLVM 19 prints for the same defect where it has a message of its own
  // (its archive reader's, say), else empty: the clang-offload-bundler
  // personality prints it first, this error's own text after it.
  const std::string& llvm_text() const { return llvm_text_; }

  // "<file>: <message>, at offset 0x.." (the parts that apply).
  static std::string render(const Where& where, const std::string& message);

 private:
  Where where_;
  std::string message_;
  std::string llvm_text_;
};

// An error whose text is exactly what LLVM prints after "<argv0>: error: ";
// the personalities use it so that their stderr matches LLVM byte for byte.
class LlvmError : public std::runtime_error {
 public:
  explicit LlvmError(std::string text) : std::runtime_error(std::move(text)) {}
};

template <typename... Args>
[[noreturn]] void fail(std::string file, fmt::format_string<Args...> f, Args&&... args) {
  throw Error({std::move(file)}, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_at(Where where, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(std::move(where), fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_llvm(fmt::format_string<Args...> f, Args&&... args) {
  throw LlvmError(fmt::format(f, std::forward<Args>(args)...));
}

// Runs `f`, a reader of bytes that start `base` bytes into their file: an
// ot::Error it throws gets `base` added to its offset, so that it points into
// the file (readers count from the start of the bytes they were given).
template <typename F>
auto rebase_errors(std::uint64_t base, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (base == 0 || !e.offset()) throw;
    throw Error({e.file(), *e.offset() + base}, e.message(), e.llvm_text());
  }
}

// strerror(errno_value) as LLVM's std::error_code::message() spells it.
std::string errno_text(int errno_value);

}  // namespace ot
