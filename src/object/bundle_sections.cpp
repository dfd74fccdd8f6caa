#include "object/bundle_sections.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "object/layout.h"
#include "object/object_file.h"

namespace ot::object {
namespace {

template <typename T>
void append_struct(std::vector<std::byte>& v, const T& t) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::size_t at = v.size();
  v.resize(at + sizeof(T));
  std::memcpy(v.data() + at, &t, sizeof(T));
}

template <typename T>
std::vector<std::byte> struct_bytes(const T& t) {
  std::vector<std::byte> v;
  append_struct(v, t);
  return v;
}

void append_string(std::vector<std::byte>& v, std::string_view s) {
  const std::size_t at = v.size();
  v.resize(at + s.size() + 1);
  if (!s.empty()) std::memcpy(v.data() + at, s.data(), s.size());
}

std::uint64_t payload_size(const AddedSection& s) { return s.contents ? s.contents->size() : 1; }

void place_payload(Layout& l, const AddedSection& s) {
  if (s.contents)
    l.copy(*s.contents, 0, s.contents->size());
  else
    l.bytes({std::byte{0}});
}

// Symbol index lists of SHT_LLVM_ADDRSIG / .llvm_addrsig: ULEB128 values.
std::vector<std::uint64_t> decode_uleb_list(Bytes b, const std::string& file, std::uint64_t at) {
  std::vector<std::uint64_t> out;
  std::size_t i = 0;
  while (i < b.size()) {
    std::uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
      if (i >= b.size() || shift > 63) fail_at({file, at + i}, "malformed uleb128 symbol index in address-significance table");
      const auto c = static_cast<std::uint8_t>(b[i++]);
      v |= static_cast<std::uint64_t>(c & 0x7f) << shift;
      shift += 7;
      if ((c & 0x80) == 0) break;
    }
    out.push_back(v);
  }
  return out;
}

void append_uleb(std::vector<std::byte>& v, std::uint64_t x) {
  do {
    auto c = static_cast<std::uint8_t>(x & 0x7f);
    x >>= 7;
    if (x != 0) c |= 0x80;
    v.push_back(std::byte{c});
  } while (x != 0);
}

// Length of the NUL-terminated string at `off` plus its terminator, or nullopt
// when it is not inside `table`.
std::optional<std::uint64_t> string_end(std::string_view table, std::uint64_t off) {
  if (off >= table.size()) return std::nullopt;
  const auto nul = table.find('\0', off);
  if (nul == std::string_view::npos) return std::nullopt;
  return nul + 1;
}

constexpr std::uint64_t kNone = ~std::uint64_t{0};

// ===========================================================================
// ELF

bool is_relocation_type(std::uint32_t t) {
  return t == elf::SHT_REL || t == elf::SHT_RELA || t == elf::SHT_CREL || t == elf::SHT_ANDROID_REL ||
         t == elf::SHT_ANDROID_RELA;
}

// sh_info holds a section index for relocation sections and SHF_INFO_LINK.
template <typename E>
bool info_is_section(const elf::ElfShdr<E>& s) {
  return is_relocation_type(s.sh_type) || (s.sh_flags & elf::SHF_INFO_LINK) != 0;
}

template <typename E>
void check_elf32_limit(std::uint64_t size, const std::string& file) {
  if constexpr (!E::is_64)
    if (size > 0xffffffffu) fail_at({file}, "output of 0x{:x} bytes exceeds the 4 GiB limit of a 32-bit ELF file", size);
}

// e_shnum / e_shstrndx with the extended forms kept in section 0.
template <typename E>
void set_section_counts(elf::ElfEhdr<E>& eh, std::vector<elf::ElfShdr<E>>& shdrs, std::uint64_t strndx) {
  const std::uint64_t n = shdrs.size();
  if (n >= elf::SHN_LORESERVE) {
    eh.e_shnum = 0;
    shdrs[0].sh_size = n;
  } else {
    eh.e_shnum = static_cast<std::uint16_t>(n);
    shdrs[0].sh_size = 0;
  }
  if (strndx >= elf::SHN_LORESERVE) {
    eh.e_shstrndx = elf::SHN_XINDEX;
    shdrs[0].sh_link = static_cast<std::uint32_t>(strndx);
  } else {
    eh.e_shstrndx = static_cast<std::uint16_t>(strndx);
    shdrs[0].sh_link = 0;
  }
}

template <typename E>
std::vector<std::byte> shdr_table_bytes(const std::vector<elf::ElfShdr<E>>& shdrs) {
  std::vector<std::byte> v;
  v.reserve(shdrs.size() * sizeof(elf::ElfShdr<E>));
  for (const auto& s : shdrs) append_struct(v, s);
  return v;
}

// End of the program header table and of every segment's file image.
template <typename E>
std::uint64_t elf_segments_end(const ElfFile<E>& f) {
  using Ehdr = elf::ElfEhdr<E>;
  using Phdr = elf::ElfPhdr<E>;
  std::uint64_t phnum = f.ehdr.e_phnum;
  if (phnum == 0xffff && !f.shdrs.empty()) phnum = f.shdrs[0].sh_info;  // PN_XNUM
  if (phnum == 0) return 0;
  if (f.ehdr.e_phentsize != sizeof(Phdr))
    fail_at({f.file, offsetof(Ehdr, e_phentsize)}, "e_phentsize is 0x{:x}, expected 0x{:x}",
            static_cast<unsigned>(f.ehdr.e_phentsize), sizeof(Phdr));
  ByteReader r(f.data, f.file);
  const std::uint64_t phoff = f.ehdr.e_phoff;
  r.slice(phoff, phnum * sizeof(Phdr), "program header table");
  std::uint64_t end = phoff + phnum * sizeof(Phdr);
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const auto ph = r.read<Phdr>(phoff + i * sizeof(Phdr), "program header");
    if (range_exceeds(ph.p_offset, ph.p_filesz, f.data.size()))
      fail_at({f.file, phoff + i * sizeof(Phdr)}, "segment {} (0x{:x} bytes at 0x{:x}) extends past the end of the file",
              i, static_cast<std::uint64_t>(ph.p_filesz), static_cast<std::uint64_t>(ph.p_offset));
    end = std::max<std::uint64_t>(end, ph.p_offset + ph.p_filesz);
  }
  return end;
}

template <typename E>
void elf_add(const InputFile& host, const ElfFile<E>& f, std::span<const AddedSection> secs, OutputFile& out) {
  using Ehdr = elf::ElfEhdr<E>;
  using Shdr = elf::ElfShdr<E>;
  std::vector<Shdr> shdrs = f.shdrs;
  if (shdrs.empty()) shdrs.push_back(Shdr{});  // a file without sections gets the null section first

  // The section names: the existing table grows at its end (so offsets into it,
  // including symbol names when it doubles as .strtab, stay valid) and moves to
  // the end of the file. A table inside a loadable segment cannot move: then a
  // new .shstrtab is made instead.
  std::uint64_t strndx = f.shstrndx;
  const bool new_table = strndx == 0 || (shdrs[strndx].sh_flags & elf::SHF_ALLOC) != 0;
  std::vector<std::byte> names;
  if (new_table) {
    names.push_back(std::byte{0});
  } else {
    const Bytes old = f.contents(strndx);
    names.assign(old.begin(), old.end());
  }
  auto add_name = [&](std::string_view n) {
    const std::uint64_t off = names.size();
    append_string(names, n);
    if (off > 0xffffffffu) fail_at({f.file}, "section name string table exceeds 4 GiB");
    return static_cast<std::uint32_t>(off);
  };

  // Keep the host bytes; drop only a section header table that ends the file
  // (it is rewritten below) so the fat object does not carry it twice.
  std::uint64_t cut = host.size();
  const std::uint64_t shoff = f.ehdr.e_shoff;
  if (!f.shdrs.empty() && shoff + f.shdrs.size() * sizeof(Shdr) == host.size()) {
    std::uint64_t used = std::max<std::uint64_t>(sizeof(Ehdr), elf_segments_end(f));
    for (std::size_t i = 0; i < f.shdrs.size(); ++i)
      if (f.has_data(i)) used = std::max<std::uint64_t>(used, f.shdrs[i].sh_offset + f.shdrs[i].sh_size);
    if (used <= shoff) cut = shoff;
  }

  Layout l;
  const std::size_t header = l.reserve(sizeof(Ehdr));
  l.copy(host, sizeof(Ehdr), cut - sizeof(Ehdr));
  for (const AddedSection& s : secs) {
    Shdr h{};
    h.sh_name = add_name(s.name);
    h.sh_type = elf::SHT_PROGBITS;
    h.sh_flags = elf::SHF_EXCLUDE;
    h.sh_offset = l.size();
    h.sh_size = payload_size(s);
    h.sh_addralign = 1;
    place_payload(l, s);
    shdrs.push_back(h);
  }
  if (new_table) {
    Shdr h{};
    h.sh_name = add_name(".shstrtab");
    h.sh_type = elf::SHT_STRTAB;
    h.sh_addralign = 1;
    strndx = shdrs.size();
    shdrs.push_back(h);
  }
  shdrs[strndx].sh_size = names.size();
  shdrs[strndx].sh_offset = l.bytes(std::move(names));
  l.pad_to(E::word_size);

  Ehdr eh = f.ehdr;
  eh.e_shentsize = sizeof(Shdr);
  set_section_counts(eh, shdrs, strndx);
  eh.e_shoff = l.bytes(shdr_table_bytes(shdrs));
  check_elf32_limit<E>(l.size(), f.file);
  l.fill(header, struct_bytes(eh));
  l.write(out);
}

// The symbols of one SHT_SYMTAB section, with their section indices resolved
// through its SHT_SYMTAB_SHNDX table.
template <typename E>
struct SymbolTable {
  std::size_t index = 0;                    // section index of the table
  std::vector<elf::ElfSym<E>> syms;
  std::optional<std::size_t> shndx_index;   // its SHT_SYMTAB_SHNDX section
  std::vector<std::uint32_t> xindex;        // entries of that table (empty without one)
};

template <typename E>
std::vector<typename E::U32> read_words(const ElfFile<E>& f, std::size_t i) {
  const Bytes b = f.contents(i);
  if (b.size() % 4 != 0)
    fail_at({f.file, f.header_offset(i)}, "section {} ({}) size 0x{:x} is not a multiple of 4", i, f.names[i], b.size());
  std::vector<typename E::U32> w(b.size() / 4);
  if (!w.empty()) std::memcpy(w.data(), b.data(), b.size());
  return w;
}

template <typename E, typename T>
std::vector<T> read_table(const ElfFile<E>& f, std::size_t i) {
  const auto& s = f.shdrs[i];
  if (s.sh_entsize != sizeof(T))
    fail_at({f.file, f.header_offset(i)}, "section {} ({}) has sh_entsize 0x{:x}, expected 0x{:x}", i, f.names[i],
            static_cast<std::uint64_t>(s.sh_entsize), sizeof(T));
  const Bytes b = f.contents(i);
  if (b.size() % sizeof(T) != 0)
    fail_at({f.file, f.header_offset(i)}, "section {} ({}) size 0x{:x} is not a multiple of its entry size 0x{:x}", i,
            f.names[i], b.size(), sizeof(T));
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

template <typename E, typename T>
std::vector<std::byte> table_bytes(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Removes the sections `pred` names and gives those in `edit.replace` new
// contents (edit may be null). `f` is the object at `base` bytes into `in`.
template <typename E>
Layout elf_remove(const InputFile& in, std::uint64_t base, const ElfFile<E>& f,
                  const std::function<bool(std::string_view)>& pred, ObjectEdit* edit) {
  using Ehdr = elf::ElfEhdr<E>;
  using Shdr = elf::ElfShdr<E>;
  using Sym = elf::ElfSym<E>;
  const std::string& file = f.file;
  const std::size_t n = f.shdrs.size();
  const auto& sh = f.shdrs;
  auto sec = [&](std::size_t i) { return fmt::format("section {} ({})", i, f.names[i]); };

  std::vector<bool> removed(n, false);
  bool any = false;
  for (std::size_t i = 1; i < n; ++i) any |= removed[i] = pred(f.names[i]);
  // Sections with new contents, by index.
  std::vector<NewContents*> replaced(n, nullptr);
  if (edit != nullptr)
    for (auto& [i, c] : edit->replace) {
      if (i == 0 || i >= n || removed[i] || !f.has_data(i))
        throw std::logic_error("elf edit: section to replace is not a kept section with data");
      replaced[i] = &c;
    }
  const bool any_replaced = edit != nullptr && !edit->replace.empty();
  if (!any && !any_replaced) {  // nothing to do: the object as it is
    Layout l;
    l.copy(in, base, f.data.size());
    return l;
  }
  // Relocations for a removed section go with it.
  for (std::size_t i = 1; i < n; ++i)
    if (!removed[i] && is_relocation_type(sh[i].sh_type) && sh[i].sh_info != 0 && sh[i].sh_info < n &&
        removed[sh[i].sh_info])
      removed[i] = true;
  if (removed[f.shstrndx])
    fail_at({file, f.header_offset(f.shstrndx)}, "cannot remove {}: it holds the section names", sec(f.shstrndx));

  // Groups: drop removed members; a group left empty goes too. A removed group
  // whose members stay would leave them with a dangling SHF_GROUP.
  std::vector<std::optional<std::vector<std::uint32_t>>> group_members(n);
  for (std::size_t i = 1; i < n; ++i) {
    if (sh[i].sh_type != elf::SHT_GROUP) continue;
    const auto words = read_words(f, i);
    if (words.empty()) fail_at({file, f.header_offset(i)}, "{} has no flag word", sec(i));
    std::vector<std::uint32_t> kept{static_cast<std::uint32_t>(words[0])};
    for (std::size_t w = 1; w < words.size(); ++w) {
      const std::uint32_t m = words[w];
      if (m == 0 || m >= n) fail_at({file, sh[i].sh_offset + 4 * w}, "{} lists invalid section index {}", sec(i), m);
      if (removed[i] && !removed[m])
        fail_at({file, f.header_offset(i)}, "cannot remove {} while keeping its member {}", sec(i), sec(m));
      if (!removed[m]) kept.push_back(m);
    }
    if (!removed[i] && kept.size() == 1) removed[i] = true;
    if (!removed[i]) group_members[i] = std::move(kept);
  }

  std::vector<std::uint64_t> newidx(n, kNone);
  std::uint64_t kept_count = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!removed[i]) newidx[i] = kept_count++;

  // Nothing kept may still point at a removed section.
  for (std::size_t i = 1; i < n; ++i) {
    if (removed[i]) continue;
    const std::uint32_t link = sh[i].sh_link;
    if (link != 0 && link < n && removed[link])
      fail_at({file, f.header_offset(i)}, "cannot remove {}: {} links to it", sec(link), sec(i));
    const std::uint32_t info = sh[i].sh_info;
    if (info_is_section(sh[i]) && info != 0 && info < n && removed[info])
      fail_at({file, f.header_offset(i)}, "cannot remove {}: {} refers to it", sec(info), sec(i));
    // The contents of a replaced section move: nothing may relocate them.
    if (info_is_section(sh[i]) && info != 0 && info < n && replaced[info] != nullptr)
      fail_at({file, f.header_offset(i)}, "cannot rewrite {}: {} relocates its contents", sec(info), sec(i));
  }

  // New contents for the sections that change; everything else is copied.
  std::vector<std::optional<std::vector<std::byte>>> modified(n);
  std::vector<Shdr> out_sh(sh.begin(), sh.end());

  for (std::size_t i = 1; i < n; ++i) {
    if (!group_members[i]) continue;
    std::vector<typename E::U32> words;
    for (std::size_t w = 0; w < group_members[i]->size(); ++w)
      words.push_back(w == 0 ? (*group_members[i])[0] : static_cast<std::uint32_t>(newidx[(*group_members[i])[w]]));
    modified[i] = table_bytes<E>(words);
  }

  // Dynamic symbol tables live in segments: they are never rewritten, so no
  // section they refer to may move.
  for (std::size_t i = 1; i < n; ++i) {
    if (removed[i] || sh[i].sh_type != elf::SHT_DYNSYM) continue;
    const auto syms = read_table<E, Sym>(f, i);
    for (std::size_t j = 1; j < syms.size(); ++j) {
      const std::uint16_t x = syms[j].st_shndx;
      if (x != elf::SHN_UNDEF && x < elf::SHN_LORESERVE && x < n && newidx[x] != x)
        fail_at({file, sh[i].sh_offset + j * sizeof(Sym)},
                "cannot renumber sections referenced by dynamic symbol {} of {}", j, sec(i));
    }
  }

  // Static symbol tables: renumber st_shndx, drop symbols defined in removed
  // sections (their section symbols, typically) and then every symbol index.
  for (std::size_t t = 1; t < n; ++t) {
    if (removed[t] || sh[t].sh_type != elf::SHT_SYMTAB) continue;
    auto syms = read_table<E, Sym>(f, t);
    std::optional<std::size_t> shndx_sec;
    std::vector<typename E::U32> xindex;
    for (std::size_t i = 1; i < n; ++i)
      if (!removed[i] && sh[i].sh_type == elf::SHT_SYMTAB_SHNDX && sh[i].sh_link == t) {
        shndx_sec = i;
        xindex = read_words(f, i);
        if (xindex.size() != syms.size())
          fail_at({file, f.header_offset(i)}, "{} has 0x{:x} entries for 0x{:x} symbols", sec(i), xindex.size(),
                  syms.size());
      }
    std::vector<std::uint64_t> symmap(syms.size(), kNone);
    std::vector<std::uint64_t> sym_section(syms.size(), kNone);  // the old index of the section defining it
    std::vector<Sym> new_syms;
    const std::string_view names = sh[t].sh_link < n ? as_chars(f.contents(sh[t].sh_link)) : std::string_view();
    auto sym_name = [&](const Sym& s) -> std::string_view {
      const auto e = string_end(names, s.st_name);
      return e ? names.substr(s.st_name, *e - 1 - s.st_name) : std::string_view("?");
    };
    std::vector<typename E::U32> new_xindex;
    const std::uint32_t old_locals = sh[t].sh_info;
    std::uint32_t new_locals = 0;
    for (std::size_t j = 0; j < syms.size(); ++j) {
      Sym s = syms[j];
      const std::uint16_t x = s.st_shndx;
      std::uint64_t target = kNone;
      if (x == elf::SHN_XINDEX) {
        if (!shndx_sec)
          fail_at({file, sh[t].sh_offset + j * sizeof(Sym)}, "symbol {} of {} uses SHN_XINDEX without a SHT_SYMTAB_SHNDX section", j, sec(t));
        target = xindex[j];
      } else if (x != elf::SHN_UNDEF && x < elf::SHN_LORESERVE) {
        target = x;
      }
      std::uint32_t xi = shndx_sec ? static_cast<std::uint32_t>(xindex[j]) : 0;
      if (target != kNone && j != 0) {
        if (target >= n)
          fail_at({file, sh[t].sh_offset + j * sizeof(Sym)}, "symbol {} of {} refers to section index 0x{:x} (0x{:x} sections)",
                  j, sec(t), target, n);
        if (removed[target]) {
          if (edit != nullptr && edit->keep_defined_symbols && elf::st_type(s.st_info) != elf::STT_SECTION)
            fail_at({file, sh[t].sh_offset + j * sizeof(Sym)}, "cannot remove {}: symbol {} ('{}') is defined in it",
                    sec(target), j, sym_name(s));
          continue;
        }
        sym_section[j] = target;
        if (NewContents* c = replaced[target]; c != nullptr && elf::st_type(s.st_info) != elf::STT_SECTION) {
          const auto to = c->move(s.st_value);
          if (!to)
            fail_at({file, sh[t].sh_offset + j * sizeof(Sym)}, "symbol {} ('{}') points into {} at 0x{:x}, not at {}",
                    j, sym_name(s), sec(target), static_cast<std::uint64_t>(s.st_value), c->places);
          s.st_value = static_cast<typename E::uint>(*to);
        }
        const std::uint64_t ni = newidx[target];
        if (ni >= elf::SHN_LORESERVE) {
          s.st_shndx = elf::SHN_XINDEX;
          xi = static_cast<std::uint32_t>(ni);
        } else {
          s.st_shndx = static_cast<std::uint16_t>(ni);
          xi = 0;
        }
      }
      symmap[j] = new_syms.size();
      if (j < old_locals) ++new_locals;
      new_syms.push_back(s);
      new_xindex.push_back(xi);
    }
    const bool dropped = new_syms.size() != syms.size();
    out_sh[t].sh_info = dropped ? new_locals : old_locals;
    auto symtab_bytes = table_bytes<E>(new_syms);
    if (!std::ranges::equal(symtab_bytes, f.contents(t))) modified[t] = std::move(symtab_bytes);
    if (shndx_sec) {
      auto b = table_bytes<E>(new_xindex);
      if (!std::ranges::equal(b, f.contents(*shndx_sec))) modified[*shndx_sec] = std::move(b);
    }
    if (!dropped && !any_replaced) continue;

    // Symbol indices changed, or symbols and relocations point into sections
    // whose contents move: rewrite everything that holds them.
    auto map_sym = [&](std::uint64_t j, std::size_t holder, std::uint64_t at) {
      if (j >= symmap.size())
        fail_at({file, at}, "{} refers to symbol index 0x{:x} of {} (0x{:x} symbols)", sec(holder), j, sec(t), symmap.size());
      if (symmap[j] == kNone)
        fail_at({file, at}, "cannot remove the section defining symbol {} of {}: {} refers to it", j, sec(t), sec(holder));
      return symmap[j];
    };
    const std::uint16_t machine = f.ehdr.e_machine;
    for (std::size_t i = 1; i < n; ++i) {
      if (removed[i] || sh[i].sh_link != t || i == shndx_sec) continue;
      const std::uint32_t type = sh[i].sh_type;
      if (type == elf::SHT_REL || type == elf::SHT_RELA) {
        auto rewrite = [&]<typename R>(R*) {
          auto rels = read_table<E, R>(f, i);
          for (std::size_t k = 0; k < rels.size(); ++k) {
            const std::uint64_t at = sh[i].sh_offset + k * sizeof(R);
            const typename E::uint info = rels[k].r_info;
            const std::uint32_t sym = elf::r_sym<E>(info, machine);
            const auto ns = map_sym(sym, i, at);
            rels[k].r_info = elf::with_r_sym<E>(info, static_cast<std::uint32_t>(ns), machine);
            const std::uint64_t target = sym_section[sym];
            NewContents* c = target == kNone ? nullptr : replaced[target];
            if (c == nullptr) continue;
            // It points at the symbol's value plus the addend: that place moves.
            if constexpr (std::is_same_v<R, elf::ElfRel<E>>) {
              fail_at({file, at}, "relocation {} of {} points into {}, whose contents move, with its addend in the "
                      "relocated section (SHT_REL)", k, sec(i), sec(target));
            } else {
              const auto old_value = static_cast<typename E::uint>(syms[sym].st_value);
              const auto place = static_cast<typename E::uint>(old_value + static_cast<typename E::uint>(
                                                                   static_cast<std::int64_t>(rels[k].r_addend)));
              const auto to = c->move(place);
              if (!to)
                fail_at({file, at}, "relocation {} of {} points into {} at 0x{:x}, not at {}", k, sec(i), sec(target),
                        static_cast<std::uint64_t>(place), c->places);
              const auto new_value = static_cast<typename E::uint>(new_syms[symmap[sym]].st_value);
              rels[k].r_addend = static_cast<std::make_signed_t<typename E::uint>>(
                  static_cast<typename E::uint>(*to) - new_value);
            }
          }
          auto b = table_bytes<E>(rels);
          if (!std::ranges::equal(b, f.contents(i))) modified[i] = std::move(b);
        };
        if (type == elf::SHT_REL)
          rewrite(static_cast<elf::ElfRel<E>*>(nullptr));
        else
          rewrite(static_cast<elf::ElfRela<E>*>(nullptr));
      } else if (!dropped) {
        // Indices unchanged: only relocations point at places.
        if (is_relocation_type(type))
          fail_at({file, f.header_offset(i)}, "cannot check the relocations in {} (type 0x{:x})", sec(i), type);
      } else if (type == elf::SHT_GROUP) {
        out_sh[i].sh_info = static_cast<std::uint32_t>(map_sym(sh[i].sh_info, i, f.header_offset(i)));
      } else if (type == elf::SHT_LLVM_ADDRSIG) {
        std::vector<std::byte> b;
        for (std::uint64_t j : decode_uleb_list(f.contents(i), file, sh[i].sh_offset))
          if (j < symmap.size() && symmap[j] != kNone) append_uleb(b, symmap[j]);
        modified[i] = std::move(b);
      } else {
        fail_at({file, f.header_offset(i)}, "cannot renumber the symbol indices in {} (type 0x{:x})", sec(i), type);
      }
    }
  }

  // The section name table: cut off names no longer referenced at its end (the
  // names our own bundling appended, so a bundled-then-stripped object gets its
  // table back byte for byte). When dead names remain inside a table that only
  // holds section names, it is rebuilt from the kept names instead. A table
  // that is loaded, or read by anything but symbol tables, is left alone.
  {
    const std::size_t st = f.shstrndx;
    bool shared_unknown = (sh[st].sh_flags & elf::SHF_ALLOC) != 0;
    std::vector<std::size_t> symtabs;
    for (std::size_t i = 1; i < n; ++i)
      if (!removed[i] && sh[i].sh_link == st) {
        if (sh[i].sh_type == elf::SHT_SYMTAB)
          symtabs.push_back(i);
        else
          shared_unknown = true;
      }
    if (!shared_unknown && st != 0) {
      const std::string_view table = as_chars(f.contents(st));
      std::vector<bool> live(table.size(), false);
      std::uint64_t end = 1;
      bool ok = true;
      auto use = [&](std::uint64_t off) {
        if (off == 0) return;
        auto e = string_end(table, off);
        if (!e) {
          ok = false;
          return;
        }
        end = std::max(end, *e);
        std::fill(live.begin() + static_cast<std::ptrdiff_t>(off), live.begin() + static_cast<std::ptrdiff_t>(*e), true);
      };
      for (std::size_t i = 0; i < n; ++i)
        if (!removed[i]) use(sh[i].sh_name);
      for (std::size_t t : symtabs) {
        const Bytes b = modified[t] ? Bytes(*modified[t]) : f.contents(t);
        for (std::size_t j = 0; j + sizeof(Sym) <= b.size(); j += sizeof(Sym)) {
          Sym s;
          std::memcpy(&s, b.data() + j, sizeof s);
          use(s.st_name);
        }
      }
      const bool dead_inside = ok && std::find(live.begin() + 1, live.begin() + static_cast<std::ptrdiff_t>(end), false) !=
                                         live.begin() + static_cast<std::ptrdiff_t>(end);
      if (dead_inside && symtabs.empty()) {
        std::vector<std::byte> b{std::byte{0}};
        std::map<std::string_view, std::uint32_t> placed;
        for (std::size_t i = 1; i < n; ++i) {
          if (removed[i] || sh[i].sh_name == 0) continue;
          const std::uint32_t off = sh[i].sh_name;
          const std::string_view name = table.substr(off, *string_end(table, off) - 1 - off);
          auto [it, fresh] = placed.try_emplace(name, static_cast<std::uint32_t>(b.size()));
          if (fresh) append_string(b, name);
          out_sh[i].sh_name = it->second;
        }
        modified[st] = std::move(b);
      } else if (ok && end < table.size()) {
        const Bytes b = f.contents(st).first(end);
        modified[st] = std::vector<std::byte>(b.begin(), b.end());
      }
    }
  }

  // Layout. Whatever program headers cover stays where it is; the rest is
  // packed after it in file order, each section at its own alignment.
  std::uint64_t fixed_end = std::max<std::uint64_t>(sizeof(Ehdr), elf_segments_end(f));
  std::vector<std::size_t> order;
  for (std::size_t i = 1; i < n; ++i)
    if (!removed[i]) order.push_back(i);
  // File order; at equal offsets empty sections first, as linkers and
  // assemblers lay them out (so an unchanged prefix keeps its offsets).
  std::ranges::stable_sort(order, {}, [&](std::size_t i) {
    return std::pair<std::uint64_t, bool>(sh[i].sh_offset, f.has_data(i) && sh[i].sh_size != 0);
  });
  std::vector<bool> fixed(n, false);
  for (std::size_t i : order) {
    if (!f.has_data(i) || sh[i].sh_size == 0) continue;
    if (sh[i].sh_offset < sizeof(Ehdr))
      fail_at({file, f.header_offset(i)}, "{} overlaps the ELF header", sec(i));
    if (sh[i].sh_offset >= fixed_end) continue;
    if ((modified[i] || replaced[i]) && (sh[i].sh_flags & elf::SHF_ALLOC) != 0)
      fail_at({file, f.header_offset(i)}, "cannot rewrite {}: it is part of a loadable segment", sec(i));
    if (!modified[i] && !replaced[i]) {
      fixed[i] = true;
      fixed_end = std::max<std::uint64_t>(fixed_end, sh[i].sh_offset + sh[i].sh_size);
    }
  }

  Layout l;
  const std::size_t header = l.reserve(sizeof(Ehdr));
  l.copy(in, base + sizeof(Ehdr), fixed_end - sizeof(Ehdr));
  for (std::size_t i : order) {
    if (fixed[i]) continue;
    // Each section goes to the next offset with the same remainder modulo its
    // alignment as before: as aligned as it was, and where an assembler that
    // packed the file in this order put it (LLVM's assembler aligns SHT_NOBITS
    // offsets but leaves SHF_COMPRESSED data unaligned), so that an unchanged
    // prefix of the file keeps its offsets.
    const std::uint64_t a = sh[i].sh_addralign;
    const std::uint64_t align = std::has_single_bit(a) && a <= 0x10000 ? a : 1;
    l.pad_to_remainder(align, sh[i].sh_offset % align);
    if (!f.has_data(i)) {
      out_sh[i].sh_offset = l.size();
      continue;
    }
    if (replaced[i]) {
      out_sh[i].sh_size = replaced[i]->bytes.size();
      out_sh[i].sh_offset = l.append(std::move(replaced[i]->bytes));
    } else if (modified[i]) {
      out_sh[i].sh_size = modified[i]->size();
      out_sh[i].sh_offset = l.bytes(std::move(*modified[i]));
    } else {
      out_sh[i].sh_offset = l.copy(in, base + sh[i].sh_offset, sh[i].sh_size);
    }
  }
  l.pad_to(E::word_size);

  std::vector<Shdr> table;
  table.reserve(kept_count);
  for (std::size_t i = 0; i < n; ++i) {
    if (removed[i]) continue;
    Shdr s = out_sh[i];
    const std::uint32_t link = s.sh_link;
    if (i != 0 && link != 0 && link < n) s.sh_link = static_cast<std::uint32_t>(newidx[link]);
    const std::uint32_t info = s.sh_info;
    if (i != 0 && info_is_section(sh[i]) && info != 0 && info < n) s.sh_info = static_cast<std::uint32_t>(newidx[info]);
    table.push_back(s);
  }
  Ehdr eh = f.ehdr;
  set_section_counts(eh, table, newidx[f.shstrndx]);
  eh.e_shoff = l.bytes(shdr_table_bytes(table));
  check_elf32_limit<E>(l.size(), file);
  l.fill(header, struct_bytes(eh));
  return l;
}

// ===========================================================================
// COFF

// Header bytes (file or bigobj header, optional header) with new counts.
std::vector<std::byte> coff_header(const CoffFile& f, std::uint64_t sections, std::uint64_t symptr,
                                   std::uint64_t symbols) {
  std::vector<std::byte> v(f.data.begin(), f.data.begin() + static_cast<std::ptrdiff_t>(f.section_table_offset));
  if (f.bigobj) {
    coff::BigObjHeader h;
    std::memcpy(&h, v.data(), sizeof h);
    h.NumberOfSections = static_cast<std::uint32_t>(sections);
    h.PointerToSymbolTable = static_cast<std::uint32_t>(symptr);
    h.NumberOfSymbols = static_cast<std::uint32_t>(symbols);
    std::memcpy(v.data(), &h, sizeof h);
  } else {
    coff::FileHeader h;
    std::memcpy(&h, v.data(), sizeof h);
    h.NumberOfSections = static_cast<std::uint16_t>(sections);
    h.PointerToSymbolTable = static_cast<std::uint32_t>(symptr);
    h.NumberOfSymbols = static_cast<std::uint32_t>(symbols);
    std::memcpy(v.data(), &h, sizeof h);
  }
  return v;
}

void check_coff_limits(const CoffFile& f, std::uint64_t sections, std::uint64_t size) {
  // link.exe's limit for regular objects; bigger ones need /bigobj.
  if (!f.bigobj && sections > 65279)
    fail_at({f.file}, "0x{:x} sections do not fit in a regular COFF object (at most 0xfeff)", sections);
  if (size > 0xffffffffu) fail_at({f.file}, "output of 0x{:x} bytes exceeds the 4 GiB limit of a COFF object", size);
}

void coff_add(const InputFile& host, const CoffFile& f, std::span<const AddedSection> secs, OutputFile& out) {
  const std::uint64_t table_end = f.section_table_end();
  const std::uint64_t delta = secs.size() * sizeof(coff::SectionHeader);
  const std::uint64_t nsec = f.sections.size() + secs.size();

  // Every pointer must be behind the section table, which grows by `delta`.
  auto check_ptr = [&](std::uint64_t p, std::size_t i, const char* what) {
    if (p != 0 && p < table_end)
      fail_at({f.file, f.header_offset(i)}, "coff section {} {} at 0x{:x} lie inside the headers", i + 1, what, p);
  };
  for (std::size_t i = 0; i < f.sections.size(); ++i) {
    const auto& s = f.sections[i];
    check_ptr(s.PointerToRawData, i, "data");
    if (s.NumberOfRelocations != 0) check_ptr(s.PointerToRelocations, i, "relocations");
    if (s.NumberOfLinenumbers != 0) check_ptr(s.PointerToLinenumbers, i, "line numbers");
  }
  if (f.symbol_table_offset != 0 && f.symbol_table_offset < table_end)
    fail_at({f.file}, "coff symbol table at 0x{:x} lies inside the headers", f.symbol_table_offset);

  // Long names go to the string table. When it ends the file (the usual case)
  // it simply grows; otherwise the symbol and string tables are copied to the end.
  std::vector<std::byte> new_strings;
  std::vector<std::string> fields;
  std::uint64_t strtab_size = f.string_table_size == 0 ? 4 : f.string_table_size;
  for (const AddedSection& s : secs) {
    if (s.name.size() <= coff::kNameSize) {
      fields.push_back(s.name);
      continue;
    }
    const std::uint64_t off = strtab_size + new_strings.size();
    if (off > 0xffffffffu) fail_at({f.file}, "coff string table exceeds 4 GiB");
    fields.push_back(coff_long_name_field(static_cast<std::uint32_t>(off)));
    append_string(new_strings, s.name);
  }
  const bool grow_in_place = f.symbol_table_offset != 0 && f.string_table_size != 0 &&
                             f.string_table_offset + f.string_table_size == f.data.size();

  Layout l;
  const std::size_t header = l.reserve(table_end + delta);
  std::uint64_t symptr = f.symbol_table_offset == 0 ? 0 : f.symbol_table_offset + delta;
  const std::uint64_t new_strtab_size = strtab_size + new_strings.size();
  std::vector<std::byte> size_field(4);
  store_le<std::uint32_t>(size_field.data(), static_cast<std::uint32_t>(std::min<std::uint64_t>(new_strtab_size, 0xffffffffu)));
  if (grow_in_place) {
    l.copy(host, table_end, f.string_table_offset - table_end);
    l.bytes(size_field);
    l.copy(host, f.string_table_offset + 4, f.string_table_size - 4);
    l.bytes(std::move(new_strings));
  } else {
    l.copy(host, table_end, f.data.size() - table_end);
    if (f.symbol_table_offset != 0 || !new_strings.empty()) {
      symptr = l.copy(host, f.symbol_table_offset, std::uint64_t{f.symbol_count} * f.symbol_size);
      l.bytes(size_field);
      if (f.string_table_size > 4) l.copy(host, f.string_table_offset + 4, f.string_table_size - 4);
      l.bytes(std::move(new_strings));
    }
  }

  std::vector<std::byte> hdr = coff_header(f, nsec, symptr, f.symbol_count);
  for (std::size_t i = 0; i < f.sections.size(); ++i) {
    coff::SectionHeader s = f.sections[i];
    if (s.PointerToRawData != 0) s.PointerToRawData = static_cast<std::uint32_t>(s.PointerToRawData + delta);
    if (s.PointerToRelocations != 0) s.PointerToRelocations = static_cast<std::uint32_t>(s.PointerToRelocations + delta);
    if (s.PointerToLinenumbers != 0) s.PointerToLinenumbers = static_cast<std::uint32_t>(s.PointerToLinenumbers + delta);
    append_struct(hdr, s);
  }
  for (std::size_t k = 0; k < secs.size(); ++k) {
    coff::SectionHeader s{};
    std::memcpy(s.Name, fields[k].data(), fields[k].size());
    const std::uint64_t size = payload_size(secs[k]);
    if (size > 0xffffffffu) fail_at({f.file}, "section {} of 0x{:x} bytes exceeds the 4 GiB limit of COFF", secs[k].name, size);
    s.SizeOfRawData = static_cast<std::uint32_t>(size);
    s.PointerToRawData = static_cast<std::uint32_t>(size == 0 ? 0 : l.size());
    // What llvm-objcopy --set-section-flags=readonly,exclude gives: 0x40000800.
    s.Characteristics = coff::IMAGE_SCN_LNK_REMOVE | coff::IMAGE_SCN_MEM_READ;
    check_coff_limits(f, nsec, l.size() + size);
    place_payload(l, secs[k]);
    append_struct(hdr, s);
  }
  check_coff_limits(f, nsec, l.size());
  l.fill(header, std::move(hdr));
  l.write(out);
}

// One symbol record of either width, decoded.
struct CoffSym {
  std::int32_t section;
  std::uint8_t storage_class;
  std::uint8_t aux;
  std::uint16_t type;
  std::uint32_t value;
};

CoffSym read_coff_sym(const CoffFile& f, Bytes rec) {
  if (f.bigobj) {
    coff::Symbol32 s;
    std::memcpy(&s, rec.data(), sizeof s);
    return {s.SectionNumber, s.StorageClass, s.NumberOfAuxSymbols, s.Type, s.Value};
  }
  coff::Symbol16 s;
  std::memcpy(&s, rec.data(), sizeof s);
  return {s.SectionNumber, s.StorageClass, s.NumberOfAuxSymbols, s.Type, s.Value};
}

void set_coff_sym_section(const CoffFile& f, std::byte* rec, std::int32_t section) {
  if (f.bigobj)
    store_le<std::int32_t>(rec + offsetof(coff::Symbol32, SectionNumber), section);
  else
    store_le<std::int16_t>(rec + offsetof(coff::Symbol16, SectionNumber), static_cast<std::int16_t>(section));
}

bool is_section_definition(const CoffSym& s) {
  return s.storage_class == coff::IMAGE_SYM_CLASS_STATIC && s.aux > 0 && s.section > 0 && s.value == 0;
}

std::uint32_t aux_section_number(const CoffFile& f, const std::byte* aux) {
  std::uint32_t v = load_le<std::uint16_t>(aux + offsetof(coff::AuxSectionDefinition, Number));
  if (f.bigobj) v |= std::uint32_t{load_le<std::uint16_t>(aux + offsetof(coff::AuxSectionDefinition, HighNumber))} << 16;
  return v;
}

// The width of the addend a COFF relocation of `type` keeps in the relocated
// section when it points at its symbol plus that addend (0: another kind).
unsigned coff_addend_width(std::uint16_t machine, std::uint16_t type) {
  switch (machine) {
    case coff::IMAGE_FILE_MACHINE_AMD64:
      if (type == coff::IMAGE_REL_AMD64_ADDR64) return 8;
      if (type == 2 /* ADDR32 */ || type == coff::IMAGE_REL_AMD64_ADDR32NB || type == coff::IMAGE_REL_AMD64_REL32) return 4;
      return 0;
    case coff::IMAGE_FILE_MACHINE_I386:
      return type == coff::IMAGE_REL_I386_DIR32 || type == coff::IMAGE_REL_I386_DIR32NB ||
                     type == coff::IMAGE_REL_I386_REL32
                 ? 4
                 : 0;
    case coff::IMAGE_FILE_MACHINE_ARM64:
      if (type == coff::IMAGE_REL_ARM64_ADDR64) return 8;
      return type == 1 /* ADDR32 */ || type == coff::IMAGE_REL_ARM64_ADDR32NB ? 4 : 0;
    default:
      return 0;
  }
}

// Removes the sections `pred` names and gives those in `edit.replace` (by
// index into f.sections) new contents; `f` is the object `base` bytes into `in`.
Layout coff_remove(const InputFile& in, std::uint64_t base, const CoffFile& f,
                   const std::function<bool(std::string_view)>& pred, ObjectEdit* edit) {
  const std::string& file = f.file;
  const std::size_t n = f.sections.size();
  auto sec = [&](std::size_t i) { return fmt::format("coff section {} ({})", i + 1, f.names[i]); };
  std::vector<bool> removed(n, false);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) any |= removed[i] = pred(f.names[i]);
  std::vector<NewContents*> replaced(n, nullptr);
  if (edit != nullptr)
    for (auto& [i, c] : edit->replace) {
      if (i >= n || removed[i] || !f.has_data(i))
        throw std::logic_error("coff edit: section to replace is not a kept section with data");
      if (f.relocation_count(i) != 0)
        fail_at({file, f.header_offset(i)}, "cannot rewrite {}: it has relocations of its own", sec(i));
      replaced[i] = &c;
    }
  const bool any_replaced = edit != nullptr && !edit->replace.empty();
  if (!any && !any_replaced) {
    Layout l;
    l.copy(in, base, f.data.size());
    return l;
  }

  // Symbol records (aux records travel with their symbol).
  const std::uint64_t nsym = f.symbol_count;
  std::vector<std::byte> syms;
  if (nsym != 0) {
    const Bytes b = f.data.subspan(f.symbol_table_offset, nsym * f.symbol_size);
    syms.assign(b.begin(), b.end());
  }
  auto rec = [&](std::uint64_t j) { return syms.data() + j * f.symbol_size; };
  auto sym_at = [&](std::uint64_t j) { return f.symbol_table_offset + j * f.symbol_size; };
  std::vector<std::uint64_t> heads;  // indices of primary records
  for (std::uint64_t j = 0; j < nsym;) {
    const CoffSym s = read_coff_sym(f, Bytes(rec(j), f.symbol_size));
    if (s.aux >= nsym - j)
      fail_at({file, sym_at(j)}, "coff symbol {} has 0x{:x} auxiliary records past the end of the symbol table", j, s.aux);
    if (s.section > 0 && static_cast<std::uint64_t>(s.section) > n)
      fail_at({file, sym_at(j)}, "coff symbol {} refers to section {} (0x{:x} sections)", j, s.section, n);
    heads.push_back(j);
    j += 1 + s.aux;
  }

  // COMDAT-associated sections go with the section they are associated to.
  for (bool changed = true; changed;) {
    changed = false;
    for (std::uint64_t j : heads) {
      const CoffSym s = read_coff_sym(f, Bytes(rec(j), f.symbol_size));
      if (!is_section_definition(s)) continue;
      const std::byte* aux = rec(j + 1);
      if (static_cast<std::uint8_t>(aux[offsetof(coff::AuxSectionDefinition, Selection)]) !=
          coff::IMAGE_COMDAT_SELECT_ASSOCIATIVE)
        continue;
      const std::uint32_t parent = aux_section_number(f, aux);
      const std::size_t self = static_cast<std::size_t>(s.section) - 1;
      if (parent >= 1 && parent <= n && removed[parent - 1] && !removed[self]) {
        removed[self] = true;
        changed = true;
      }
    }
  }

  std::vector<std::uint64_t> newsec(n + 1, 0);
  std::uint64_t kept = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!removed[i]) newsec[i + 1] = ++kept;

  // Keep the symbols of kept sections; renumber their sections, move the
  // values of those in replaced sections.
  std::vector<std::uint64_t> symmap(nsym, kNone);
  std::vector<std::uint32_t> new_value(nsym, 0);
  std::vector<std::byte> new_syms;
  std::uint64_t new_count = 0;
  for (std::uint64_t j : heads) {
    const CoffSym s = read_coff_sym(f, Bytes(rec(j), f.symbol_size));
    if (s.section > 0 && removed[static_cast<std::size_t>(s.section) - 1]) {
      if (edit != nullptr && edit->keep_defined_symbols && !is_section_definition(s))
        fail_at({file, sym_at(j)}, "cannot remove {}: coff symbol {} is defined in it", sec(static_cast<std::size_t>(s.section) - 1), j);
      continue;
    }
    new_value[j] = s.value;
    if (NewContents* c = s.section > 0 ? replaced[static_cast<std::size_t>(s.section) - 1] : nullptr; c != nullptr) {
      if (is_section_definition(s)) {
        store_le<std::uint32_t>(rec(j + 1) + offsetof(coff::AuxSectionDefinition, Length),
                                static_cast<std::uint32_t>(c->bytes.size()));
      } else {
        const auto to = c->move(s.value);
        if (!to)
          fail_at({file, sym_at(j)}, "coff symbol {} points into {} at 0x{:x}, not at {}", j,
                  sec(static_cast<std::size_t>(s.section) - 1), s.value, c->places);
        new_value[j] = static_cast<std::uint32_t>(*to);
        store_le<std::uint32_t>(rec(j) + 8, new_value[j]);  // Value follows the 8-byte name in both forms
      }
    }
    if (s.section > 0) set_coff_sym_section(f, rec(j), static_cast<std::int32_t>(newsec[static_cast<std::size_t>(s.section)]));
    if (is_section_definition(s)) {
      std::byte* aux = rec(j + 1);
      const std::uint32_t parent = aux_section_number(f, aux);
      if (static_cast<std::uint8_t>(aux[offsetof(coff::AuxSectionDefinition, Selection)]) ==
              coff::IMAGE_COMDAT_SELECT_ASSOCIATIVE &&
          parent >= 1 && parent <= n) {
        const auto np = static_cast<std::uint32_t>(newsec[parent]);
        store_le<std::uint16_t>(aux + offsetof(coff::AuxSectionDefinition, Number), static_cast<std::uint16_t>(np));
        if (f.bigobj)
          store_le<std::uint16_t>(aux + offsetof(coff::AuxSectionDefinition, HighNumber),
                                  static_cast<std::uint16_t>(np >> 16));
      }
    }
    for (std::uint64_t a = 0; a <= s.aux; ++a) symmap[j + a] = new_count + a;
    new_syms.insert(new_syms.end(), rec(j), rec(j) + (1 + s.aux) * f.symbol_size);
    new_count += 1 + s.aux;
  }
  const bool renumbered = new_count != nsym;
  auto map_sym = [&](std::uint64_t j, std::uint64_t at, std::string_view holder) {
    if (j >= nsym) fail_at({file, at}, "{} refers to coff symbol index 0x{:x} (0x{:x} symbols)", holder, j, nsym);
    if (symmap[j] == kNone)
      fail_at({file, at}, "cannot remove the section defining coff symbol {}: {} refers to it", j, holder);
    return static_cast<std::uint32_t>(symmap[j]);
  };
  if (renumbered) {
    // Auxiliary records that hold symbol indices.
    for (std::uint64_t j : heads) {
      if (symmap[j] == kNone) continue;
      const CoffSym s = read_coff_sym(f, Bytes(rec(j), f.symbol_size));
      if (s.aux == 0) continue;
      std::byte* aux = new_syms.data() + symmap[j + 1] * f.symbol_size;
      const std::string holder = fmt::format("coff symbol {}", j);
      auto remap_field = [&](std::size_t off) {
        const std::uint32_t v = load_le<std::uint32_t>(aux + off);
        if (v != 0) store_le<std::uint32_t>(aux + off, map_sym(v, sym_at(j + 1), holder));
      };
      if (s.storage_class == coff::IMAGE_SYM_CLASS_WEAK_EXTERNAL) {
        remap_field(offsetof(coff::AuxWeakExternal, TagIndex));
      } else if (s.storage_class == coff::IMAGE_SYM_CLASS_EXTERNAL && (s.type >> 4) == coff::IMAGE_SYM_DTYPE_FUNCTION &&
                 s.section > 0) {
        remap_field(offsetof(coff::AuxFunctionDefinition, TagIndex));
        remap_field(offsetof(coff::AuxFunctionDefinition, PointerToNextFunction));
      } else if (s.storage_class == coff::IMAGE_SYM_CLASS_FUNCTION) {
        remap_field(offsetof(coff::AuxFunctionDefinition, PointerToNextFunction));
      } else if (s.storage_class == coff::IMAGE_SYM_CLASS_CLR_TOKEN) {
        remap_field(2);
      }
    }
  }

  // Relocations pointing into replaced sections: their addends live in the
  // relocated section's bytes, which are patched where the place moved.
  std::map<std::size_t, std::vector<std::byte>> patched;
  if (any_replaced)
    for (std::size_t i = 0; i < n; ++i) {
      if (removed[i]) continue;
      const std::uint64_t nrel = f.relocation_count(i);
      const std::uint64_t at = f.sections[i].PointerToRelocations;
      const std::size_t first = (f.sections[i].Characteristics & coff::IMAGE_SCN_LNK_NRELOC_OVFL) &&
                                f.sections[i].NumberOfRelocations == 0xffff;
      for (std::size_t k = first; k < nrel; ++k) {
        coff::Relocation r;
        std::memcpy(&r, f.data.data() + at + k * sizeof r, sizeof r);
        const std::uint64_t rat = at + k * sizeof r;
        const std::uint32_t j = r.SymbolTableIndex;
        if (j >= nsym) continue;  // map_sym reports it
        const CoffSym s = read_coff_sym(f, f.data.subspan(sym_at(j), f.symbol_size));
        NewContents* c = s.section > 0 && static_cast<std::size_t>(s.section) <= n
                             ? replaced[static_cast<std::size_t>(s.section) - 1]
                             : nullptr;
        if (c == nullptr) continue;
        const std::size_t target = static_cast<std::size_t>(s.section) - 1;
        const unsigned width = coff_addend_width(f.machine, r.Type);
        if (width == 0)
          fail_at({file, rat}, "relocation {} of {} (type 0x{:x}) points into {}, whose contents move", k, sec(i),
                  static_cast<std::uint16_t>(r.Type), sec(target));
        const std::uint64_t off = std::uint64_t{r.VirtualAddress} - f.sections[i].VirtualAddress;
        const Bytes data = f.contents(i);
        if (off > data.size() || width > data.size() - off)
          fail_at({file, rat}, "relocation {} of {} at 0x{:x} is outside its section", k, sec(i), off);
        auto& bytes = patched.try_emplace(i, data.begin(), data.end()).first->second;
        const std::int64_t addend = width == 8 ? static_cast<std::int64_t>(load_le<std::uint64_t>(bytes.data() + off))
                                               : load_le<std::int32_t>(bytes.data() + off);
        const std::uint64_t place = s.value + static_cast<std::uint64_t>(addend);
        const auto to = c->move(place);
        if (!to)
          fail_at({file, rat}, "relocation {} of {} points into {} at 0x{:x}, not at {}", k, sec(i), sec(target), place,
                  c->places);
        const std::int64_t moved = static_cast<std::int64_t>(*to) - static_cast<std::int64_t>(new_value[j]);
        if (width == 8)
          store_le<std::uint64_t>(bytes.data() + off, static_cast<std::uint64_t>(moved));
        else
          store_le<std::int32_t>(bytes.data() + off, static_cast<std::int32_t>(moved));
      }
    }
  for (auto it = patched.begin(); it != patched.end();)  // unchanged after all: copied from the input
    it = std::ranges::equal(it->second, f.contents(it->first)) ? patched.erase(it) : std::next(it);

  // Section contents, relocations and line numbers of the kept sections, in order.
  Layout l;
  const std::size_t header = l.reserve(f.section_table_offset + kept * sizeof(coff::SectionHeader));
  std::vector<coff::SectionHeader> table;
  for (std::size_t i = 0; i < n; ++i) {
    if (removed[i]) continue;
    coff::SectionHeader s = f.sections[i];
    const Bytes data = f.contents(i);
    if (f.has_data(i) && s.SizeOfRawData != 0) {
      if (renumbered && f.names[i] == ".llvm_addrsig") {
        std::vector<std::byte> b;
        for (std::uint64_t j : decode_uleb_list(data, file, s.PointerToRawData))
          if (j < nsym && symmap[j] != kNone) append_uleb(b, symmap[j]);
        s.SizeOfRawData = static_cast<std::uint32_t>(b.size());
        s.PointerToRawData = static_cast<std::uint32_t>(b.empty() ? 0 : l.size());
        l.bytes(std::move(b));
      } else if (replaced[i] != nullptr) {
        s.SizeOfRawData = static_cast<std::uint32_t>(replaced[i]->bytes.size());
        s.PointerToRawData = static_cast<std::uint32_t>(l.append(std::move(replaced[i]->bytes)));
      } else if (auto p = patched.find(i); p != patched.end()) {
        s.PointerToRawData = static_cast<std::uint32_t>(l.bytes(std::move(p->second)));
      } else {
        s.PointerToRawData = static_cast<std::uint32_t>(l.copy(in, base + f.sections[i].PointerToRawData, data.size()));
      }
    } else if (f.has_data(i)) {
      s.PointerToRawData = static_cast<std::uint32_t>(l.size());  // empty, but placed like the assembler does
    }
    const std::uint64_t nrel = f.relocation_count(i);
    if (s.NumberOfRelocations != 0 && nrel != 0) {
      const std::uint64_t at = f.sections[i].PointerToRelocations;
      if (renumbered) {
        const Bytes b = f.data.subspan(at, nrel * sizeof(coff::Relocation));
        std::vector<std::byte> v(b.begin(), b.end());
        // With IMAGE_SCN_LNK_NRELOC_OVFL the first record holds the count.
        const std::size_t first = (s.Characteristics & coff::IMAGE_SCN_LNK_NRELOC_OVFL) && s.NumberOfRelocations == 0xffff;
        for (std::size_t k = first; k < nrel; ++k) {
          std::byte* r = v.data() + k * sizeof(coff::Relocation);
          const std::uint32_t j = load_le<std::uint32_t>(r + offsetof(coff::Relocation, SymbolTableIndex));
          store_le<std::uint32_t>(r + offsetof(coff::Relocation, SymbolTableIndex),
                                  map_sym(j, at + k * sizeof(coff::Relocation), sec(i)));
        }
        s.PointerToRelocations = static_cast<std::uint32_t>(l.bytes(std::move(v)));
      } else {
        s.PointerToRelocations = static_cast<std::uint32_t>(l.copy(in, base + at, nrel * sizeof(coff::Relocation)));
      }
    } else {
      s.PointerToRelocations = 0;
    }
    if (s.NumberOfLinenumbers != 0) {
      // Line number records (6 bytes) name functions by symbol index.
      if (renumbered)
        fail_at({file, f.header_offset(i)}, "cannot renumber the coff line numbers of {}", sec(i));
      const std::uint64_t len = std::uint64_t{s.NumberOfLinenumbers} * 6;
      ByteReader(f.data, file).slice(s.PointerToLinenumbers, len, "coff line numbers");
      s.PointerToLinenumbers = static_cast<std::uint32_t>(l.copy(in, base + f.sections[i].PointerToLinenumbers, len));
    } else {
      s.PointerToLinenumbers = 0;
    }
    table.push_back(s);
  }

  // Symbols, then the string table cut after its last referenced name.
  std::uint64_t symptr = 0;
  if (f.symbol_table_offset != 0) {
    symptr = l.size();
    if (renumbered || !std::ranges::equal(new_syms, f.data.subspan(f.symbol_table_offset, nsym * f.symbol_size)))
      l.bytes(std::move(new_syms));
    else
      l.copy(in, base + f.symbol_table_offset, nsym * f.symbol_size);
    const std::string_view strtab =
        f.string_table_size == 0 ? std::string_view() : as_chars(f.data.subspan(f.string_table_offset, f.string_table_size));
    std::uint64_t end = 4;
    bool ok = true;
    auto use = [&](std::uint32_t off) {
      auto e = string_end(strtab, off);
      if (!e) ok = false;
      else end = std::max(end, *e);
    };
    for (const auto& s : table)
      if (auto off = coff_long_name_offset(std::string_view(s.Name, coff::kNameSize))) use(*off);
    for (std::uint64_t j : heads) {
      if (symmap[j] == kNone) continue;
      const std::byte* r = rec(j);
      if (load_le<std::uint32_t>(r) == 0) use(load_le<std::uint32_t>(r + 4));
    }
    if (!ok) end = strtab.size();
    if (f.string_table_size != 0) {
      std::vector<std::byte> size_field(4);
      store_le<std::uint32_t>(size_field.data(), static_cast<std::uint32_t>(end));
      l.bytes(std::move(size_field));
      l.copy(in, base + f.string_table_offset + 4, end - 4);
    }
  }

  std::vector<std::byte> hdr = coff_header(f, kept, symptr, new_count);
  for (const auto& s : table) append_struct(hdr, s);
  check_coff_limits(f, kept, l.size());
  l.fill(header, std::move(hdr));
  return l;
}

enum class Format { Elf, Coff };

Format object_format(const InputFile& in) {
  switch (identify_object(in.bytes())) {
    case ObjectKind::Elf: return Format::Elf;
    case ObjectKind::Coff: return Format::Coff;
    case ObjectKind::OtherObject:
      fail_at({in.path(), 0}, "adding or removing sections of Mach-O, Wasm, XCOFF, GOFF and PE files is not supported");
    case ObjectKind::NotObject: break;
  }
  fail_at({in.path(), 0}, "not an ELF or COFF object file");
}

}  // namespace

void write_with_added_sections(const InputFile& host, std::span<const AddedSection> sections, OutputFile& out) {
  if (object_format(host) == Format::Elf) {
    visit_elf_class(*elf_class_of(host.bytes()), [&](auto e) {
      using E = decltype(e);
      elf_add(host, ElfFile<E>::parse(host.bytes(), host.path()), sections, out);
    });
    return;
  }
  coff_add(host, CoffFile::parse(host.bytes(), host.path()), sections, out);
}

void write_without_sections(const InputFile& obj, const std::function<bool(std::string_view)>& remove,
                            OutputFile& out) {
  if (object_format(obj) == Format::Elf) {
    visit_elf_class(*elf_class_of(obj.bytes()), [&](auto e) {
      using E = decltype(e);
      elf_remove(obj, 0, ElfFile<E>::parse(obj.bytes(), obj.path()), remove, nullptr).write(out);
    });
    return;
  }
  coff_remove(obj, 0, CoffFile::parse(obj.bytes(), obj.path()), remove, nullptr).write(out);
}

}  // namespace ot::object

namespace ot::object {

Layout edit_object(const InputFile& in, std::uint64_t base, Bytes obj, const std::string& file, ObjectEdit edit) {
  const std::function<bool(std::string_view)> remove =
      edit.remove ? edit.remove : [](std::string_view) { return false; };
  switch (identify_object(obj)) {
    case ObjectKind::Elf:
      return visit_elf_class(*elf_class_of(obj), [&](auto e) {
        using E = decltype(e);
        return elf_remove(in, base, ElfFile<E>::parse(obj, file), remove, &edit);
      });
    case ObjectKind::Coff:
      return coff_remove(in, base, CoffFile::parse(obj, file), remove, &edit);
    default:
      fail_at({file, 0}, "not an ELF or COFF object file");
  }
}

}  // namespace ot::object
