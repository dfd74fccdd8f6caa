#include "object/pe_image.h"

#include <algorithm>

#include "formats/bundle_binary.h"
#include "formats/nv_fatbin.h"
#include "object/object_file.h"
#include "support/error.h"

namespace ot::object {
namespace {

constexpr std::uint64_t kLfanewOffset = 0x3c;

bool range_past(std::uint64_t off, std::uint64_t size, std::uint64_t limit) { return off > limit || size > limit - off; }

}  // namespace

bool is_pe_image(Bytes data) {
  if (data.size() < 0x40 || as_chars(data.first(2)) != "MZ") return false;
  const std::uint32_t pe = load_le<std::uint32_t>(data.data() + kLfanewOffset);
  return pe <= data.size() && data.size() - pe >= 4 && as_chars(data.subspan(pe, 4)) == std::string_view("PE\0\0", 4);
}

PeImage PeImage::parse(Bytes data, const std::string& file) {
  PeImage p;
  p.data = data;
  p.file = file;
  if (!is_pe_image(data)) fail_at({file, 0}, "not a PE image (no MZ header pointing at a PE signature)");
  ByteReader r(data, file);
  p.coff_header_offset = load_le<std::uint32_t>(data.data() + kLfanewOffset) + 4ull;
  const auto fh = r.read<coff::FileHeader>(p.coff_header_offset, "PE file header");
  p.machine = fh.Machine;
  p.optional_header_offset = p.coff_header_offset + sizeof(coff::FileHeader);
  const std::uint64_t opt_size = fh.SizeOfOptionalHeader;
  if (range_past(p.optional_header_offset, opt_size, data.size()))
    fail_at({file, p.coff_header_offset + 16}, "the optional header (0x{:x} bytes) extends past the end of the file",
            opt_size);
  const Bytes opt = data.subspan(p.optional_header_offset, opt_size);
  if (opt.size() < 2) fail_at({file, p.optional_header_offset}, "the image has no optional header");
  const std::uint16_t magic = load_le<std::uint16_t>(opt.data());
  if (magic != kPe32 && magic != kPe32Plus)
    fail_at({file, p.optional_header_offset}, "optional header magic 0x{:x} is neither PE32 (0x10b) nor PE32+ (0x20b)",
            magic);
  p.pe32plus = magic == kPe32Plus;
  // Field offsets of the optional header (PE32+ / PE32).
  const std::uint64_t dirs_at = p.pe32plus ? 112 : 96, count_at = p.pe32plus ? 108 : 92;
  if (opt.size() < dirs_at)
    fail_at({file, p.optional_header_offset}, "the optional header (0x{:x} bytes) is too short for a {} image",
            opt.size(), p.pe32plus ? "PE32+" : "PE32");
  p.image_base = p.pe32plus ? load_le<std::uint64_t>(opt.data() + 24) : load_le<std::uint32_t>(opt.data() + 28);
  p.section_alignment = load_le<std::uint32_t>(opt.data() + 32);
  p.file_alignment = load_le<std::uint32_t>(opt.data() + 36);
  p.size_of_image = load_le<std::uint32_t>(opt.data() + 56);
  p.size_of_headers = load_le<std::uint32_t>(opt.data() + 60);
  p.checksum_offset = p.optional_header_offset + 64;
  p.checksum = load_le<std::uint32_t>(opt.data() + 64);
  auto pow2 = [](std::uint32_t v) { return v != 0 && (v & (v - 1)) == 0; };
  if (!pow2(p.file_alignment) || p.file_alignment > 0x10000)
    fail_at({file, p.optional_header_offset + 36}, "FileAlignment 0x{:x} is not a power of two up to 0x10000",
            p.file_alignment);
  if (!pow2(p.section_alignment))
    fail_at({file, p.optional_header_offset + 32}, "SectionAlignment 0x{:x} is not a power of two", p.section_alignment);
  const std::uint32_t ndirs = load_le<std::uint32_t>(opt.data() + count_at);
  if (ndirs > (opt.size() - dirs_at) / 8)
    fail_at({file, p.optional_header_offset + count_at},
            "0x{:x} data directories do not fit the optional header (0x{:x} bytes)", ndirs, opt.size());
  p.directories_offset = p.optional_header_offset + dirs_at;
  for (std::uint32_t i = 0; i < ndirs; ++i)
    p.directories.push_back({load_le<std::uint32_t>(opt.data() + dirs_at + 8 * i),
                             load_le<std::uint32_t>(opt.data() + dirs_at + 8 * i + 4)});

  p.section_table_offset = p.optional_header_offset + opt_size;
  const std::uint64_t n = fh.NumberOfSections;
  if (range_past(p.section_table_offset, n * sizeof(coff::SectionHeader), data.size()))
    fail_at({file, p.coff_header_offset + 2}, "0x{:x} section headers at 0x{:x} extend past the end of the file", n,
            p.section_table_offset);
  // Long names: a COFF string table after the symbol table, where the linker wrote one.
  std::string_view strtab;
  if (fh.PointerToSymbolTable != 0) {
    const std::uint64_t at = fh.PointerToSymbolTable + std::uint64_t{fh.NumberOfSymbols} * 18;
    if (at + 4 <= data.size()) {
      const std::uint32_t size = load_le<std::uint32_t>(data.data() + at);
      if (size >= 4 && !range_past(at, size, data.size())) strtab = as_chars(data.subspan(at, size));
    }
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t at = p.header_offset(i);
    const auto s = r.read<coff::SectionHeader>(at, "section header");
    std::string_view field(s.Name, coff::kNameSize);
    field = field.substr(0, std::min(field.find('\0'), coff::kNameSize));
    std::string name(field);
    if (!field.empty() && field[0] == '/' && !strtab.empty()) {
      if (auto off = coff_long_name_offset(field); off && *off >= 4 && *off < strtab.size())
        name = std::string(strtab.substr(*off, strtab.find('\0', *off) - *off));
    }
    if (s.SizeOfRawData != 0 && range_past(s.PointerToRawData, s.SizeOfRawData, data.size()))
      fail_at({file, at}, "section {} ({}) raw data (0x{:x} bytes at 0x{:x}) extends past the end of the file (0x{:x} "
              "bytes)", i + 1, name, static_cast<std::uint32_t>(s.SizeOfRawData),
              static_cast<std::uint32_t>(s.PointerToRawData), data.size());
    const std::uint64_t vsize = std::max<std::uint64_t>(s.VirtualSize, s.SizeOfRawData);
    if (range_past(s.VirtualAddress, vsize, p.size_of_image))
      fail_at({file, at}, "section {} ({}) at RVA 0x{:x} (0x{:x} bytes) lies outside the image (SizeOfImage 0x{:x})",
              i + 1, name, static_cast<std::uint32_t>(s.VirtualAddress), vsize, p.size_of_image);
    p.sections.push_back(s);
    p.names.push_back(std::move(name));
  }
  // Sections lie in ascending RVA order and do not overlap, in memory or in the file.
  for (std::size_t i = 1; i < p.sections.size(); ++i) {
    const coff::SectionHeader &a = p.sections[i - 1], &b = p.sections[i];
    const std::uint64_t a_end = std::uint64_t{a.VirtualAddress} + std::max<std::uint64_t>(a.VirtualSize, a.SizeOfRawData);
    if (b.VirtualAddress < a_end)
      fail_at({file, p.header_offset(i)}, "section {} ({}) at RVA 0x{:x} overlaps section {} ({}) in memory", i + 1,
              p.names[i], static_cast<std::uint32_t>(b.VirtualAddress), i, p.names[i - 1]);
  }
  std::vector<std::size_t> by_file;
  for (std::size_t i = 0; i < p.sections.size(); ++i)
    if (p.sections[i].SizeOfRawData) by_file.push_back(i);
  std::sort(by_file.begin(), by_file.end(),
            [&](std::size_t a, std::size_t b) { return p.sections[a].PointerToRawData < p.sections[b].PointerToRawData; });
  for (std::size_t k = 1; k < by_file.size(); ++k) {
    const coff::SectionHeader &a = p.sections[by_file[k - 1]], &b = p.sections[by_file[k]];
    if (b.PointerToRawData < std::uint64_t{a.PointerToRawData} + a.SizeOfRawData)
      fail_at({file, p.header_offset(by_file[k])}, "section {} ({}) raw data at 0x{:x} overlaps section {} ({})",
              by_file[k] + 1, p.names[by_file[k]], static_cast<std::uint32_t>(b.PointerToRawData), by_file[k - 1] + 1,
              p.names[by_file[k - 1]]);
  }
  for (std::size_t i = 0; i < p.directories.size(); ++i) {
    const Directory& d = p.directories[i];
    if (d.size == 0) continue;
    const std::uint64_t at = p.directories_offset + 8 * i;
    if (i == kDirCertificates) {
      if (range_past(d.rva, d.size, data.size()))
        fail_at({file, at}, "the certificate table (0x{:x} bytes at file offset 0x{:x}) extends past the end of the "
                "file (0x{:x} bytes)", d.size, d.rva, data.size());
    } else if (range_past(d.rva, d.size, p.size_of_image)) {
      fail_at({file, at}, "data directory {} (0x{:x} bytes at RVA 0x{:x}) lies outside the image (SizeOfImage 0x{:x})",
              i, d.size, d.rva, p.size_of_image);
    }
  }
  return p;
}

std::uint64_t PeImage::content_size(std::size_t i) const {
  const coff::SectionHeader& s = sections[i];
  if (s.SizeOfRawData == 0) return 0;
  return s.VirtualSize ? std::min<std::uint64_t>(s.VirtualSize, s.SizeOfRawData) : std::uint64_t{s.SizeOfRawData};
}

std::optional<std::size_t> PeImage::section_at(std::uint64_t rva) const {
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const coff::SectionHeader& s = sections[i];
    if (rva >= s.VirtualAddress && rva - s.VirtualAddress < std::max<std::uint64_t>(s.VirtualSize, s.SizeOfRawData))
      return i;
  }
  return std::nullopt;
}

const PeImage::Directory& PeImage::directory(std::size_t i) const {
  static const Directory kNone;
  return i < directories.size() ? directories[i] : kNone;
}

std::vector<PeImage::Registration> PeImage::registrations() const {
  std::vector<Registration> out;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const std::string& n = names[i];
    const bool hip = n == ".hipFatB" || n == ".hipFatBinSegment", cuda = n == ".nvFatBi" || n == ".nvFatBinSegment";
    if (!hip && !cuda) continue;
    const std::uint32_t magic = cuda ? formats::kFatbinWrapperMagic : formats::kHipWrapperMagic;
    const std::uint64_t off = sections[i].PointerToRawData, size = content_size(i);
    for (std::uint64_t r = 0; r + formats::kHipWrapperSize <= size; r += formats::kHipWrapperSize)
      if (load_le<std::uint32_t>(data.data() + off + r) == magic)
        out.push_back({cuda, i, off + r + formats::kHipWrapperBinary,
                       load_le<std::uint64_t>(data.data() + off + r + formats::kHipWrapperBinary)});
  }
  return out;
}

std::uint32_t PeImage::compute_checksum(Bytes file, std::uint64_t checksum_offset) {
  // The sum of the file's 16-bit little-endian words with the carries folded
  // back in (CheckSum's own 4 bytes counted as zeros, an odd last byte padded
  // with a zero), plus the file's length.
  std::uint64_t sum = 0;
  const std::uint64_t n = file.size();
  auto byte = [&](std::uint64_t i) -> std::uint32_t {
    if (i >= n || (i >= checksum_offset && i - checksum_offset < 4)) return 0;
    return std::to_integer<std::uint32_t>(file[i]);
  };
  for (std::uint64_t i = 0; i < n; i += 2) {
    const std::uint32_t w = byte(i) | byte(i + 1) << 8;
    sum += w;
    sum = (sum & 0xffff) + (sum >> 16);
  }
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint32_t>(sum + n);
}

}  // namespace ot::object
