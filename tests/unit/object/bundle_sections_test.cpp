// Adding and removing sections, checked against what LLVM 19 makes of the same
// inputs (clang-offload-bundler fat objects, its stripped hosts, llvm-objcopy
// --remove-section) and against the exact bytes clang 19 wrote.
#include <doctest/doctest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "object/bundle_sections.h"
#include "object/object_file.h"
#include "fixtures.inc"

using namespace ot;
using namespace ot::object;

namespace {

template <std::size_t N>
std::vector<std::byte> vec(const unsigned char (&a)[N]) {
  std::vector<std::byte> v(N);
  std::memcpy(v.data(), a, N);
  return v;
}

std::shared_ptr<InputFile> mem(std::string name, std::vector<std::byte> data) {
  return InputFile::from_memory(std::move(name), std::move(data));
}

std::shared_ptr<InputFile> mem(std::string name, std::string_view text) {
  const Bytes b = as_bytes(text);
  return mem(std::move(name), std::vector<std::byte>(b.begin(), b.end()));
}

class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "ot-object-test-XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& n) const { return path_ + "/" + n; }

 private:
  std::string path_;
};

std::vector<std::byte> read_back(const std::string& path) {
  auto f = InputFile::open(path);
  return {f->bytes().begin(), f->bytes().end()};
}

std::vector<std::byte> add(const std::shared_ptr<InputFile>& host, const std::vector<AddedSection>& secs) {
  TempDir d;
  OutputFile out(d.file("fat.o"));
  write_with_added_sections(*host, secs, out);
  out.commit();
  return read_back(d.file("fat.o"));
}

std::vector<std::byte> strip(const std::shared_ptr<InputFile>& obj,
                             const std::function<bool(std::string_view)>& pred = [](std::string_view n) {
                               return n.starts_with("__CLANG_OFFLOAD_BUNDLE__");
                             }) {
  TempDir d;
  OutputFile out(d.file("host.o"));
  write_without_sections(*obj, pred, out);
  out.commit();
  return read_back(d.file("host.o"));
}

constexpr std::string_view kDev1 = "Content of device file 1\n";
constexpr std::string_view kDev2 = "Content of device file 2\n";

std::vector<AddedSection> three_bundles(std::string_view triple) {
  return {{fmt::format("__CLANG_OFFLOAD_BUNDLE__host-{}-", triple), nullptr},
          {fmt::format("__CLANG_OFFLOAD_BUNDLE__openmp-{}-", triple), mem("d1", kDev1)},
          {"__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906", mem("d2", kDev2)}};
}

Bytes section_bytes(const std::vector<std::byte>& file, const SectionInfo& s) {
  return s.has_data ? Bytes(file).subspan(s.offset, s.size) : Bytes();
}

bool equal(Bytes a, Bytes b) { return std::ranges::equal(a, b); }

// Sections of `got` and `want` match one to one by name and order with equal
// contents, except the string tables LLVM rebuilds and sections without data.
void check_same_sections(const std::vector<std::byte>& got, const std::vector<std::byte>& want) {
  const auto g = read_sections(got, "got");
  const auto w = read_sections(want, "want");
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(g[i].name);
    CHECK(g[i].name == w[i].name);
    // LLVM rebuilds the string tables (and so the symbols' name offsets)
    if (g[i].name == ".strtab" || g[i].name == ".shstrtab" || g[i].name == ".symtab") continue;
    CHECK(g[i].size == w[i].size);
    if (!g[i].has_data || !w[i].has_data) continue;
    CHECK(equal(section_bytes(got, g[i]), section_bytes(want, w[i])));
  }
}

using E64 = elf::Elf64LE;

std::vector<elf::ElfSym<E64>> symbols(const ElfFile<E64>& f, std::size_t i) {
  const Bytes b = f.contents(i);
  std::vector<elf::ElfSym<E64>> v(b.size() / sizeof(elf::ElfSym<E64>));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(v[0]));
  return v;
}

std::string symbol_name(const ElfFile<E64>& f, std::size_t symtab, std::uint32_t off) {
  const std::string_view strtab = as_chars(f.contents(f.shdrs[symtab].sh_link));
  return std::string(strtab.substr(off, strtab.find('\0', off) - off));
}

}  // namespace

TEST_CASE("bundling then stripping gives the host object back byte for byte") {
  const std::pair<const char*, std::vector<std::byte>> hosts[] = {
      {"x86_64-unknown-linux-gnu", vec(fixtures::host_x86_64_elf)},
      {"powerpc64-unknown-linux-gnu", vec(fixtures::host_ppc64_elf)},
      {"i386-unknown-linux-gnu", vec(fixtures::host_i386_elf)},
      {"mips-unknown-linux-gnu", vec(fixtures::host_mips_elf)},
      {"x86_64-pc-windows-msvc", vec(fixtures::host_x86_64_coff)},
  };
  for (const auto& [triple, bytes] : hosts) {
    CAPTURE(triple);
    const auto fat = add(mem("h.o", bytes), three_bundles(triple));
    const auto secs = read_sections(fat, "fat.o");
    const auto orig = read_sections(bytes, "h.o");
    REQUIRE(secs.size() == orig.size() + 3);
    CHECK(secs[orig.size()].name == fmt::format("__CLANG_OFFLOAD_BUNDLE__host-{}-", triple));
    CHECK(equal(section_bytes(fat, secs[orig.size()]), as_bytes(std::string_view("\0", 1))));
    CHECK(equal(section_bytes(fat, secs[orig.size() + 1]), as_bytes(kDev1)));
    CHECK(secs[orig.size() + 2].name == "__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906");
    CHECK(equal(section_bytes(fat, secs[orig.size() + 2]), as_bytes(kDev2)));
    for (std::size_t i = 0; i < orig.size(); ++i) {
      CHECK(secs[i].name == orig[i].name);
      // the section name table only grew at its end
      if (secs[i].name == ".strtab" || secs[i].name == ".shstrtab")
        CHECK(equal(section_bytes(fat, secs[i]).first(orig[i].size), section_bytes(bytes, orig[i])));
      else
        CHECK(equal(section_bytes(fat, secs[i]), section_bytes(bytes, orig[i])));
    }
    CHECK(strip(mem("fat.o", fat)) == bytes);
  }
}

TEST_CASE("added sections match llvm-objcopy's (ELF)") {
  const auto fat = add(mem("h.o", vec(fixtures::host_x86_64_elf)), three_bundles("x86_64-unknown-linux-gnu"));
  check_same_sections(fat, vec(fixtures::llvm_fat_x86_64_elf));
  const auto f = ElfFile<E64>::parse(fat, "fat.o");
  const auto llvm = vec(fixtures::llvm_fat_x86_64_elf);  // the parsed views point into their bytes
  const auto l = ElfFile<E64>::parse(llvm, "llvm.o");
  for (std::size_t i = 14; i < 17; ++i) {
    CHECK(f.shdrs[i].sh_type == l.shdrs[i].sh_type);
    CHECK(f.shdrs[i].sh_flags == l.shdrs[i].sh_flags);
    CHECK(f.shdrs[i].sh_addralign == l.shdrs[i].sh_addralign);
    CHECK(f.shdrs[i].sh_link == 0);
  }
  CHECK(f.shdrs[14].sh_type == elf::SHT_PROGBITS);
  CHECK(f.shdrs[14].sh_flags == elf::SHF_EXCLUDE);
  // the file keeps the host's bytes up to its old section header table
  const auto host = vec(fixtures::host_x86_64_elf);
  CHECK(std::equal(host.begin() + 64, host.begin() + 0x308, fat.begin() + 64));
}

TEST_CASE("added sections match llvm-objcopy's (COFF)") {
  const auto fat = add(mem("h.obj", vec(fixtures::host_x86_64_coff)), three_bundles("x86_64-pc-windows-msvc"));
  check_same_sections(fat, vec(fixtures::llvm_fat_x86_64_coff));
  const auto f = CoffFile::parse(fat, "fat.obj");
  REQUIRE(f.sections.size() == 8);
  // LLVM's readonly,exclude: IMAGE_SCN_MEM_READ | IMAGE_SCN_LNK_REMOVE.
  CHECK(f.sections[5].Characteristics == 0x40000800);
  CHECK(std::string_view(f.sections[5].Name, 8) == std::string_view("/46\0\0\0\0\0", 8));
  CHECK(f.sections[5].VirtualSize == 0);
}

TEST_CASE("stripping LLVM's fat objects matches LLVM's unbundled host") {
  check_same_sections(strip(mem("f.o", vec(fixtures::llvm_fat_x86_64_elf))), vec(fixtures::llvm_stripped_x86_64_elf));
  check_same_sections(strip(mem("f.obj", vec(fixtures::llvm_fat_x86_64_coff))),
                      vec(fixtures::llvm_stripped_x86_64_coff));
}

TEST_CASE("stripping renumbers sections and symbols like llvm-objcopy") {
  // ld.lld -r gave both bundle sections section symbols (9 and 10, before
  // .comment's); the group, relocations and address-significance table hold
  // symbol indices after them.
  const auto got = strip(mem("r.o", vec(fixtures::relinked_fat_elf)));
  const auto g = ElfFile<E64>::parse(got, "got");
  const auto want = vec(fixtures::relinked_llvm_stripped_elf);
  const auto w = ElfFile<E64>::parse(want, "want");
  REQUIRE(g.shdrs.size() == w.shdrs.size());
  for (std::size_t i = 0; i < g.shdrs.size(); ++i) {
    CAPTURE(g.names[i]);
    CHECK(g.names[i] == w.names[i]);
    CHECK(g.shdrs[i].sh_type == w.shdrs[i].sh_type);
    CHECK(g.shdrs[i].sh_flags == w.shdrs[i].sh_flags);
    CHECK(g.shdrs[i].sh_link == w.shdrs[i].sh_link);
    CHECK(g.shdrs[i].sh_info == w.shdrs[i].sh_info);
    CHECK(g.shdrs[i].sh_addralign == w.shdrs[i].sh_addralign);
    if (g.shdrs[i].sh_type == elf::SHT_SYMTAB) {
      const auto gs = symbols(g, i), ws = symbols(w, i);
      REQUIRE(gs.size() == ws.size());
      for (std::size_t j = 0; j < gs.size(); ++j) {
        CHECK(symbol_name(g, i, gs[j].st_name) == symbol_name(w, i, ws[j].st_name));
        CHECK(gs[j].st_info == ws[j].st_info);
        CHECK(gs[j].st_shndx == ws[j].st_shndx);
        CHECK(gs[j].st_value == ws[j].st_value);
      }
    } else if (g.shdrs[i].sh_type != elf::SHT_STRTAB) {
      CHECK(equal(g.contents(i), w.contents(i)));
    }
  }
}

TEST_CASE("stripping COFF renumbers symbols like llvm-objcopy") {
  const auto host = vec(fixtures::host_x86_64_coff);
  const auto got = strip(mem("h.obj", host), [](std::string_view n) { return n == ".llvm_addrsig"; });
  const auto g = CoffFile::parse(got, "got");
  const auto wb = vec(fixtures::llvm_no_addrsig_x86_64_coff);
  const auto w = CoffFile::parse(wb, "want");
  REQUIRE(g.sections.size() == w.sections.size());
  CHECK(g.symbol_count == w.symbol_count);
  for (std::size_t i = 0; i < g.sections.size(); ++i) {
    CHECK(g.names[i] == w.names[i]);
    const std::uint64_t n = g.relocation_count(i);
    REQUIRE(n == w.relocation_count(i));
    CHECK(equal(Bytes(got).subspan(g.sections[i].PointerToRelocations, n * 10),
                Bytes(wb).subspan(w.sections[i].PointerToRelocations, n * 10)));
  }
  // symbol records without their names (LLVM rebuilds the string table)
  for (std::uint32_t j = 0; j < g.symbol_count; ++j) {
    const std::size_t go = g.symbol_table_offset + j * 18, wo = w.symbol_table_offset + j * 18;
    const bool long_name = load_le<std::uint32_t>(got.data() + go) == 0;
    CHECK(equal(Bytes(got).subspan(go + (long_name ? 8 : 0), long_name ? 10 : 18),
                Bytes(wb).subspan(wo + (long_name ? 8 : 0), long_name ? 10 : 18)));
  }
}

TEST_CASE("stripping refuses what it cannot rewrite safely") {
  const auto elf = mem("h.o", vec(fixtures::host_x86_64_elf));
  CHECK_THROWS_WITH_AS(strip(elf, [](std::string_view n) { return n == ".bss"; }),
                       "h.o: cannot remove the section defining symbol 4 of section 13 (.symtab): section 3 "
                       "(.rela.text) refers to it, at offset 0x1d0",
                       Error);
  CHECK_THROWS_WITH_AS(strip(elf, [](std::string_view n) { return n == ".strtab"; }),
                       "h.o: cannot remove section 1 (.strtab): it holds the section names, at offset 0x348", Error);
  CHECK_THROWS_WITH_AS(strip(elf, [](std::string_view n) { return n == ".symtab"; }),
                       "h.o: cannot remove section 13 (.symtab): section 3 (.rela.text) links to it, at offset 0x3c8",
                       Error);
  const auto coff = mem("h.obj", vec(fixtures::host_x86_64_coff));
  CHECK_THROWS_WITH_AS(strip(coff, [](std::string_view n) { return n == ".bss"; }),
                       "h.obj: cannot remove the section defining coff symbol 13: coff section 1 (.text) refers to "
                       "it, at offset 0x10f",
                       Error);
  // nothing to remove: the input unchanged
  CHECK(strip(elf) == vec(fixtures::host_x86_64_elf));
  CHECK(strip(coff) == vec(fixtures::host_x86_64_coff));
}

TEST_CASE("removing a section takes its relocations along") {
  const auto host = vec(fixtures::host_x86_64_elf);
  const auto got = strip(mem("h.o", host), [](std::string_view n) { return n == ".data"; });
  const auto secs = read_sections(got, "got");
  std::vector<std::string> names;
  for (const auto& s : secs) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"", ".strtab", ".text", ".rela.text", ".bss", ".rodata.str1.1",
                                          ".comment", ".note.GNU-stack", ".eh_frame", ".rela.eh_frame",
                                          ".llvm_addrsig", ".symtab"});
  const auto f = ElfFile<E64>::parse(got, "got");
  CHECK(f.shdrs[3].sh_info == 2);   // .rela.text -> .text
  CHECK(f.shdrs[3].sh_link == 11);  // -> .symtab, was 13
  CHECK(f.shdrs[9].sh_info == 8);   // .rela.eh_frame -> .eh_frame, was 10
  CHECK(f.shdrs[11].sh_info == 6);
  // msg (defined in .data) is gone; everything else keeps its index
  const auto syms = symbols(f, 11);
  REQUIRE(syms.size() == 8);
  CHECK(symbol_name(f, 11, syms[7].st_name) == "main");
  CHECK(syms[7].st_shndx == 2);
}

TEST_CASE("adding sections to an ELF file without a section table") {
  std::vector<std::byte> v(64);
  std::memcpy(v.data(), "\x7f" "ELF\x02\x01\x01", 7);
  v[16] = std::byte{1};
  v[18] = std::byte{62};
  v[52] = std::byte{64};
  const auto fat = add(mem("bare.o", v), {{"__CLANG_OFFLOAD_BUNDLE__x", mem("d1", kDev1)}});
  const auto secs = read_sections(fat, "fat.o");
  REQUIRE(secs.size() == 3);
  CHECK(secs[1].name == "__CLANG_OFFLOAD_BUNDLE__x");
  CHECK(equal(section_bytes(fat, secs[1]), as_bytes(kDev1)));
  CHECK(secs[2].name == ".shstrtab");
}

TEST_CASE("more than 0xff00 sections use the extended ELF numbering") {
  const auto host = vec(fixtures::host_x86_64_elf);
  std::vector<AddedSection> many;
  const auto empty = mem("empty", std::string_view());
  for (int i = 0; i < 0xff10; ++i) many.push_back({fmt::format("__CLANG_OFFLOAD_BUNDLE__{}", i), empty});
  many.push_back({"__CLANG_OFFLOAD_BUNDLE__last", mem("d2", kDev2)});
  const auto fat = add(mem("h.o", host), many);
  const auto f = ElfFile<E64>::parse(fat, "fat.o");
  CHECK(f.ehdr.e_shnum == 0);
  CHECK(f.shdrs[0].sh_size == 14 + 0xff11);
  CHECK(f.ehdr.e_shstrndx == 1);
  CHECK(f.names.back() == "__CLANG_OFFLOAD_BUNDLE__last");
  CHECK(equal(f.contents(f.shdrs.size() - 1), as_bytes(kDev2)));
  CHECK(strip(mem("fat.o", fat)) == host);
}

TEST_CASE("a relocatable object larger than the format allows is refused") {
  // 32-bit ELF offsets: a payload that would end past 4 GiB cannot be added.
  // The payload is a sparse file, so nothing is actually written.
  TempDir d;
  const std::string big = d.file("big");
  {
    FILE* fp = fopen(big.c_str(), "wb");
    REQUIRE(fp);
    REQUIRE(ftruncate(fileno(fp), 0x100000000) == 0);
    fclose(fp);
  }
  const auto host = mem("h32.o", vec(fixtures::host_i386_elf));
  OutputFile out(d.file("fat.o"));
  CHECK_THROWS_WITH_AS(write_with_added_sections(*host, {{{"__CLANG_OFFLOAD_BUNDLE__big", InputFile::open(big)}}}, out),
                       "h32.o: output of 0x1000005b4 bytes exceeds the 4 GiB limit of a 32-bit ELF file", Error);
}
