#include "object/elf_writer.h"

#include "object/elf_types.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <type_traits>

namespace ot::object {
namespace {

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

void section_type(SectionKind k, std::uint32_t& type, std::uint64_t& flags) {
  using namespace elf;
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

// One class and byte order: E is an elf::ElfTraits (elf_types.h), whose structs
// are exactly the on-disk records.
template <typename E>
ObjectBytes write_elf_as(const RelocatableObject& obj, const ElfTarget& t) {
  using Ehdr = elf::ElfEhdr<E>;
  using Shdr = elf::ElfShdr<E>;
  using Sym = elf::ElfSym<E>;
  using Rel = elf::ElfRel<E>;
  using Rela = elf::ElfRela<E>;
  const std::uint64_t word = E::word_size;
  auto put = [](std::vector<std::byte>& v, const auto& rec) {
    auto p = reinterpret_cast<const std::byte*>(&rec);
    v.insert(v.end(), p, p + sizeof rec);
  };

  // Section indices: 0 null, then the object's sections that exist in ELF.
  std::vector<std::uint32_t> shndx(obj.sections.size(), 0);
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < obj.sections.size(); ++i) {
    if (obj.sections[i].kind == SectionKind::Directive) continue;
    order.push_back(i);
    shndx[i] = static_cast<std::uint32_t>(order.size());
  }
  if (2 * order.size() + 3 >= elf::SHN_LORESERVE) fail("", "too many sections for one ELF object");
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
  std::uint64_t pos = sizeof(Ehdr);
  auto pad_to = [&](std::uint64_t align) {
    std::uint64_t next = align_to(pos, align);
    if (next != pos) out.chunks.push_back(Chunk::zeros(next - pos));
    pos = next;
  };
  auto header = [&](std::uint32_t name, std::uint32_t type, std::uint64_t flags, std::uint64_t offset,
                    std::uint64_t size, std::uint32_t link, std::uint32_t info, std::uint64_t align,
                    std::uint64_t entsize) {
    Shdr h{};
    h.sh_name = name;
    h.sh_type = type;
    h.sh_flags = static_cast<typename E::uint>(flags);
    h.sh_offset = static_cast<typename E::uint>(offset);
    h.sh_size = static_cast<typename E::uint>(size);
    h.sh_link = link;
    h.sh_info = info;
    h.sh_addralign = static_cast<typename E::uint>(align);
    h.sh_entsize = static_cast<typename E::uint>(entsize);
    shdrs.push_back(h);
  };
  out.chunks.push_back(Chunk{});  // the ELF header, filled last

  // Section contents; SHT_REL keeps addends in the section bytes.
  for (std::uint32_t i : order) {
    const Section& s = obj.sections[i];
    std::vector<Chunk> contents = s.data;
    if (!t.rela)
      for (const Reloc* r : rels[i])
        if (r->addend != 0) add_in_place(contents, r->offset, r->addend, t.big_endian, s.name);
    std::uint32_t type;
    std::uint64_t flags;
    section_type(s.kind, type, flags);
    const std::uint64_t align = s.align == 0 ? 1 : s.align;
    if (s.kind != SectionKind::Bss) pad_to(align);
    header(strtab.add(s.name), type, flags, pos, s.size(), 0, 0, align, 0);
    if (s.kind != SectionKind::Bss)
      for (Chunk& c : contents) {
        pos += c.size();
        out.chunks.push_back(std::move(c));
      }
  }

  // Relocation sections.
  const std::uint32_t symtab_index = static_cast<std::uint32_t>(
      shdrs.size() + std::count_if(order.begin(), order.end(), [&](std::uint32_t i) { return !rels[i].empty(); }));
  for (std::uint32_t i : order) {
    if (rels[i].empty()) continue;
    std::vector<std::byte> bytes;
    for (const Reloc* r : rels[i]) {
      if constexpr (!E::is_64)
        if (r->offset > 0xffffffffu) fail(obj.sections[i].name, "relocation offset 0x{:x} past 4 GiB", r->offset);
      const auto info = elf::r_info<E>(symidx[r->symbol], r->type);
      if (t.rela) {
        Rela rec{};
        rec.r_offset = static_cast<typename E::uint>(r->offset);
        rec.r_info = info;
        rec.r_addend = static_cast<std::make_signed_t<typename E::uint>>(r->addend);
        put(bytes, rec);
      } else {
        Rel rec{};
        rec.r_offset = static_cast<typename E::uint>(r->offset);
        rec.r_info = info;
        put(bytes, rec);
      }
    }
    pad_to(word);
    header(strtab.add((t.rela ? ".rela" : ".rel") + obj.sections[i].name), t.rela ? elf::SHT_RELA : elf::SHT_REL,
           elf::SHF_INFO_LINK, pos, bytes.size(), symtab_index, shndx[i], word, t.rela ? sizeof(Rela) : sizeof(Rel));
    pos += bytes.size();
    out.chunks.push_back(Chunk::owned(std::move(bytes)));
  }

  // Symbol table.
  {
    std::vector<std::byte> bytes;
    auto sym = [&](std::uint32_t name, std::uint8_t info, std::uint8_t other, std::uint16_t ndx, std::uint64_t value,
                   std::uint64_t size) {
      Sym s{};
      s.st_name = name;
      s.st_info = info;
      s.st_other = other;
      s.st_shndx = ndx;
      s.st_value = static_cast<typename E::uint>(value);
      s.st_size = static_cast<typename E::uint>(size);
      put(bytes, s);
    };
    sym(0, 0, 0, 0, 0, 0);
    if (!obj.source_name.empty())
      sym(strtab.add(obj.source_name), elf::st_info(elf::STB_LOCAL, elf::STT_FILE), 0, elf::SHN_ABS, 0, 0);
    for (std::uint32_t i : symorder) {
      const Symbol& s = obj.symbols[i];
      std::uint8_t bind = s.binding == Binding::Local  ? elf::STB_LOCAL
                          : s.binding == Binding::Weak ? elf::STB_WEAK
                                                       : elf::STB_GLOBAL;
      std::uint8_t type = s.type == SymbolType::Func     ? elf::STT_FUNC
                          : s.type == SymbolType::Object ? elf::STT_OBJECT
                                                         : elf::STT_NOTYPE;
      std::uint16_t ndx = elf::SHN_UNDEF;
      if (s.section != kUndefined) {
        if (s.section < 0 || static_cast<std::size_t>(s.section) >= obj.sections.size() || shndx[s.section] == 0)
          fail("", "symbol '{}' refers to a missing section", s.name);
        ndx = static_cast<std::uint16_t>(shndx[s.section]);
      }
      std::uint8_t other = static_cast<std::uint8_t>((s.hidden ? elf::STV_HIDDEN : elf::STV_DEFAULT) | s.elf_other_flags);
      sym(strtab.add(s.name), elf::st_info(bind, type), other, ndx, s.value, s.size);
    }
    pad_to(word);
    // sh_link: .strtab follows .symtab.
    header(strtab.add(".symtab"), elf::SHT_SYMTAB, 0, pos, bytes.size(), static_cast<std::uint32_t>(shdrs.size() + 1),
           first_global, word, sizeof(Sym));
    pos += bytes.size();
    out.chunks.push_back(Chunk::owned(std::move(bytes)));
  }
  const std::uint32_t strtab_name = strtab.add(".strtab");
  header(strtab_name, elf::SHT_STRTAB, 0, pos, strtab.data().size(), 0, 0, 1, 0);
  pos += strtab.data().size();
  out.chunks.push_back(Chunk::owned(strtab.data()));
  const std::uint32_t strtab_index = static_cast<std::uint32_t>(shdrs.size() - 1);

  // Section header table.
  pad_to(word);
  const std::uint64_t shoff = pos;
  {
    std::vector<std::byte> bytes;
    for (const Shdr& h : shdrs) put(bytes, h);
    pos += bytes.size();
    out.chunks.push_back(Chunk::owned(std::move(bytes)));
  }
  if constexpr (!E::is_64)
    if (pos > 0xffffffffu) fail("", "object of 0x{:x} bytes does not fit ELF32", pos);

  // ELF header.
  Ehdr eh{};
  std::memcpy(eh.e_ident, elf::kMagic, 4);
  eh.e_ident[elf::EI_CLASS] = E::ei_class;
  eh.e_ident[elf::EI_DATA] = E::ei_data;
  eh.e_ident[elf::EI_VERSION] = elf::EV_CURRENT;
  eh.e_type = elf::ET_REL;
  eh.e_machine = t.machine;
  eh.e_version = elf::EV_CURRENT;
  eh.e_shoff = static_cast<typename E::uint>(shoff);
  eh.e_flags = t.flags;
  eh.e_ehsize = static_cast<std::uint16_t>(sizeof(Ehdr));
  eh.e_shentsize = static_cast<std::uint16_t>(sizeof(Shdr));
  eh.e_shnum = static_cast<std::uint16_t>(shdrs.size());
  eh.e_shstrndx = static_cast<std::uint16_t>(strtab_index);
  std::vector<std::byte> head;
  put(head, eh);
  out.chunks.front() = Chunk::owned(std::move(head));
  return out;
}

}  // namespace

ObjectBytes write_elf(const RelocatableObject& obj, const ElfTarget& t) {
  if (t.is64) return t.big_endian ? write_elf_as<elf::Elf64BE>(obj, t) : write_elf_as<elf::Elf64LE>(obj, t);
  return t.big_endian ? write_elf_as<elf::Elf32BE>(obj, t) : write_elf_as<elf::Elf32LE>(obj, t);
}

}  // namespace ot::object
