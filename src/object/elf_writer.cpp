#include "object/elf_writer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>

namespace ot::object {
namespace {

// ELF constants used here (names as in the ELF gABI).
constexpr std::uint32_t SHT_PROGBITS = 1, SHT_SYMTAB = 2, SHT_STRTAB = 3, SHT_RELA = 4, SHT_NOBITS = 8,
                        SHT_REL = 9, SHT_INIT_ARRAY = 14, SHT_FINI_ARRAY = 15;
constexpr std::uint64_t SHF_WRITE = 1, SHF_ALLOC = 2, SHF_EXECINSTR = 4, SHF_INFO_LINK = 0x40;
constexpr std::uint8_t STB_LOCAL = 0, STB_GLOBAL = 1, STB_WEAK = 2;
constexpr std::uint8_t STT_NOTYPE = 0, STT_OBJECT = 1, STT_FUNC = 2, STT_FILE = 4;
constexpr std::uint8_t STV_HIDDEN = 2;
constexpr std::uint16_t SHN_ABS = 0xfff1;

// Appends integers in the target's byte order.
class Out {
 public:
  explicit Out(bool big) : big_(big) {}
  template <typename T>
  void put(T v) {
    v = byteswap_if(v, (big_ ? std::endian::big : std::endian::little) != std::endian::native);
    auto p = reinterpret_cast<const std::byte*>(&v);
    buf_.insert(buf_.end(), p, p + sizeof(T));
  }
  // An address-sized field: 8 bytes on ELF64, 4 on ELF32.
  void addr(bool is64, std::uint64_t v) {
    if (is64)
      put<std::uint64_t>(v);
    else
      put<std::uint32_t>(static_cast<std::uint32_t>(v));
  }
  std::vector<std::byte>& bytes() { return buf_; }

 private:
  bool big_;
  std::vector<std::byte> buf_;
};

// One string table for section names and symbol names (as LLVM's integrated
// assembler does), strings in first-use order, identical strings shared.
class StrTab {
 public:
  StrTab() { data_.push_back(std::byte{0}); }
  std::uint32_t add(const std::string& s) {
    if (s.empty()) return 0;
    auto [it, inserted] = index_.try_emplace(s, static_cast<std::uint32_t>(data_.size()));
    if (inserted) {
      for (char c : s) data_.push_back(static_cast<std::byte>(c));
      data_.push_back(std::byte{0});
    }
    return it->second;
  }
  const std::vector<std::byte>& data() const { return data_; }

 private:
  std::vector<std::byte> data_;
  std::map<std::string, std::uint32_t> index_;
};

struct Shdr {
  std::uint32_t name = 0, type = 0;
  std::uint64_t flags = 0, offset = 0, size = 0;
  std::uint32_t link = 0, info = 0;
  std::uint64_t align = 0, entsize = 0;
};

void section_type(SectionKind k, std::uint32_t& type, std::uint64_t& flags) {
  switch (k) {
    case SectionKind::Code: type = SHT_PROGBITS, flags = SHF_ALLOC | SHF_EXECINSTR; return;
    case SectionKind::ReadOnly: type = SHT_PROGBITS, flags = SHF_ALLOC; return;
    case SectionKind::RelRo: type = SHT_PROGBITS, flags = SHF_ALLOC | SHF_WRITE; return;
    case SectionKind::Data: type = SHT_PROGBITS, flags = SHF_ALLOC | SHF_WRITE; return;
    case SectionKind::Bss: type = SHT_NOBITS, flags = SHF_ALLOC | SHF_WRITE; return;
    case SectionKind::InitArray: type = SHT_INIT_ARRAY, flags = SHF_ALLOC | SHF_WRITE; return;
    case SectionKind::FiniArray: type = SHT_FINI_ARRAY, flags = SHF_ALLOC | SHF_WRITE; return;
    case SectionKind::Offloading: type = kShtLlvmOffloading, flags = SHF_ALLOC; return;
    case SectionKind::EntryTable: type = SHT_PROGBITS, flags = SHF_ALLOC; return;
    case SectionKind::GnuStack: type = SHT_PROGBITS, flags = 0; return;
    case SectionKind::Directive: break;
  }
  type = SHT_PROGBITS, flags = 0;
}

// Adds `addend` to the 32-bit field at `off` (SHT_REL keeps addends in place).
void add_in_place(std::vector<Chunk>& data, std::uint64_t off, std::int64_t addend, bool big, const std::string& sec) {
  std::uint64_t pos = 0;
  for (Chunk& c : data) {
    if (off >= pos && off - pos + 4 <= c.size() && !c.file) {
      std::byte* p = c.bytes.data() + (off - pos);
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      bool swap = (big ? std::endian::big : std::endian::little) != std::endian::native;
      v = byteswap_if(v, swap);
      v += static_cast<std::uint32_t>(addend);
      v = byteswap_if(v, swap);
      std::memcpy(p, &v, 4);
      return;
    }
    pos += c.size();
  }
  fail(sec, "relocation at offset 0x{:x} is not inside the section's own bytes", off);
}

}  // namespace

ObjectBytes write_elf(const RelocatableObject& obj, const ElfTarget& t) {
  const bool is64 = t.is64;
  const std::uint64_t ehsize = is64 ? 64 : 52, shentsize = is64 ? 64 : 40;
  const std::uint64_t symsize = is64 ? 24 : 16;
  const std::uint64_t relsize = t.rela ? (is64 ? 24 : 12) : (is64 ? 16 : 8);
  const std::uint64_t word = is64 ? 8 : 4;

  // Section indices: 0 null, then the object's sections that exist in ELF.
  std::vector<std::uint32_t> shndx(obj.sections.size(), 0);
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < obj.sections.size(); ++i) {
    if (obj.sections[i].kind == SectionKind::Directive) continue;
    order.push_back(i);
    shndx[i] = static_cast<std::uint32_t>(order.size());
  }
  // Relocations grouped per section, in object order.
  std::vector<std::vector<const Reloc*>> rels(obj.sections.size());
  for (const Reloc& r : obj.relocs) {
    if (r.section >= obj.sections.size() || shndx[r.section] == 0)
      fail("", "relocation refers to a missing section {}", r.section);
    if (r.symbol >= obj.symbols.size()) fail("", "relocation refers to a missing symbol {}", r.symbol);
    rels[r.section].push_back(&r);
  }

  // Symbol order: null, file, locals, then globals and weaks.
  std::vector<std::uint32_t> symidx(obj.symbols.size(), 0);
  std::vector<std::uint32_t> symorder;
  for (std::uint32_t i = 0; i < obj.symbols.size(); ++i)
    if (obj.symbols[i].binding == Binding::Local) symorder.push_back(i);
  const std::uint32_t first_sym = obj.source_name.empty() ? 1 : 2;
  const std::uint32_t first_global = first_sym + static_cast<std::uint32_t>(symorder.size());
  for (std::uint32_t i = 0; i < obj.symbols.size(); ++i)
    if (obj.symbols[i].binding != Binding::Local) symorder.push_back(i);
  for (std::uint32_t k = 0; k < symorder.size(); ++k) symidx[symorder[k]] = first_sym + k;

  StrTab strtab;
  std::vector<Shdr> shdrs(1);
  ObjectBytes out;
  std::uint64_t pos = ehsize;
  auto pad_to = [&](std::uint64_t align) {
    std::uint64_t next = align_to(pos, align);
    if (next != pos) out.chunks.push_back(Chunk::zeros(next - pos));
    pos = next;
  };
  out.chunks.push_back(Chunk{});  // the ELF header, filled last

  // Section contents.
  std::vector<std::vector<Chunk>> contents(obj.sections.size());
  for (std::uint32_t i : order) {
    const Section& s = obj.sections[i];
    contents[i] = s.data;
    if (!t.rela)
      for (const Reloc* r : rels[i])
        if (r->addend != 0) add_in_place(contents[i], r->offset, r->addend, t.big_endian, s.name);
  }
  for (std::uint32_t i : order) {
    const Section& s = obj.sections[i];
    Shdr h;
    h.name = strtab.add(s.name);
    section_type(s.kind, h.type, h.flags);
    h.align = s.align == 0 ? 1 : s.align;
    h.size = s.size();
    if (s.kind != SectionKind::Bss) {
      pad_to(h.align);
      h.offset = pos;
      for (Chunk& c : contents[i]) {
        pos += c.size();
        out.chunks.push_back(std::move(c));
      }
    } else {
      h.offset = pos;
    }
    shdrs.push_back(h);
  }

  // Relocation sections.
  const std::uint32_t symtab_index =
      static_cast<std::uint32_t>(shdrs.size() + std::count_if(order.begin(), order.end(),
                                                              [&](std::uint32_t i) { return !rels[i].empty(); }));
  for (std::uint32_t i : order) {
    if (rels[i].empty()) continue;
    Out o(t.big_endian);
    for (const Reloc* r : rels[i]) {
      std::uint64_t sym = symidx[r->symbol];
      if (is64) {
        o.put<std::uint64_t>(r->offset);
        o.put<std::uint64_t>(sym << 32 | r->type);
        if (t.rela) o.put<std::int64_t>(r->addend);
      } else {
        o.put<std::uint32_t>(static_cast<std::uint32_t>(r->offset));
        o.put<std::uint32_t>(static_cast<std::uint32_t>(sym << 8 | (r->type & 0xff)));
        if (t.rela) o.put<std::int32_t>(static_cast<std::int32_t>(r->addend));
      }
    }
    Shdr h;
    h.name = strtab.add((t.rela ? ".rela" : ".rel") + obj.sections[i].name);
    h.type = t.rela ? SHT_RELA : SHT_REL;
    h.flags = SHF_INFO_LINK;
    h.link = symtab_index;
    h.info = shndx[i];
    h.align = word;
    h.entsize = relsize;
    pad_to(word);
    h.offset = pos;
    h.size = o.bytes().size();
    pos += h.size;
    out.chunks.push_back(Chunk::owned(std::move(o.bytes())));
    shdrs.push_back(h);
  }

  // Symbol table.
  {
    Out o(t.big_endian);
    auto sym = [&](std::uint32_t name, std::uint8_t info, std::uint8_t other, std::uint16_t ndx, std::uint64_t value,
                   std::uint64_t size) {
      o.put<std::uint32_t>(name);
      if (is64) {
        o.put<std::uint8_t>(info);
        o.put<std::uint8_t>(other);
        o.put<std::uint16_t>(ndx);
        o.put<std::uint64_t>(value);
        o.put<std::uint64_t>(size);
      } else {
        o.put<std::uint32_t>(static_cast<std::uint32_t>(value));
        o.put<std::uint32_t>(static_cast<std::uint32_t>(size));
        o.put<std::uint8_t>(info);
        o.put<std::uint8_t>(other);
        o.put<std::uint16_t>(ndx);
      }
    };
    sym(0, 0, 0, 0, 0, 0);
    if (!obj.source_name.empty()) sym(strtab.add(obj.source_name), STB_LOCAL << 4 | STT_FILE, 0, SHN_ABS, 0, 0);
    for (std::uint32_t i : symorder) {
      const Symbol& s = obj.symbols[i];
      std::uint8_t bind = s.binding == Binding::Local ? STB_LOCAL : s.binding == Binding::Weak ? STB_WEAK : STB_GLOBAL;
      std::uint8_t type = s.type == SymbolType::Func ? STT_FUNC : s.type == SymbolType::Object ? STT_OBJECT : STT_NOTYPE;
      std::uint16_t ndx = 0;
      if (s.section != kUndefined) {
        if (s.section < 0 || static_cast<std::size_t>(s.section) >= obj.sections.size() || shndx[s.section] == 0)
          fail("", "symbol '{}' refers to a missing section", s.name);
        ndx = static_cast<std::uint16_t>(shndx[s.section]);
      }
      std::uint8_t other = static_cast<std::uint8_t>((s.hidden ? STV_HIDDEN : 0) | s.elf_other_flags);
      sym(strtab.add(s.name), static_cast<std::uint8_t>(bind << 4 | type), other, ndx, s.value, s.size);
    }
    Shdr h;
    h.name = strtab.add(".symtab");
    h.type = SHT_SYMTAB;
    h.align = word;
    h.entsize = symsize;
    h.info = first_global;
    h.link = static_cast<std::uint32_t>(shdrs.size() + 1);  // .strtab follows
    pad_to(word);
    h.offset = pos;
    h.size = o.bytes().size();
    pos += h.size;
    out.chunks.push_back(Chunk::owned(std::move(o.bytes())));
    shdrs.push_back(h);
  }
  {
    Shdr h;
    h.name = strtab.add(".strtab");
    h.type = SHT_STRTAB;
    h.align = 1;
    h.offset = pos;
    h.size = strtab.data().size();
    pos += h.size;
    out.chunks.push_back(Chunk::owned(strtab.data()));
    shdrs.push_back(h);
  }
  const std::uint32_t strtab_index = static_cast<std::uint32_t>(shdrs.size() - 1);

  // Section header table.
  pad_to(word);
  const std::uint64_t shoff = pos;
  {
    Out o(t.big_endian);
    for (const Shdr& h : shdrs) {
      o.put<std::uint32_t>(h.name);
      o.put<std::uint32_t>(h.type);
      o.addr(is64, h.flags);
      o.addr(is64, 0);  // sh_addr
      o.addr(is64, h.offset);
      o.addr(is64, h.size);
      o.put<std::uint32_t>(h.link);
      o.put<std::uint32_t>(h.info);
      o.addr(is64, h.align);
      o.addr(is64, h.entsize);
    }
    pos += o.bytes().size();
    out.chunks.push_back(Chunk::owned(std::move(o.bytes())));
  }

  // ELF header.
  {
    Out o(t.big_endian);
    const std::uint8_t ident[16] = {0x7f, 'E', 'L', 'F', static_cast<std::uint8_t>(is64 ? 2 : 1),
                                    static_cast<std::uint8_t>(t.big_endian ? 2 : 1), 1, 0};
    for (std::uint8_t b : ident) o.put<std::uint8_t>(b);
    o.put<std::uint16_t>(1);  // ET_REL
    o.put<std::uint16_t>(t.machine);
    o.put<std::uint32_t>(1);  // EV_CURRENT
    o.addr(is64, 0);          // e_entry
    o.addr(is64, 0);          // e_phoff
    o.addr(is64, shoff);
    o.put<std::uint32_t>(t.flags);
    o.put<std::uint16_t>(static_cast<std::uint16_t>(ehsize));
    o.put<std::uint16_t>(0);  // e_phentsize
    o.put<std::uint16_t>(0);  // e_phnum
    o.put<std::uint16_t>(static_cast<std::uint16_t>(shentsize));
    o.put<std::uint16_t>(static_cast<std::uint16_t>(shdrs.size()));
    o.put<std::uint16_t>(static_cast<std::uint16_t>(strtab_index));
    out.chunks.front() = Chunk::owned(std::move(o.bytes()));
  }
  return out;
}

}  // namespace ot::object
