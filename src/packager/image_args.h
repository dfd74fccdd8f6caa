// The `--image=key=value,...` argument of clang-offload-packager: split on
// every ',', each piece at its first '=' (no '=': empty value); a repeated key
// appends ",value" to the first one's value. LLVM keeps them in a DenseMap, so
// everything done "for each key" happens in that map's hash order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "formats/offload_binary.h"

namespace ot::packager {

class ImageArgs {
 public:
  static ImageArgs parse(std::string_view text);

  // Distinct keys in order of first appearance.
  const std::vector<formats::OffloadString>& in_order() const { return args_; }
  // The same pairs in LLVM's DenseMap iteration order: hashed by 19's and 22's
  // hash_value, probed quadratically, or by 23's (xxh3, linear probing: `llvm23`).
  std::vector<const formats::OffloadString*> llvm_order(bool llvm23 = false) const;

  bool has(std::string_view key) const { return find(key) != nullptr; }
  const std::string* find(std::string_view key) const;

 private:
  std::vector<formats::OffloadString> args_;
};

}  // namespace ot::packager
