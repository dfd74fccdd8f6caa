// libFuzzer: object identification, the ELF/COFF section readers, and the
// section add / remove rewriters on whatever the readers accept.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "object/bundle_sections.h"
#include "object/object_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  (void)ot::object::identify_object(bytes);
  std::vector<ot::object::SectionInfo> sections;
  try {
    sections = ot::object::read_sections(bytes, "fuzz.o");
  } catch (const ot::Error&) {
    return 0;
  }
  for (const auto& s : sections)
    if (s.has_data && (s.offset > size || s.size > size - s.offset)) __builtin_trap();  // promised bounds

  // Rewrite what was read: drop every other section, and add one. Both must
  // either succeed or throw ot::Error.
  auto in = ot::InputFile::from_memory("fuzz.o", std::vector<std::byte>(bytes.begin(), bytes.end()));
  try {
    ot::OutputFile out("/dev/null");
    std::size_t n = 0;
    ot::object::write_without_sections(*in, [&](std::string_view) { return (n++ % 2) == 1; }, out);
  } catch (const ot::Error&) {
  }
  try {
    ot::OutputFile out("/dev/null");
    const ot::object::AddedSection added[] = {{"__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-", nullptr}};
    ot::object::write_with_added_sections(*in, added, out);
  } catch (const ot::Error&) {
  }
  return 0;
}
