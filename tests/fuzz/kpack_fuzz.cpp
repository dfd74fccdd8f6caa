// libFuzzer: AMD kpack archives and markers (formats/kpack). read_kpack over
// the bytes: every kernel it accepts lies inside the input, its ordinal below
// the number of blobs or frames, its binary key relative without "..", and
// decodes (kpack_code_object) to exactly original_size bytes or fails with an
// offset; an archive read is written again (write_kpack) and reads back the
// same. The same bytes as a marker (read_kpack_ref): a name and a search
// path, or an error naming the file and an offset. Corpus: corpus/kpack.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/kpack.h"
#include "support/error.h"

namespace {

void check_error(const ot::Error& e, const char* file) {
  if (e.file() != file || !e.offset() || e.message().empty() || e.message().find('\n') != std::string::npos)
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ot::Bytes in(reinterpret_cast<const std::byte*>(data), size);
  try {
    const ot::formats::KpackArchive a = ot::formats::read_kpack(in, "fuzz.kpack");
    std::vector<ot::Bytes> stored(a.kernels.size());
    for (const ot::formats::KpackKernel& k : a.kernels) {
      if (k.offset > size || k.stored_size > size - k.offset) __builtin_trap();
      if (k.binary.empty() || k.binary.front() == '/' || k.binary.find("..") == 0) __builtin_trap();
      if (k.ordinal < stored.size()) stored[k.ordinal] = in.subspan(k.offset, k.stored_size);
      if (k.original_size > (16u << 20)) continue;  // a frame may declare much; do not decode it
      try {
        if (ot::formats::kpack_code_object(a.scheme, k, in.subspan(k.offset, k.stored_size), "fuzz.kpack").size() !=
            k.original_size)
          __builtin_trap();
      } catch (const ot::Error& e) {
        check_error(e, "fuzz.kpack");
      }
    }
    // Kernels may share no ordinal, so each has its stored bytes: written again, read back the same.
    if (stored.size() == a.kernels.size()) {
      const std::vector<std::byte> again = ot::formats::write_kpack(a, stored);
      const ot::formats::KpackArchive b = ot::formats::read_kpack(again, "again.kpack");
      if (b.kernels.size() != a.kernels.size() || b.gfx_arches != a.gfx_arches) __builtin_trap();
      for (std::size_t i = 0; i < a.kernels.size(); ++i)
        if (b.kernels[i].binary != a.kernels[i].binary || b.kernels[i].arch != a.kernels[i].arch ||
            b.kernels[i].original_size != a.kernels[i].original_size)
          __builtin_trap();
    }
  } catch (const ot::Error& e) {
    if (e.file() == "again.kpack") __builtin_trap();  // what was read must read back
    check_error(e, "fuzz.kpack");
  }
  try {
    const ot::formats::KpackRef r = ot::formats::read_kpack_ref(in, "fuzz.so", 0x2000);
    if (r.search_paths.empty()) __builtin_trap();
  } catch (const ot::Error& e) {
    check_error(e, "fuzz.so");
  }
  return 0;
}
