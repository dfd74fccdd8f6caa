#include "object/object_file.h"

#include "object/pe_image.h"

#include <algorithm>
#include <cstring>

namespace ot::object {
namespace {

bool starts_with(Bytes data, std::string_view prefix) {
  return data.size() >= prefix.size() && as_chars(data.first(prefix.size())) == prefix;
}

// ---------------------------------------------------------------------------
// identify_object: the acceptance rules of LLVM 19's identify_magic() plus
// the checks its ELF and COFF object constructors make eagerly (observed with
// clang-offload-bundler -type=o -### on crafted files, which runs objcopy only
// for the object handler). Nothing else is checked at that point: a COFF symbol
// table that does not fit, or an ELF section whose data is past the end, still
// gives an object, whose reading then fails later.

template <typename E>
bool llvm_accepts_elf(Bytes data) {
  if (data.size() < sizeof(elf::ElfEhdr<E>)) return false;
  elf::ElfEhdr<E> eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  const std::uint64_t shoff = eh.e_shoff;
  if (shoff == 0) return true;
  constexpr std::uint64_t kShdr = sizeof(elf::ElfShdr<E>);
  if (eh.e_shentsize != kShdr) return false;
  if (range_exceeds(shoff, kShdr, data.size())) return false;
  std::uint64_t count = eh.e_shnum;
  if (count == 0) {
    elf::ElfShdr<E> first;
    std::memcpy(&first, data.data() + shoff, sizeof first);
    count = first.sh_size;
  }
  return count <= (data.size() - shoff) / kShdr;
}

// First two bytes (the machine field, little-endian) that identify_magic()
// takes for a COFF object; measured over all 65536 values.
bool coff_object_machine(std::uint16_t m) {
  switch (m) {
    case 0x0000:   // IMAGE_FILE_MACHINE_UNKNOWN
    case 0x014c:   // i386
    case 0x0150: case 0x0166: case 0x0183: case 0x0184: case 0x01c4: case 0x01f0:
    case 0x024c: case 0x0250: case 0x0266: case 0x0268: case 0x0283: case 0x0284:
    case 0x0290: case 0x02c4: case 0x02f0:
    case 0x8664:   // x86-64
    case 0xaa64:   // arm64
    case 0xa641:   // arm64ec
    case 0xa64e:   // arm64x
      return true;
    default:
      return false;
  }
}

ObjectKind identify_coff(Bytes data) {
  // "\0\0\xff\xff": bigobj, a cl.exe /GL object or a short import library,
  // told apart by the UUID after the version.
  if (starts_with(data, std::string_view("\0\0\xff\xff", 4))) {
    constexpr std::size_t kMin = coff::kBigObjUuidOffset + sizeof coff::kBigObjMagic;
    if (data.size() < kMin ||
        std::memcmp(data.data() + coff::kBigObjUuidOffset, coff::kBigObjMagic, sizeof coff::kBigObjMagic) != 0)
      return ObjectKind::NotObject;
  }
  if (data.size() < sizeof(coff::FileHeader)) return ObjectKind::NotObject;
  coff::FileHeader fh;
  std::memcpy(&fh, data.data(), sizeof fh);
  std::uint64_t table = sizeof(coff::FileHeader) + fh.SizeOfOptionalHeader;
  std::uint64_t count = fh.NumberOfSections;
  if (fh.Machine == coff::IMAGE_FILE_MACHINE_UNKNOWN && fh.NumberOfSections == 0xffff &&
      data.size() >= sizeof(coff::BigObjHeader)) {
    coff::BigObjHeader bh;
    std::memcpy(&bh, data.data(), sizeof bh);
    if (bh.Version >= coff::kBigObjMinVersion) {
      table = sizeof(coff::BigObjHeader);
      count = bh.NumberOfSections;
    }
  }
  // LLVM stops reading a regular header with 0xffff sections there (the
  // import library layout) and still returns an object.
  if (table == sizeof(coff::FileHeader) + fh.SizeOfOptionalHeader && fh.NumberOfSections == 0xffff)
    return ObjectKind::Coff;
  if (range_exceeds(table, count * sizeof(coff::SectionHeader), data.size())) return ObjectKind::NotObject;
  return ObjectKind::Coff;
}

// The first bytes of a COFF object as identify_magic() sees them (before any
// size or table check).
bool looks_like_coff(Bytes data) {
  if (data.size() < 4) return false;
  static constexpr unsigned char kWinRes[16] = {0, 0, 0, 0, 0x20, 0, 0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0};
  if (data.size() >= sizeof kWinRes && std::memcmp(data.data(), kWinRes, sizeof kWinRes) == 0) return false;
  if (starts_with(data, std::string_view("\0\0\xff\xff", 4))) return true;
  if (starts_with(data, std::string_view("\0asm", 4))) return false;
  return coff_object_machine(load_le<std::uint16_t>(data.data()));
}


// ---------------------------------------------------------------------------
// COFF long section names

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

ObjectKind identify_object(Bytes data) {
  if (data.size() < 4) return ObjectKind::NotObject;
  if (starts_with(data, std::string_view("\x7f" "ELF", 4))) {
    if (data.size() < 18) return ObjectKind::NotObject;
    auto cls = elf_class_of(data);
    if (!cls) return ObjectKind::NotObject;
    bool ok = visit_elf_class(*cls, [&](auto e) { return llvm_accepts_elf<decltype(e)>(data); });
    return ok ? ObjectKind::Elf : ObjectKind::NotObject;
  }
  // Mach-O objects (32/64-bit, either byte order); FAT universal files are not objects.
  for (std::string_view m : {std::string_view("\xfe\xed\xfa\xce"), std::string_view("\xce\xfa\xed\xfe"),
                             std::string_view("\xfe\xed\xfa\xcf"), std::string_view("\xcf\xfa\xed\xfe")})
    if (starts_with(data, m)) return ObjectKind::OtherObject;
  if (starts_with(data, std::string_view("\0asm", 4))) return ObjectKind::OtherObject;
  if (starts_with(data, "\x01\xdf") || starts_with(data, "\x01\xf7")) return ObjectKind::OtherObject;  // XCOFF
  if (starts_with(data, std::string_view("\x03\xf0\x00", 3))) return ObjectKind::OtherObject;          // GOFF
  // PE images are COFF ObjectFiles to LLVM, but nothing here rewrites them.
  if (is_pe_image(data)) return ObjectKind::OtherObject;
  if (looks_like_coff(data)) return identify_coff(data);
  return ObjectKind::NotObject;
}

std::optional<ElfClass> elf_class_of(Bytes data) {
  if (data.size() < elf::EI_NIDENT || !starts_with(data, std::string_view("\x7f" "ELF", 4))) return std::nullopt;
  const auto cls = static_cast<std::uint8_t>(data[elf::EI_CLASS]);
  const auto enc = static_cast<std::uint8_t>(data[elf::EI_DATA]);
  if (enc != elf::ELFDATA2LSB && enc != elf::ELFDATA2MSB) return std::nullopt;
  const bool le = enc == elf::ELFDATA2LSB;
  if (cls == elf::ELFCLASS32) return le ? ElfClass::Elf32LE : ElfClass::Elf32BE;
  if (cls == elf::ELFCLASS64) return le ? ElfClass::Elf64LE : ElfClass::Elf64BE;
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// ELF

template <typename E>
ElfFile<E> ElfFile<E>::parse(Bytes data, const std::string& file) {
  using Ehdr = elf::ElfEhdr<E>;
  using Shdr = elf::ElfShdr<E>;
  ElfFile f;
  f.data = data;
  f.file = file;
  ByteReader r(data, file);
  f.ehdr = r.read<Ehdr>(0, "elf header");
  const Ehdr& eh = f.ehdr;
  if (eh.e_ident[elf::EI_CLASS] != E::ei_class || eh.e_ident[elf::EI_DATA] != E::ei_data)
    fail_at({file, elf::EI_CLASS}, "elf class 0x{:x} / data encoding 0x{:x} is not {}", eh.e_ident[elf::EI_CLASS],
            eh.e_ident[elf::EI_DATA], E::name);
  const std::uint64_t shoff = eh.e_shoff;
  if (shoff == 0) {
    // No section header table: LLVM lists no sections, whatever e_shnum says.
    return f;
  }
  if (eh.e_shentsize != sizeof(Shdr))
    fail_at({file, offsetof(Ehdr, e_shentsize)}, "e_shentsize is 0x{:x}, expected 0x{:x}",
            static_cast<unsigned>(eh.e_shentsize), sizeof(Shdr));
  const Shdr first = r.read<Shdr>(shoff, "section header 0");
  std::uint64_t count = eh.e_shnum;
  std::uint64_t count_at = offsetof(Ehdr, e_shnum);
  if (count == 0) {  // extended numbering: the count lives in section 0's sh_size
    count = first.sh_size;
    count_at = shoff + offsetof(Shdr, sh_size);
    if (count == 0)
      fail_at({file, count_at}, "section header table at 0x{:x} has no entries (e_shnum and section 0 sh_size are 0)",
              shoff);
  }
  if (count > (data.size() - shoff) / sizeof(Shdr))
    fail_at({file, count_at}, "0x{:x} section headers at 0x{:x} extend past the end of the file (0x{:x} bytes)", count,
            shoff, data.size());
  f.shdrs.resize(count);
  for (std::uint64_t i = 0; i < count; ++i) f.shdrs[i] = r.read<Shdr>(shoff + i * sizeof(Shdr), "section header");

  std::uint64_t strndx = eh.e_shstrndx;
  std::uint64_t strndx_at = offsetof(Ehdr, e_shstrndx);
  if (strndx == elf::SHN_XINDEX) {
    strndx = first.sh_link;
    strndx_at = shoff + offsetof(Shdr, sh_link);
  }
  if (strndx >= count)
    fail_at({file, strndx_at}, "section name string table index 0x{:x} is out of range (0x{:x} sections)", strndx,
            count);
  f.shstrndx = static_cast<std::uint32_t>(strndx);

  for (std::uint64_t i = 0; i < count; ++i) {
    const Shdr& s = f.shdrs[i];
    if (s.sh_type != elf::SHT_NOBITS && range_exceeds(s.sh_offset, s.sh_size, data.size()))
      fail_at({file, f.header_offset(i)},
              "section {} data (0x{:x} bytes at 0x{:x}) extends past the end of the file (0x{:x} bytes)", i,
              static_cast<std::uint64_t>(s.sh_size), static_cast<std::uint64_t>(s.sh_offset), data.size());
  }

  std::string_view names;
  if (strndx != 0) {
    const Shdr& st = f.shdrs[strndx];
    if (st.sh_type != elf::SHT_STRTAB)
      fail_at({file, f.header_offset(strndx)}, "section name string table (section {}) has type 0x{:x}, not SHT_STRTAB",
              strndx, static_cast<std::uint32_t>(st.sh_type));
    names = as_chars(f.contents(strndx));
    if (names.empty() || names.back() != '\0')
      fail_at({file, f.header_offset(strndx)}, "section name string table (section {}) is not null-terminated",
              strndx);
  }
  f.names.resize(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint32_t off = f.shdrs[i].sh_name;
    if (off == 0) continue;
    if (off >= names.size())
      fail_at({file, f.header_offset(i)},
              "section {} name offset 0x{:x} is past the end of the section name string table (0x{:x} bytes)", i, off,
              names.size());
    f.names[i] = std::string(names.substr(off, names.find('\0', off) - off));
  }
  return f;
}

template <typename E>
Bytes ElfFile<E>::contents(std::size_t i) const {
  if (!has_data(i)) return {};
  return data.subspan(shdrs[i].sh_offset, shdrs[i].sh_size);
}

template struct ElfFile<elf::Elf32LE>;
template struct ElfFile<elf::Elf32BE>;
template struct ElfFile<elf::Elf64LE>;
template struct ElfFile<elf::Elf64BE>;

// ---------------------------------------------------------------------------
// COFF

std::optional<std::uint32_t> coff_long_name_offset(std::string_view field) {
  field = field.substr(0, std::min(field.find('\0'), coff::kNameSize));
  if (field.size() < 2 || field[0] != '/') return std::nullopt;
  std::uint64_t v = 0;
  if (field[1] == '/') {
    if (field.size() < 3) return std::nullopt;
    for (char c : field.substr(2)) {
      const char* p = std::strchr(kBase64, c);
      if (c == '\0' || p == nullptr) return std::nullopt;
      v = v * 64 + static_cast<std::uint64_t>(p - kBase64);
    }
  } else {
    for (char c : field.substr(1)) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
  }
  if (v > 0xffffffffu) return std::nullopt;
  return static_cast<std::uint32_t>(v);
}

std::string coff_long_name_field(std::uint32_t offset) {
  std::string s = fmt::format("/{}", offset);
  if (s.size() <= coff::kNameSize) return s;
  // Above 9999999 the decimal form does not fit: "//" and six base-64 digits.
  std::string b64(6, 'A');
  std::uint32_t v = offset;
  for (int i = 5; i >= 0; --i) {
    b64[static_cast<std::size_t>(i)] = kBase64[v % 64];
    v /= 64;
  }
  return "//" + b64;
}

CoffFile CoffFile::parse(Bytes data, const std::string& file) {
  CoffFile f;
  f.data = data;
  f.file = file;
  ByteReader r(data, file);
  const auto fh = r.read<coff::FileHeader>(0, "coff file header");
  std::uint64_t nsections = fh.NumberOfSections;
  std::uint64_t sections_at = offsetof(coff::FileHeader, NumberOfSections);
  f.machine = fh.Machine;
  f.symbol_table_offset = fh.PointerToSymbolTable;
  f.symbol_count = fh.NumberOfSymbols;
  std::uint64_t symptr_at = offsetof(coff::FileHeader, PointerToSymbolTable);
  f.section_table_offset = sizeof(coff::FileHeader) + fh.SizeOfOptionalHeader;
  if (fh.Machine == coff::IMAGE_FILE_MACHINE_UNKNOWN && fh.NumberOfSections == 0xffff) {
    const auto bh = r.read<coff::BigObjHeader>(0, "coff bigobj header");
    if (std::memcmp(bh.UUID, coff::kBigObjMagic, sizeof bh.UUID) != 0)
      fail_at({file, coff::kBigObjUuidOffset}, "not a coff object (an import library or a cl.exe /GL object)");
    if (bh.Version < coff::kBigObjMinVersion)
      fail_at({file, offsetof(coff::BigObjHeader, Version)}, "coff bigobj version 0x{:x} is below 0x{:x}",
              static_cast<unsigned>(bh.Version), coff::kBigObjMinVersion);
    f.bigobj = true;
    f.machine = bh.Machine;
    nsections = bh.NumberOfSections;
    sections_at = offsetof(coff::BigObjHeader, NumberOfSections);
    f.symbol_table_offset = bh.PointerToSymbolTable;
    f.symbol_count = bh.NumberOfSymbols;
    symptr_at = offsetof(coff::BigObjHeader, PointerToSymbolTable);
    f.symbol_size = sizeof(coff::Symbol32);
    f.section_table_offset = sizeof(coff::BigObjHeader);
  }
  if (range_exceeds(f.section_table_offset, nsections * sizeof(coff::SectionHeader), data.size()))
    fail_at({file, sections_at}, "0x{:x} coff section headers at 0x{:x} extend past the end of the file (0x{:x} bytes)",
            nsections, f.section_table_offset, data.size());

  // Symbol and string table.
  if (f.symbol_table_offset == 0) {
    if (f.symbol_count != 0)
      fail_at({file, symptr_at}, "0x{:x} coff symbols but no symbol table", f.symbol_count);
  } else {
    const std::uint64_t bytes = std::uint64_t{f.symbol_count} * f.symbol_size;
    if (range_exceeds(f.symbol_table_offset, bytes, data.size()))
      fail_at({file, symptr_at},
              "coff symbol table (0x{:x} symbols at 0x{:x}) extends past the end of the file (0x{:x} bytes)",
              f.symbol_count, f.symbol_table_offset, data.size());
    f.string_table_offset = f.symbol_table_offset + bytes;
    if (f.string_table_offset + 4 > data.size()) {
      // No string table at all: only acceptable when nothing needs one (an
      // empty table is written as just its size field, which some tools omit).
      f.string_table_size = 0;
    } else {
      f.string_table_size = load_le<std::uint32_t>(data.data() + f.string_table_offset);
      if (f.string_table_size < 4) f.string_table_size = 4;  // cvtres and lld write 0 for an empty table
      if (range_exceeds(f.string_table_offset, f.string_table_size, data.size()))
        fail_at({file, f.string_table_offset},
                "coff string table (0x{:x} bytes) extends past the end of the file (0x{:x} bytes)",
                f.string_table_size, data.size());
      if (f.string_table_size > 4 && data[f.string_table_offset + f.string_table_size - 1] != std::byte{0})
        fail_at({file, f.string_table_offset}, "coff string table is not null-terminated");
    }
  }
  const std::string_view strtab =
      f.string_table_size == 0 ? std::string_view() : as_chars(data.subspan(f.string_table_offset, f.string_table_size));

  f.sections.resize(nsections);
  f.names.resize(nsections);
  for (std::uint64_t i = 0; i < nsections; ++i) {
    const std::uint64_t at = f.header_offset(i);
    const auto s = r.read<coff::SectionHeader>(at, "coff section header");
    f.sections[i] = s;
    std::string_view field(s.Name, coff::kNameSize);
    field = field.substr(0, std::min(field.find('\0'), coff::kNameSize));
    if (!field.empty() && field[0] == '/') {
      auto off = coff_long_name_offset(field);
      if (!off)
        fail_at({file, at}, "coff section {} name '{}' is not a valid string table reference", i + 1, field);
      if (*off < 4 || *off >= strtab.size())
        fail_at({file, at}, "coff section {} name offset 0x{:x} is outside the string table (0x{:x} bytes)", i + 1, *off,
                strtab.size());
      f.names[i] = std::string(strtab.substr(*off, strtab.find('\0', *off) - *off));
    } else {
      f.names[i] = std::string(field);
    }
    if (s.PointerToRawData != 0 && range_exceeds(s.PointerToRawData, s.SizeOfRawData, data.size()))
      fail_at({file, at},
              "coff section {} data (0x{:x} bytes at 0x{:x}) extends past the end of the file (0x{:x} bytes)", i + 1,
              static_cast<std::uint32_t>(s.SizeOfRawData), static_cast<std::uint32_t>(s.PointerToRawData), data.size());
    if (s.NumberOfRelocations != 0) {
      if (range_exceeds(s.PointerToRelocations, sizeof(coff::Relocation), data.size()))
        fail_at({file, at}, "coff section {} relocations at 0x{:x} extend past the end of the file (0x{:x} bytes)",
                i + 1, static_cast<std::uint32_t>(s.PointerToRelocations), data.size());
      const std::uint64_t n = f.relocation_count(i);
      if ((s.Characteristics & coff::IMAGE_SCN_LNK_NRELOC_OVFL) != 0 && s.NumberOfRelocations == 0xffff && n == 0)
        fail_at({file, at}, "coff section {} has an overflowed relocation count of 0", i + 1);
      if (range_exceeds(s.PointerToRelocations, n * sizeof(coff::Relocation), data.size()))
        fail_at({file, at},
                "coff section {} relocations (0x{:x} at 0x{:x}) extend past the end of the file (0x{:x} bytes)", i + 1,
                n, static_cast<std::uint32_t>(s.PointerToRelocations), data.size());
    }
  }
  return f;
}

Bytes CoffFile::contents(std::size_t i) const {
  if (!has_data(i)) return {};
  return data.subspan(sections[i].PointerToRawData, sections[i].SizeOfRawData);
}

std::uint32_t CoffFile::relocation_count(std::size_t i) const {
  const coff::SectionHeader& s = sections[i];
  if ((s.Characteristics & coff::IMAGE_SCN_LNK_NRELOC_OVFL) != 0 && s.NumberOfRelocations == 0xffff)
    return load_le<std::uint32_t>(data.data() + s.PointerToRelocations);  // counts the count record itself
  return s.NumberOfRelocations;
}

// ---------------------------------------------------------------------------

std::vector<SectionInfo> read_sections(Bytes data, const std::string& file) {
  std::vector<SectionInfo> out;
  // Dispatch on the magic alone so that a damaged header gets its precise
  // error here instead of a generic "not an object".
  if (auto cls = elf_class_of(data)) {
    visit_elf_class(*cls, [&](auto e) {
      using E = decltype(e);
      const auto f = ElfFile<E>::parse(data, file);
      out.reserve(f.shdrs.size());
      for (std::size_t i = 0; i < f.shdrs.size(); ++i)
        out.push_back({f.names[i], f.shdrs[i].sh_offset, f.shdrs[i].sh_size, f.has_data(i), f.shdrs[i].sh_type});
    });
    return out;
  }
  if (starts_with(data, std::string_view("\x7f" "ELF", 4)))
    fail_at({file, elf::EI_CLASS}, "unknown elf class or data encoding");
  // A PE image is a COFF object file to LLVM too: its sections, as the linker left them.
  if (is_pe_image(data)) {
    const PeImage pe = PeImage::parse(data, file);
    for (std::size_t i = 0; i < pe.sections.size(); ++i)
      out.push_back({pe.names[i], pe.sections[i].PointerToRawData, pe.content_size(i), pe.content_size(i) != 0, 0});
    return out;
  }
  if (looks_like_coff(data)) {
    const auto f = CoffFile::parse(data, file);
    out.reserve(f.sections.size());
    for (std::size_t i = 0; i < f.sections.size(); ++i)
      out.push_back({f.names[i], f.sections[i].PointerToRawData, f.sections[i].SizeOfRawData, f.has_data(i), 0});
    return out;
  }
  if (identify_object(data) == ObjectKind::OtherObject)
    fail_at({file, 0}, "reading sections of Mach-O, Wasm, XCOFF and GOFF files is not supported");
  fail_at({file, 0}, "not an ELF or COFF object file");
}

}  // namespace ot::object
