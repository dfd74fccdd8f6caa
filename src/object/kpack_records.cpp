#include "object/kpack_records.h"

#include <set>

#include "formats/bundle_binary.h"
#include "formats/kpack.h"
#include "object/pe_image.h"
#include "support/error.h"

namespace ot::object {
namespace {

// The HIPK records of one section's bytes, which lie at `at` of the file.
std::vector<KpackRecord> records_of(Bytes sec, std::uint64_t at, const std::string& name, const std::string& file) {
  std::vector<KpackRecord> out;
  bool hipk = false;
  for (std::uint64_t r = 0; r + formats::kHipWrapperSize <= sec.size(); r += formats::kHipWrapperSize)
    hipk = hipk || load_le<std::uint32_t>(sec.data() + r) == formats::kHipkMagic;
  if (!hipk) return out;
  if (sec.size() % formats::kHipWrapperSize)
    fail_at({file, at}, "section {} (0x{:x} bytes) is not a whole number of 24-byte records", name, sec.size());
  const std::uint64_t n = sec.size() / formats::kHipWrapperSize;
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::byte* p = sec.data() + i * formats::kHipWrapperSize;
    const std::uint64_t off = at + i * formats::kHipWrapperSize;
    const std::uint32_t magic = load_le<std::uint32_t>(p);
    if (magic == formats::kHipWrapperMagic) continue;  // a record the splitter left (its bundle is in .hip_fatbin)
    if (magic != formats::kHipkMagic)
      fail_at({file, off}, "record {} of {} has the magic 0x{:08x}, neither HIPF nor HIPK", i, name, magic);
    if (const std::uint32_t v = load_le<std::uint32_t>(p + 4); v != 1)
      fail_at({file, off + 4}, "record {} of {} has version {} (the HIP runtime takes 1)", i, name, v);
    const std::uint64_t index = load_le<std::uint64_t>(p + formats::kHipWrapperIndex);
    if (index >= n)
      fail_at({file, off + formats::kHipWrapperIndex}, "record {} of {} has the index {}, past its {} records", i, name,
              index, n);
    if (!seen.insert(index).second)
      fail_at({file, off + formats::kHipWrapperIndex}, "record {} of {} has the index {}, which another record has", i,
              name, index);
    out.push_back({off, i, static_cast<std::uint32_t>(index)});
  }
  return out;
}

}  // namespace

std::optional<KpackedBinary> find_kpack_records(Bytes data, const std::vector<SectionInfo>& sections,
                                                const std::string& file) {
  KpackedBinary k;
  const SectionInfo* marker = nullptr;
  for (const SectionInfo& s : sections) {
    if (s.name == ".hipFatBinSegment" && s.has_data && k.records.empty()) {
      k.records = records_of(data.subspan(s.offset, s.size), s.offset, s.name, file);
      k.records_section = s.name;
    } else if (s.name == formats::kKpackRefSection && s.has_data) {
      marker = &s;
    }
  }
  if (k.records.empty()) return std::nullopt;
  if (!marker)
    fail_at({file, k.records.front().offset}, "{} holds HIPK records but the file has no {} section", k.records_section,
            formats::kKpackRefSection);
  // The records' pointers are no help: the splitter zeroes them (the value is the RELATIVE relocation's addend).
  k.marker_section = marker->name;
  k.marker_offset = marker->offset;
  k.marker = data.subspan(marker->offset, marker->size);
  return k;
}

std::optional<KpackedBinary> find_kpack_records(const PeImage& pe, const std::string& file) {
  KpackedBinary k;
  std::optional<std::size_t> marker;
  for (std::size_t i = 0; i < pe.sections.size(); ++i) {
    const std::uint64_t off = pe.sections[i].PointerToRawData, size = pe.content_size(i);
    if ((pe.names[i] == ".hipFatB" || pe.names[i] == ".hipFatBinSegment") && k.records.empty()) {
      k.records = records_of(pe.data.subspan(off, size), off, pe.names[i], file);
      k.records_section = pe.names[i];
    } else if (pe.names[i] == formats::kKpackRefPeSection || pe.names[i] == ".rocm_kp") {
      marker = i;
    }
  }
  if (k.records.empty()) return std::nullopt;
  if (!marker)
    fail_at({file, k.records.front().offset}, "{} holds HIPK records but the image has no {} section",
            k.records_section, formats::kKpackRefPeSection);
  // Each record points at the marker (ImageBase + its RVA; base-relocated at load).
  const coff::SectionHeader& m = pe.sections[*marker];
  const std::uint64_t want = pe.image_base + m.VirtualAddress;
  for (const KpackRecord& r : k.records) {
    const std::uint64_t ptr = load_le<std::uint64_t>(pe.data.data() + r.offset + formats::kHipWrapperBinary);
    if (ptr != want)
      fail_at({file, r.offset + formats::kHipWrapperBinary},
              "record {} of {} points to 0x{:x}, not at the {} marker (0x{:x})", r.position, k.records_section, ptr,
              pe.names[*marker], want);
  }
  k.marker_section = pe.names[*marker];
  k.marker_offset = m.PointerToRawData;
  k.marker = pe.data.subspan(m.PointerToRawData, pe.content_size(*marker));
  return k;
}

}  // namespace ot::object
