// libFuzzer: the OffloadBinary reader (v1 and v2), LLVM 19's and 23's verdicts, the
// container walk over the same bytes (raw binaries, ELF and COFF sections,
// archives and their members' symbols, bitcode), and a write/read round trip
// of every v1 entry that parses; nested binaries as LLVM 23 reads them.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "archive/ar_reader.h"
#include "archive/member_symbols.h"
#include "formats/bitcode_embedded.h"
#include "formats/bitcode_symtab.h"
#include "formats/offload_binary.h"
#include "packager/find_binaries.h"
#include "support/mapped_file.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void round_trip(const ot::formats::OffloadEntry& e, ot::Bytes data) {
  ot::formats::OffloadImageDesc d;
  d.image_kind = e.image_kind;
  d.offload_kind = e.offload_kind;
  d.flags = e.flags;
  for (const auto& s : e.strings)
    if (s.key.find('\0') == std::string::npos && s.value.find('\0') == std::string::npos) d.strings.push_back(s);
  auto bytes = ot::formats::write_offload_binary_v1(d, data.subspan(e.image_offset, e.image_size));
  check(bytes.size() % 8 == 0);
  check(ot::formats::llvm19_verdict(bytes) == ot::formats::Llvm19Verdict::Accepted);
  auto again = ot::formats::read_offload_binaries(bytes, "round-trip");
  check(again.size() == 1 && again[0].entries.size() == 1);
  const auto& r = again[0].entries[0];
  check(r.strings == d.strings && r.image_kind == d.image_kind && r.offload_kind == d.offload_kind);
  check(r.image_size == e.image_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  (void)ot::formats::llvm19_verdict(bytes);
  (void)ot::formats::llvm23_verdict(bytes);
  try {
    for (const auto& b : ot::formats::read_offload_binaries(bytes, "fuzz.bin")) {
      check(b.offset + b.size <= size);
      for (const auto& e : b.entries) {
        check(e.image_offset + e.image_size <= b.offset + b.size);
        if (b.version == 1) round_trip(e, bytes);
      }
    }
  } catch (const ot::Error&) {
  }

  try {
    std::shared_ptr<const ot::InputFile> in =
        ot::InputFile::from_memory("fuzz", std::vector<std::byte>(bytes.begin(), bytes.end()));
    constexpr auto r23 = ot::target::LlvmRelease::Llvm23;
    for (const auto& f : ot::packager::find_offload_images(in, ot::packager::Diagnostics::Llvm19, r23)) {
      check(f.entry.image_offset + f.entry.image_size <= f.source->size());
      if (ot::formats::has_offload_binary_magic(f.source->bytes().subspan(f.entry.image_offset, f.entry.image_size)))
        for (const auto& g : ot::packager::find_nested_images(f, ot::packager::Diagnostics::Llvm19, r23))
          check(g.entry.image_offset >= f.entry.image_offset &&
                g.entry.image_offset + g.entry.image_size <= f.entry.image_offset + f.entry.image_size);
    }
  } catch (const ot::Error&) {
  } catch (const ot::LlvmError&) {
  }

  try {
    for (const auto& m : ot::archive::read_members(bytes, "fuzz.a")) {
      check(m.offset + m.data.size() <= size);
      try {
        (void)ot::archive::archive_symbols(m.data, m.name);
      } catch (const ot::Error&) {
      }
    }
  } catch (const ot::Error&) {
  }

  try {
    (void)ot::formats::read_bitcode_symtab(bytes, "fuzz.bc");
  } catch (const ot::Error&) {
  }
  try {
    (void)ot::formats::read_bitcode_embedded_objects(bytes, "fuzz.bc");
  } catch (const ot::Error&) {
  }
  return 0;
}
