// libFuzzer: contents/walker over any bytes -- ar, tar/zip/cpio/rpm through
// libarchive (spooled members), objects, bundles, CCOBs, offload binaries,
// text bundles -- with small limits, checking what it promises of every entry:
// its bytes lie inside the input where it gives an offset.
#include <cstddef>
#include <cstdint>

#include "contents/walker.h"

namespace {

class Check : public ot::contents::Visitor {
 public:
  explicit Check(ot::Bytes input) : input_(input) {}
  void entry(const ot::contents::Container& c, const ot::contents::Entry& e) override {
    if (c.chain.empty() || e.bytes.size() != e.size) __builtin_trap();
    if (e.offset) {
      if (*e.offset > input_.size() || e.size > input_.size() - *e.offset) __builtin_trap();
      if (e.size && e.bytes.data() != input_.data() + *e.offset) __builtin_trap();  // the very bytes of the file
    }
  }

 private:
  ot::Bytes input_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  ot::contents::Limits limits;
  limits.max_depth = 6;
  limits.max_members = 2000;
  limits.max_expanded_bytes = 64u << 20;
  Check check(bytes);
  try {
    ot::contents::walk_bytes(bytes, "fuzz.bin", check, limits);
  } catch (const ot::Error&) {
  }
  return 0;
}
