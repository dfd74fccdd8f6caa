#include "object/coff_writer.h"

#include <bit>
#include <cstring>
#include <limits>

namespace ot::object {
namespace {

// Section characteristics (PE/COFF specification names).
constexpr std::uint32_t CNT_CODE = 0x20, CNT_INITIALIZED_DATA = 0x40, CNT_UNINITIALIZED_DATA = 0x80,
                        LNK_INFO = 0x200, LNK_REMOVE = 0x800, MEM_EXECUTE = 0x20000000, MEM_READ = 0x40000000,
                        MEM_WRITE = 0x80000000;
constexpr std::uint8_t SYM_CLASS_EXTERNAL = 2, SYM_CLASS_STATIC = 3, SYM_CLASS_FILE = 103,
                       SYM_CLASS_WEAK_EXTERNAL = 105;
constexpr std::uint16_t SYM_DTYPE_FUNCTION = 0x20;
constexpr std::int16_t SYM_DEBUG = -2;
constexpr std::uint32_t WEAK_EXTERN_SEARCH_ALIAS = 3;
constexpr std::size_t kSymSize = 18;

class Out {
 public:
  template <typename T>
  void put(T v) {
    v = byteswap_if(v, std::endian::native != std::endian::little);
    auto p = reinterpret_cast<const std::byte*>(&v);
    buf_.insert(buf_.end(), p, p + sizeof(T));
  }
  void name8(const char* s, std::size_t n) {
    for (std::size_t i = 0; i < 8; ++i) buf_.push_back(i < n ? static_cast<std::byte>(s[i]) : std::byte{0});
  }
  void zeros(std::size_t n) { buf_.insert(buf_.end(), n, std::byte{0}); }
  std::vector<std::byte>& bytes() { return buf_; }

 private:
  std::vector<std::byte> buf_;
};

std::uint32_t align_flag(std::uint64_t align) {
  if (align <= 1) return 0x00100000;
  std::uint32_t log = static_cast<std::uint32_t>(std::countr_zero(align));
  if (log > 13) log = 13;  // IMAGE_SCN_ALIGN_8192BYTES is the largest
  return (log + 1) << 20;
}

std::uint32_t characteristics(const Section& s) {
  std::uint32_t a = align_flag(s.align);
  switch (s.kind) {
    case SectionKind::Code: return CNT_CODE | MEM_EXECUTE | MEM_READ | a;
    case SectionKind::ReadOnly:
    case SectionKind::RelRo:
    case SectionKind::Offloading:
    case SectionKind::EntryTable:
    case SectionKind::GnuStack: return CNT_INITIALIZED_DATA | MEM_READ | a;
    case SectionKind::Data: return CNT_INITIALIZED_DATA | MEM_READ | MEM_WRITE | a;
    case SectionKind::Bss: return CNT_UNINITIALIZED_DATA | MEM_READ | MEM_WRITE | a;
    case SectionKind::InitArray:
    case SectionKind::FiniArray:
      // The MSVC CRT's .CRT$X* tables are read-only; MinGW's .ctors/.dtors are writable (what LLVM emits).
      return s.name.starts_with(".CRT$") ? CNT_INITIALIZED_DATA | MEM_READ | a
                                         : CNT_INITIALIZED_DATA | MEM_READ | MEM_WRITE | a;
    case SectionKind::Directive: return LNK_INFO | LNK_REMOVE | 0x00100000;
  }
  return CNT_INITIALIZED_DATA | MEM_READ | a;
}

class StrTab {
 public:
  std::uint32_t add(const std::string& s) {
    std::uint32_t off = static_cast<std::uint32_t>(4 + data_.size());
    for (char c : s) data_.push_back(static_cast<std::byte>(c));
    data_.push_back(std::byte{0});
    return off;
  }
  std::vector<std::byte> finish() const {
    Out o;
    o.put<std::uint32_t>(static_cast<std::uint32_t>(4 + data_.size()));
    o.bytes().insert(o.bytes().end(), data_.begin(), data_.end());
    return std::move(o.bytes());
  }

 private:
  std::vector<std::byte> data_;
};

void patch_in_place(std::vector<Chunk>& data, std::uint64_t off, std::size_t width, std::int64_t value,
                    const std::string& sec) {
  std::uint64_t pos = 0;
  for (Chunk& c : data) {
    if (off >= pos && off - pos + width <= c.size() && !c.file) {
      std::byte* p = c.bytes.data() + (off - pos);
      if (width == 8) {
        store_le<std::uint64_t>(p, load_le<std::uint64_t>(p) + static_cast<std::uint64_t>(value));
      } else {
        store_le<std::uint32_t>(p, load_le<std::uint32_t>(p) + static_cast<std::uint32_t>(value));
      }
      return;
    }
    pos += c.size();
  }
  fail(sec, "relocation at offset 0x{:x} is not inside the section's own bytes", off);
}

}  // namespace

ObjectBytes write_coff(const RelocatableObject& obj, std::uint16_t machine) {
  std::vector<std::uint32_t> order;  // sections that exist in COFF
  std::vector<std::int32_t> secnum(obj.sections.size(), 0);
  for (std::uint32_t i = 0; i < obj.sections.size(); ++i) {
    if (obj.sections[i].kind == SectionKind::GnuStack) continue;
    order.push_back(i);
    secnum[i] = static_cast<std::int32_t>(order.size());
  }
  std::vector<std::vector<const Reloc*>> rels(obj.sections.size());
  for (const Reloc& r : obj.relocs) {
    if (r.section >= obj.sections.size() || secnum[r.section] == 0)
      fail("", "relocation refers to a missing section {}", r.section);
    if (r.symbol >= obj.symbols.size()) fail("", "relocation refers to a missing symbol {}", r.symbol);
    rels[r.section].push_back(&r);
  }

  // Symbol indices: .file (+ aux), one static symbol + aux per section, then the object's symbols.
  const std::size_t file_aux = obj.source_name.empty() ? 0 : (obj.source_name.size() + kSymSize - 1) / kSymSize;
  std::uint32_t next = obj.source_name.empty() ? 0 : static_cast<std::uint32_t>(1 + file_aux);
  next += static_cast<std::uint32_t>(2 * order.size());
  std::vector<std::uint32_t> symidx(obj.symbols.size());
  for (std::uint32_t i = 0; i < obj.symbols.size(); ++i) {
    symidx[i] = next;
    next += obj.symbols[i].weak_default >= 0 ? 2 : 1;
  }
  const std::uint32_t nsyms = next;

  // Raw data and relocations of each section, laid out after the headers.
  std::uint64_t pos = 20 + 40 * order.size();
  StrTab strtab;
  Out headers;
  std::vector<Chunk> body;
  struct SecInfo {
    std::uint64_t size;
    std::uint16_t nrel;
  };
  std::vector<SecInfo> info;
  for (std::uint32_t i : order) {
    const Section& s = obj.sections[i];
    std::vector<Chunk> data = s.data;
    Out relbytes;
    for (const Reloc* r : rels[i]) {
      switch (r->type) {
        case kCoffRelAmd64Addr64: patch_in_place(data, r->offset, 8, r->addend, s.name); break;
        case kCoffRelAmd64Rel32: patch_in_place(data, r->offset, 4, r->addend + 4, s.name); break;
        default: patch_in_place(data, r->offset, 4, r->addend, s.name); break;
      }
      relbytes.put<std::uint32_t>(static_cast<std::uint32_t>(r->offset));
      relbytes.put<std::uint32_t>(symidx[r->symbol]);
      relbytes.put<std::uint16_t>(static_cast<std::uint16_t>(r->type));
    }
    if (rels[i].size() > 0xffff) fail(s.name, "more than 0xffff relocations in one section");
    const std::uint64_t size = s.size();
    if (size > std::numeric_limits<std::uint32_t>::max())
      fail(s.name, "section size 0x{:x} does not fit a COFF object (4 GiB at most)", size);
    std::uint64_t raw_ptr = 0, rel_ptr = 0;
    if (s.kind != SectionKind::Bss) {
      raw_ptr = pos;
      for (Chunk& c : data) body.push_back(std::move(c));
      pos += size;
    }
    if (!rels[i].empty()) {
      rel_ptr = pos;
      pos += relbytes.bytes().size();
      body.push_back(Chunk::owned(std::move(relbytes.bytes())));
    }
    if (pos > std::numeric_limits<std::uint32_t>::max()) fail("", "object larger than 4 GiB");
    if (s.name.size() <= 8) {
      headers.name8(s.name.data(), s.name.size());
    } else {
      std::string ref = "/" + std::to_string(strtab.add(s.name));
      headers.name8(ref.data(), ref.size());
    }
    headers.put<std::uint32_t>(0);  // VirtualSize
    headers.put<std::uint32_t>(0);  // VirtualAddress
    headers.put<std::uint32_t>(static_cast<std::uint32_t>(size));
    headers.put<std::uint32_t>(static_cast<std::uint32_t>(raw_ptr));
    headers.put<std::uint32_t>(static_cast<std::uint32_t>(rel_ptr));
    headers.put<std::uint32_t>(0);  // PointerToLinenumbers
    headers.put<std::uint16_t>(static_cast<std::uint16_t>(rels[i].size()));
    headers.put<std::uint16_t>(0);  // NumberOfLinenumbers
    headers.put<std::uint32_t>(characteristics(s));
    info.push_back({size, static_cast<std::uint16_t>(rels[i].size())});
  }
  const std::uint64_t symtab_ptr = pos;

  // Symbol table.
  Out syms;
  auto put_name = [&](const std::string& n) {
    if (n.size() <= 8) {
      syms.name8(n.data(), n.size());
    } else {
      syms.put<std::uint32_t>(0);
      syms.put<std::uint32_t>(strtab.add(n));
    }
  };
  if (!obj.source_name.empty()) {
    syms.name8(".file", 5);
    syms.put<std::uint32_t>(0);
    syms.put<std::int16_t>(SYM_DEBUG);
    syms.put<std::uint16_t>(0);
    syms.put<std::uint8_t>(SYM_CLASS_FILE);
    syms.put<std::uint8_t>(static_cast<std::uint8_t>(file_aux));
    for (std::size_t k = 0; k < file_aux * kSymSize; ++k)
      syms.put<std::uint8_t>(k < obj.source_name.size() ? static_cast<std::uint8_t>(obj.source_name[k]) : 0);
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    put_name(obj.sections[order[k]].name);
    syms.put<std::uint32_t>(0);
    syms.put<std::int16_t>(static_cast<std::int16_t>(k + 1));
    syms.put<std::uint16_t>(0);
    syms.put<std::uint8_t>(SYM_CLASS_STATIC);
    syms.put<std::uint8_t>(1);
    // Auxiliary section definition: length, relocations, line numbers, checksum, number, selection.
    syms.put<std::uint32_t>(static_cast<std::uint32_t>(info[k].size));
    syms.put<std::uint16_t>(info[k].nrel);
    syms.put<std::uint16_t>(0);
    syms.put<std::uint32_t>(0);
    syms.put<std::uint16_t>(static_cast<std::uint16_t>(k + 1));  // Number: the section itself (as LLVM writes)
    syms.put<std::uint8_t>(0);   // Selection: no COMDAT
    syms.zeros(3);
  }
  for (const Symbol& s : obj.symbols) {
    put_name(s.name);
    std::int16_t num = 0;
    if (s.section != kUndefined) {
      if (s.section < 0 || static_cast<std::size_t>(s.section) >= obj.sections.size() || secnum[s.section] == 0)
        fail("", "symbol '{}' refers to a missing section", s.name);
      num = static_cast<std::int16_t>(secnum[s.section]);
    }
    if (s.value > std::numeric_limits<std::uint32_t>::max()) fail("", "symbol '{}' value does not fit COFF", s.name);
    std::uint8_t cls = s.binding == Binding::Local ? SYM_CLASS_STATIC : SYM_CLASS_EXTERNAL;
    if (s.weak_default >= 0) cls = SYM_CLASS_WEAK_EXTERNAL;
    syms.put<std::uint32_t>(static_cast<std::uint32_t>(s.value));
    syms.put<std::int16_t>(num);
    syms.put<std::uint16_t>(s.type == SymbolType::Func ? SYM_DTYPE_FUNCTION : 0);
    syms.put<std::uint8_t>(cls);
    syms.put<std::uint8_t>(s.weak_default >= 0 ? 1 : 0);
    if (s.weak_default >= 0) {
      if (static_cast<std::size_t>(s.weak_default) >= obj.symbols.size())
        fail("", "weak symbol '{}' has a missing default", s.name);
      syms.put<std::uint32_t>(symidx[s.weak_default]);
      syms.put<std::uint32_t>(WEAK_EXTERN_SEARCH_ALIAS);
      syms.zeros(10);
    }
  }
  if (syms.bytes().size() != nsyms * kSymSize) fail("", "internal error: COFF symbol count mismatch");

  Out head;
  head.put<std::uint16_t>(machine);
  head.put<std::uint16_t>(static_cast<std::uint16_t>(order.size()));
  head.put<std::uint32_t>(0);  // TimeDateStamp: none, for reproducible output
  head.put<std::uint32_t>(static_cast<std::uint32_t>(symtab_ptr));
  head.put<std::uint32_t>(nsyms);
  head.put<std::uint16_t>(0);  // SizeOfOptionalHeader
  head.put<std::uint16_t>(0);  // Characteristics
  head.bytes().insert(head.bytes().end(), headers.bytes().begin(), headers.bytes().end());

  ObjectBytes out;
  out.chunks.push_back(Chunk::owned(std::move(head.bytes())));
  for (Chunk& c : body) out.chunks.push_back(std::move(c));
  out.chunks.push_back(Chunk::owned(std::move(syms.bytes())));
  out.chunks.push_back(Chunk::owned(strtab.finish()));
  return out;
}

}  // namespace ot::object
