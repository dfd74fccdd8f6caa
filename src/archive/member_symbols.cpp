#include "archive/member_symbols.h"

#include "formats/bitcode_symtab.h"
#include "formats/offload_binary.h"
#include "object/object_file.h"

namespace ot::archive {
namespace {

constexpr std::uint8_t STB_LOCAL = 0, STT_SECTION = 3, STT_FILE = 4;

// ELFObjectFile::getSymbolFlags: mapping symbols and the like are format specific.
bool machine_specific(std::uint16_t machine, std::string_view name) {
  using namespace object::elf;
  switch (machine) {
    case EM_AARCH64: return name.starts_with("$d") || name.starts_with("$x");
    case EM_ARM: return name.starts_with("$a") || name.starts_with("$d") || name.starts_with("$t");
    case 252:  // EM_CSKY
      return name.starts_with("$d") || name.starts_with("$t");
    case EM_RISCV: return name == ".L0 " || name.starts_with("$d") || name.starts_with("$x");
    default: return false;
  }
}

template <typename E>
std::vector<std::string> elf_symbols(Bytes data, const std::string& name) {
  using namespace object::elf;
  const auto f = object::ElfFile<E>::parse(data, name);
  std::vector<std::string> out;
  std::size_t symtab = 0;
  while (symtab < f.shdrs.size() && f.shdrs[symtab].sh_type != SHT_SYMTAB) ++symtab;
  if (symtab == f.shdrs.size()) return out;

  const auto& sh = f.shdrs[symtab];
  constexpr std::uint64_t kSym = sizeof(ElfSym<E>);
  if (sh.sh_entsize != kSym || sh.sh_size % kSym != 0)
    fail_at({name, f.header_offset(symtab)}, "symbol table has sh_entsize 0x{:x} and size 0x{:x}, expected multiples of 0x{:x}",
            static_cast<std::uint64_t>(sh.sh_entsize), static_cast<std::uint64_t>(sh.sh_size), kSym);
  const std::uint32_t link = sh.sh_link;
  if (link >= f.shdrs.size() || f.shdrs[link].sh_type != SHT_STRTAB)
    fail_at({name, f.header_offset(symtab)}, "symbol table links to section {}, which is no string table", link);
  const Bytes syms = f.contents(symtab);
  const std::string_view strtab = as_chars(f.contents(link));
  const ByteReader r(syms, name);
  const std::uint16_t machine = f.ehdr.e_machine;
  for (std::uint64_t i = 1; i < syms.size() / kSym; ++i) {  // symbol 0 is format specific
    const auto s = r.read<ElfSym<E>>(i * kSym, "symbol");
    const std::uint8_t binding = s.st_info >> 4, type = s.st_info & 0xf;
    if (binding == STB_LOCAL || type == STT_FILE || type == STT_SECTION || s.st_shndx == SHN_UNDEF) continue;
    const std::uint32_t at = s.st_name;
    if (at >= strtab.size())
      fail_at({name, sh.sh_offset + i * kSym}, "symbol {} name offset 0x{:x} is past the end of the string table", i, at);
    std::string_view sym = strtab.substr(at);
    sym = sym.substr(0, sym.find('\0'));
    if (machine_specific(machine, sym)) continue;
    out.emplace_back(sym);
  }
  return out;
}

}  // namespace

std::vector<std::string> archive_symbols(Bytes member, const std::string& name) {
  if (formats::is_llvm_bitcode(member)) {
    // LLVM parses the IR into a ModuleSymbolTable; the bitcode's stored symbol
    // table was built from that same table by the LLVM that wrote the file.
    // Without one (older writers), or when it cannot be read, the member gets
    // no symbols, as LLVM does for bitcode it cannot parse.
    std::optional<formats::BitcodeSymtab> st;
    try {
      st = formats::read_bitcode_symtab(member, name);
    } catch (const Error&) {
      return {};
    }
    std::vector<std::string> out;
    if (!st) return out;
    using S = formats::BitcodeSymbol;
    for (const S& s : st->symbols)
      if ((s.flags & S::kGlobal) && !(s.flags & (S::kUndefined | S::kFormatSpecific))) out.push_back(s.name);
    return out;
  }
  if (auto cls = object::elf_class_of(member))
    return object::visit_elf_class(*cls, [&](auto e) { return elf_symbols<decltype(e)>(member, name); });
  switch (object::identify_object(member)) {
    case object::ObjectKind::NotObject:
    case object::ObjectKind::Elf: return {};
    case object::ObjectKind::Coff:
    case object::ObjectKind::OtherObject: break;
  }
  // Deliberately an error rather than a silently different symbol table.
  fail(name, "cannot list the symbols of a COFF, Mach-O, Wasm or XCOFF archive member for the archive symbol table");
}

}  // namespace ot::archive
