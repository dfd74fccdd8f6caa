// identify_object against LLVM 19's own verdicts (clang-offload-bundler -type=o
// -### runs objcopy only when createBinary gave an ObjectFile: each crafted
// input below was put through it), read_sections against llvm-readobj's tables
// for LLVM-made objects, and the errors for malformed structures.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

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

std::vector<std::byte> test_bytes(std::string_view s) {
  const Bytes b = as_bytes(s);
  return {b.begin(), b.end()};
}

std::vector<std::byte> bytes(std::initializer_list<int> l) {
  std::vector<std::byte> v;
  for (int b : l) v.push_back(static_cast<std::byte>(b));
  return v;
}

template <typename T>
void put(std::vector<std::byte>& v, std::size_t off, T value, std::endian e = std::endian::little) {
  value = byteswap_if(value, e != std::endian::native);
  if (v.size() < off + sizeof(T)) v.resize(off + sizeof(T));
  std::memcpy(v.data() + off, &value, sizeof(T));
}

template <typename T>
T get(const std::vector<std::byte>& v, std::size_t off) {
  T value;
  std::memcpy(&value, v.data() + off, sizeof(T));
  return byteswap_if(value, std::endian::native != std::endian::little);
}

// A bare ELF64 LE header (no sections) with the given section table fields.
std::vector<std::byte> elf64(std::uint64_t shoff = 0, std::uint16_t shentsize = 64, std::uint16_t shnum = 0) {
  std::vector<std::byte> v(64);
  std::memcpy(v.data(), "\x7f" "ELF\x02\x01\x01", 7);
  put<std::uint16_t>(v, 16, 1);   // ET_REL
  put<std::uint16_t>(v, 18, 62);  // EM_X86_64
  put<std::uint32_t>(v, 20, 1);
  put<std::uint64_t>(v, 40, shoff);
  put<std::uint16_t>(v, 52, 64);
  put<std::uint16_t>(v, 58, shentsize);
  put<std::uint16_t>(v, 60, shnum);
  return v;
}

std::vector<std::byte> coff_header_bytes(std::uint16_t machine, std::uint16_t nsec = 0, std::uint16_t opt = 0,
                            std::uint32_t symptr = 0, std::uint32_t nsym = 0) {
  std::vector<std::byte> v(20);
  put(v, 0, machine);
  put(v, 2, nsec);
  put(v, 8, symptr);
  put(v, 12, nsym);
  put(v, 16, opt);
  return v;
}

std::vector<std::byte> bigobj(std::uint16_t version, std::uint32_t nsec) {
  std::vector<std::byte> v(56);
  put<std::uint16_t>(v, 2, 0xffff);
  put<std::uint16_t>(v, 4, version);
  put<std::uint16_t>(v, 6, 0x8664);
  std::memcpy(v.data() + 12, coff::kBigObjMagic, 16);
  put<std::uint32_t>(v, 44, nsec);
  return v;
}

std::vector<std::byte> cat(std::vector<std::byte> a, std::size_t zeros) {
  a.resize(a.size() + zeros);
  return a;
}

template <std::size_t N>
void check_table(const std::vector<SectionInfo>& got, const fixtures::Section (&want)[N]) {
  REQUIRE(got.size() == N);
  for (std::size_t i = 0; i < N; ++i) {
    CAPTURE(i);
    CHECK(got[i].name == want[i].name);
    CHECK(got[i].size == want[i].size);
    // llvm-readobj prints 0 for the raw data pointer of a COFF section without data
    if (got[i].has_data || want[i].offset != 0) CHECK(got[i].offset == want[i].offset);
  }
}

}  // namespace

TEST_CASE("identify_object: ELF as LLVM 19 accepts it") {
  CHECK(identify_object(vec(fixtures::host_x86_64_elf)) == ObjectKind::Elf);
  CHECK(identify_object(vec(fixtures::host_ppc64_elf)) == ObjectKind::Elf);
  CHECK(identify_object(vec(fixtures::host_i386_elf)) == ObjectKind::Elf);
  CHECK(identify_object(vec(fixtures::host_mips_elf)) == ObjectKind::Elf);
  CHECK(identify_object(vec(fixtures::llvm_fat_x86_64_elf)) == ObjectKind::Elf);
  CHECK(identify_object(elf64()) == ObjectKind::Elf);                         // header only
  const auto header = elf64();
  CHECK(identify_object(Bytes(header).first(63)) == ObjectKind::NotObject);
  CHECK(identify_object(Bytes(header).first(18)) == ObjectKind::NotObject);
  CHECK(identify_object(Bytes(header).first(17)) == ObjectKind::NotObject);
  auto bad_class = elf64();
  bad_class[4] = std::byte{3};
  CHECK(identify_object(bad_class) == ObjectKind::NotObject);
  auto bad_data = elf64();
  bad_data[5] = std::byte{3};
  CHECK(identify_object(bad_data) == ObjectKind::NotObject);
  CHECK(identify_object(elf64(64, 64, 1)) == ObjectKind::NotObject);          // table past the end
  CHECK(identify_object(cat(elf64(64, 64, 1), 64)) == ObjectKind::Elf);
  CHECK(identify_object(cat(elf64(68, 64, 1), 68)) == ObjectKind::Elf);       // misaligned e_shoff is fine
  CHECK(identify_object(cat(elf64(64, 40, 1), 64)) == ObjectKind::NotObject);  // e_shentsize
  CHECK(identify_object(elf64(0, 40, 0)) == ObjectKind::Elf);                 // ... unless there is no table
  CHECK(identify_object(cat(elf64(64, 64, 2), 64)) == ObjectKind::NotObject);
  auto ext = cat(elf64(64, 64, 0), 64);                                        // count in section 0's sh_size
  put<std::uint64_t>(ext, 64 + 32, 1);
  CHECK(identify_object(ext) == ObjectKind::Elf);
  put<std::uint64_t>(ext, 64 + 32, 2);
  CHECK(identify_object(ext) == ObjectKind::NotObject);
  // LLVM does not look at section data or names when it opens the file.
  auto past = cat(elf64(64, 64, 2), 128);
  put<std::uint32_t>(past, 128 + 4, 1);
  put<std::uint64_t>(past, 128 + 24, 1000);
  put<std::uint64_t>(past, 128 + 32, 10);
  CHECK(identify_object(past) == ObjectKind::Elf);
}

TEST_CASE("identify_object: COFF as LLVM 19 accepts it") {
  CHECK(identify_object(vec(fixtures::host_x86_64_coff)) == ObjectKind::Coff);
  CHECK(identify_object(vec(fixtures::llvm_fat_x86_64_coff)) == ObjectKind::Coff);
  for (std::uint16_t m : {0x0, 0x14c, 0x1c4, 0x8664, 0xaa64, 0xa641, 0xa64e, 0x166, 0x2f0})
    CHECK_MESSAGE(identify_object(coff_header_bytes(m)) == ObjectKind::Coff, m);
  for (std::uint16_t m : {0x1234, 0x8665, 0x14d, 0x64, 0x0200})
    CHECK_MESSAGE(identify_object(coff_header_bytes(m)) == ObjectKind::NotObject, m);
  auto h = coff_header_bytes(0x8664);
  h.pop_back();
  CHECK(identify_object(h) == ObjectKind::NotObject);                               // 19 bytes
  CHECK(identify_object(bytes({0x64, 0x86, 0, 0})) == ObjectKind::NotObject);
  CHECK(identify_object(coff_header_bytes(0x8664, 1)) == ObjectKind::NotObject);                // no section table
  CHECK(identify_object(cat(coff_header_bytes(0x8664, 1), 40)) == ObjectKind::Coff);
  CHECK(identify_object(cat(coff_header_bytes(0x8664, 1), 39)) == ObjectKind::NotObject);
  CHECK(identify_object(cat(coff_header_bytes(0x8664, 1, 4), 40)) == ObjectKind::NotObject);    // optional header moves it
  CHECK(identify_object(cat(coff_header_bytes(0x8664, 1, 4), 44)) == ObjectKind::Coff);
  // The symbol and string tables are not checked when the object is opened.
  CHECK(identify_object(coff_header_bytes(0x8664, 0, 0, 999, 1)) == ObjectKind::Coff);
  CHECK(identify_object(coff_header_bytes(0x8664, 0, 0, 0, 1)) == ObjectKind::Coff);
  CHECK(identify_object(cat(coff_header_bytes(0x8664, 0xffff), 100)) == ObjectKind::Coff);   // the import-library layout
  CHECK(identify_object(bigobj(2, 0)) == ObjectKind::Coff);
  CHECK(identify_object(bigobj(1, 0)) == ObjectKind::Coff);
  CHECK(identify_object(bigobj(2, 1)) == ObjectKind::NotObject);
  CHECK(identify_object(cat(bigobj(2, 1), 40)) == ObjectKind::Coff);
  auto import = bigobj(2, 0);
  import[12] = std::byte{0};
  CHECK(identify_object(import) == ObjectKind::NotObject);  // short import library
  auto winres = cat(bytes({0, 0, 0, 0, 0x20, 0, 0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0}), 40);
  CHECK(identify_object(winres) == ObjectKind::NotObject);
}

TEST_CASE("identify_object: other formats") {
  CHECK(identify_object({}) == ObjectKind::NotObject);
  CHECK(identify_object(bytes({'B', 'C', 0xc0, 0xde, 0, 0, 0, 0})) == ObjectKind::NotObject);  // bitcode
  CHECK(identify_object(test_bytes("!<arch>\n")) == ObjectKind::NotObject);
  CHECK(identify_object(test_bytes("__CLANG_OFFLOAD_BUNDLE__\x02")) == ObjectKind::NotObject);
  CHECK(identify_object(bytes({0, 'a', 's', 'm', 1, 0, 0, 0})) == ObjectKind::OtherObject);
  CHECK(identify_object(bytes({0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1})) == ObjectKind::OtherObject);
  CHECK(identify_object(bytes({0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 1})) == ObjectKind::NotObject);  // universal
  CHECK(identify_object(bytes({0x01, 0xdf, 0, 0})) == ObjectKind::OtherObject);
  CHECK(identify_object(bytes({0x03, 0xf0, 0x00, 0})) == ObjectKind::OtherObject);
  CHECK(identify_object(cat(bytes({'M', 'Z'}), 100)) == ObjectKind::NotObject);  // DOS stub without PE
}

TEST_CASE("read_sections: LLVM-made objects as llvm-readobj lists them") {
  check_table(read_sections(vec(fixtures::host_x86_64_elf), "h.o"), fixtures::host_x86_64_elf_sections);
  check_table(read_sections(vec(fixtures::host_ppc64_elf), "h.o"), fixtures::host_ppc64_elf_sections);
  check_table(read_sections(vec(fixtures::host_i386_elf), "h.o"), fixtures::host_i386_elf_sections);
  check_table(read_sections(vec(fixtures::host_mips_elf), "h.o"), fixtures::host_mips_elf_sections);
  check_table(read_sections(vec(fixtures::host_x86_64_coff), "h.o"), fixtures::host_x86_64_coff_sections);
  check_table(read_sections(vec(fixtures::llvm_fat_x86_64_elf), "f.o"), fixtures::llvm_fat_x86_64_elf_sections);
  check_table(read_sections(vec(fixtures::llvm_fat_x86_64_coff), "f.o"), fixtures::llvm_fat_x86_64_coff_sections);

  const auto elf = read_sections(vec(fixtures::host_x86_64_elf), "h.o");
  CHECK(elf[0].name.empty());
  CHECK(elf[4].name == ".bss");
  CHECK(!elf[4].has_data);
  CHECK(elf[4].type == elf::SHT_NOBITS);
  CHECK(elf[2].has_data);
  const auto cf = read_sections(vec(fixtures::host_x86_64_coff), "h.o");
  CHECK(cf[2].name == ".bss");
  CHECK(!cf[2].has_data);
  CHECK(cf[4].name == ".llvm_addrsig");  // a "/4" long name
}

TEST_CASE("read_sections: extended section numbering") {
  auto v = vec(fixtures::host_x86_64_elf);
  const auto normal = read_sections(v, "h.o");
  const std::uint64_t shoff = get<std::uint64_t>(v, 40);
  const std::uint16_t shnum = get<std::uint16_t>(v, 60);
  const std::uint16_t shstrndx = get<std::uint16_t>(v, 62);
  put<std::uint16_t>(v, 60, 0);
  put<std::uint64_t>(v, shoff + 32, shnum);
  put<std::uint16_t>(v, 62, 0xffff);
  put<std::uint32_t>(v, shoff + 40, shstrndx);
  const auto ext = read_sections(v, "h.o");
  REQUIRE(ext.size() == normal.size());
  for (std::size_t i = 1; i < ext.size(); ++i) CHECK(ext[i].name == normal[i].name);
}

TEST_CASE("read_sections: malformed ELF") {
  const auto good = vec(fixtures::host_x86_64_elf);  // 14 sections at 0x308, .strtab (0x8d bytes) is section 1
  const std::uint64_t shoff = 0x308;
  REQUIRE(get<std::uint64_t>(good, 40) == shoff);
  const std::string size = fmt::format("0x{:x}", good.size());

  CHECK_THROWS_WITH_AS(read_sections(std::vector<std::byte>(good.begin(), good.begin() + 40), "t.o"),
                       "t.o: elf header (0x40 bytes) extends past the end of the file (0x28 bytes), at offset 0x0",
                       Error);
  auto v = good;
  put<std::uint64_t>(v, 40, good.size());
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       ("t.o: section header 0 (0x40 bytes) extends past the end of the file (" + size +
                        " bytes), at offset " + size).c_str(),
                       Error);
  v = good;
  put<std::uint64_t>(v, 40, ~std::uint64_t{0} - 8);
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       ("t.o: section header 0 (0x40 bytes) extends past the end of the file (" + size +
                        " bytes), at offset 0xfffffffffffffff7").c_str(),
                       Error);
  v = good;
  put<std::uint16_t>(v, 60, 0xfff0);
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       ("t.o: 0xfff0 section headers at 0x308 extend past the end of the file (" + size +
                        " bytes), at offset 0x3c").c_str(),
                       Error);
  v = good;
  put<std::uint16_t>(v, 60, 0);
  put<std::uint64_t>(v, shoff + 32, 0x4000000000000000);
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       ("t.o: 0x4000000000000000 section headers at 0x308 extend past the end of the file (" + size +
                        " bytes), at offset 0x328").c_str(),
                       Error);
  v = good;
  put<std::uint16_t>(v, 58, 40);
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"), "t.o: e_shentsize is 0x28, expected 0x40, at offset 0x3a", Error);
  v = good;
  put<std::uint16_t>(v, 62, 99);
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       "t.o: section name string table index 0x63 is out of range (0xe sections), at offset 0x3e", Error);
  v = good;
  put<std::uint16_t>(v, 62, 2);  // .text is no string table
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       "t.o: section name string table (section 2) has type 0x1, not SHT_STRTAB, at offset 0x388",
                       Error);
  v = good;
  put<std::uint32_t>(v, shoff + 3 * 64, 0x8d);  // section 3's name just past the table
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       "t.o: section 3 name offset 0x8d is past the end of the section name string table (0x8d "
                       "bytes), at offset 0x3c8",
                       Error);
  v = good;
  put<std::uint64_t>(v, shoff + 64 + 32, 0x8c);  // .strtab without its last NUL
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       "t.o: section name string table (section 1) is not null-terminated, at offset 0x348", Error);
  v = good;
  put<std::uint64_t>(v, shoff + 2 * 64 + 24, 0xffffffffffffff00);  // .text: offset + size wraps
  put<std::uint64_t>(v, shoff + 2 * 64 + 32, 0x200);
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       ("t.o: section 2 data (0x200 bytes at 0xffffffffffffff00) extends past the end of the file (" +
                        size + " bytes), at offset 0x388").c_str(),
                       Error);
  v = good;
  put<std::uint64_t>(v, shoff + 2 * 64 + 32, good.size());  // .text larger than the file
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"),
                       ("t.o: section 2 data (" + size + " bytes at 0x40) extends past the end of the file (" + size +
                        " bytes), at offset 0x388").c_str(),
                       Error);
  v = good;
  v[4] = std::byte{7};
  CHECK_THROWS_WITH_AS(read_sections(v, "t.o"), "t.o: unknown elf class or data encoding, at offset 0x4", Error);
  CHECK_THROWS_WITH_AS(read_sections(test_bytes("hello, world"), "t.o"),
                       "t.o: not an ELF or COFF object file, at offset 0x0", Error);
  CHECK_THROWS_WITH_AS(read_sections(bytes({0, 'a', 's', 'm', 1, 0, 0, 0}), "t.o"),
                       "t.o: reading sections of Mach-O, Wasm, XCOFF and GOFF files is not supported, at offset 0x0",
                       Error);
}

TEST_CASE("read_sections: malformed ELF32 big-endian") {
  const auto good = vec(fixtures::host_mips_elf);
  auto v = good;
  const std::uint32_t shoff = byteswap_if(get<std::uint32_t>(v, 32), std::endian::native == std::endian::little);
  put<std::uint16_t>(v, 48, 0x7fff, std::endian::big);  // e_shnum
  CHECK_THROWS_WITH_AS(read_sections(v, "m.o"),
                       fmt::format("m.o: 0x7fff section headers at 0x{:x} extend past the end of the file (0x{:x} "
                                   "bytes), at offset 0x30",
                                   shoff, good.size())
                           .c_str(),
                       Error);
}

TEST_CASE("read_sections: malformed COFF") {
  const auto good = vec(fixtures::host_x86_64_coff);  // 5 sections; .llvm_addrsig is named "/4"
  const std::uint32_t symptr = get<std::uint32_t>(good, 8);
  const std::uint32_t nsym = get<std::uint32_t>(good, 12);
  const std::uint64_t strtab = symptr + nsym * 18ull;
  const std::string size = fmt::format("0x{:x}", good.size());

  CHECK_THROWS_WITH_AS(read_sections(std::vector<std::byte>(good.begin(), good.begin() + 19), "c.obj"),
                       "c.obj: coff file header (0x14 bytes) extends past the end of the file (0x13 bytes), at offset "
                       "0x0",
                       Error);
  auto v = std::vector<std::byte>(good.begin(), good.begin() + 100);
  CHECK_THROWS_WITH_AS(read_sections(v, "c.obj"),
                       "c.obj: 0x5 coff section headers at 0x14 extend past the end of the file (0x64 bytes), at "
                       "offset 0x2",
                       Error);
  v = good;
  put<std::uint32_t>(v, 8, 0xfffffff0);
  CHECK_THROWS_WITH_AS(read_sections(v, "c.obj"),
                       ("c.obj: coff symbol table (0x12 symbols at 0xfffffff0) extends past the end of the file (" +
                        size + " bytes), at offset 0x8").c_str(),
                       Error);
  v = good;
  put<std::uint32_t>(v, strtab, 0x10000);
  CHECK_THROWS_WITH_AS(read_sections(v, "c.obj"),
                       fmt::format("c.obj: coff string table (0x10000 bytes) extends past the end of the file ({} "
                                   "bytes), at offset 0x{:x}",
                                   size, strtab)
                           .c_str(),
                       Error);
  const std::size_t sec5 = 20 + 4 * 40;
  v = good;
  std::memcpy(v.data() + sec5, "/4x\0\0\0\0\0", 8);
  CHECK_THROWS_WITH_AS(read_sections(v, "c.obj"),
                       "c.obj: coff section 5 name '/4x' is not a valid string table reference, at offset 0xb4",
                       Error);
  v = good;
  std::memcpy(v.data() + sec5, "/9999\0\0\0", 8);
  CHECK_THROWS_WITH_AS(read_sections(v, "c.obj"),
                       "c.obj: coff section 5 name offset 0x270f is outside the string table (0x2e bytes), at offset "
                       "0xb4",
                       Error);
  v = good;
  put<std::uint32_t>(v, 20 + 16, 0x1000);  // .text SizeOfRawData
  CHECK_THROWS_WITH_AS(read_sections(v, "c.obj"),
                       ("c.obj: coff section 1 data (0x1000 bytes at 0xdc) extends past the end of the file (" + size +
                        " bytes), at offset 0x14").c_str(),
                       Error);
  v = good;
  put<std::uint16_t>(v, 20 + 32, 0x4000);  // .text NumberOfRelocations
  CHECK_THROWS_WITH_AS(read_sections(v, "c.obj"),
                       ("c.obj: coff section 1 relocations (0x4000 at 0x10f) extend past the end of the file (" + size +
                        " bytes), at offset 0x14").c_str(),
                       Error);
  auto big = bigobj(2, 3);
  CHECK_THROWS_WITH_AS(read_sections(big, "b.obj"),
                       "b.obj: 0x3 coff section headers at 0x38 extend past the end of the file (0x38 bytes), at "
                       "offset 0x2c",
                       Error);
}

TEST_CASE("COFF long section name fields") {
  CHECK(coff_long_name_field(4) == "/4");
  CHECK(coff_long_name_field(9999999) == "/9999999");
  CHECK(coff_long_name_field(10000000) == "//AAmJaA");
  CHECK(*coff_long_name_offset("//AAmJaA") == 10000000);
  CHECK(*coff_long_name_offset("/0000123") == 123);
  CHECK(!coff_long_name_offset("/"));
  CHECK(!coff_long_name_offset("/12a"));
  CHECK(!coff_long_name_offset("//A*"));
  CHECK(!coff_long_name_offset(".text"));
}
