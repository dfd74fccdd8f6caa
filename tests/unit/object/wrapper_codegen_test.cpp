// The stubs' bytes against llvm-mc 19 assembling the assembly written beside
// each stub in src/object/wrapper_codegen.cpp (the hex strings below are
// llvm-mc's .text for that assembly; relocated fields are zero).
#include <doctest/doctest.h>

#include <string>

#include "object/wrapper_codegen.h"

using namespace ot;
using namespace ot::object;

namespace {

struct Fixture {
  RelocatableObject obj;
  std::uint32_t text, fn, desc, reg, info, inf, wrapper, regfat, handle, globals, unreg;
  Fixture() {
    text = obj.add_section(Section{".text.startup", SectionKind::Code, 16, {}, 0});
    auto sym = [&](const char* n) { return obj.add_symbol(Symbol{n}); };
    fn = sym("fn"), desc = sym("desc"), reg = sym("reg"), info = sym("info"), inf = sym("inf");
    wrapper = sym("wrapper"), regfat = sym("regfat"), handle = sym("handle"), globals = sym("globals");
    unreg = sym("unreg");
  }
  std::string hex() const {
    std::string s;
    for (const Chunk& c : obj.sections[text].data)
      for (std::byte b : c.bytes) s += fmt::format("{:02x}", std::to_integer<unsigned>(b));
    return s;
  }
  bool has_reloc(std::uint64_t off, std::uint32_t type, std::uint32_t sym, std::int64_t addend) const {
    for (const Reloc& r : obj.relocs)
      if (r.offset == off && r.type == type && r.symbol == sym && r.addend == addend) return true;
    return false;
  }
};

}  // namespace

TEST_CASE("x86-64 System V straight-line stub equals llvm-mc's bytes") {
  Fixture f;
  CodeEmitter e(f.obj, f.text, {CodeArch::X86_64, false});
  const Step steps[] = {{StepKind::CallWithAddress, f.reg, f.desc},
                        {StepKind::CallWeakWithAddress, f.info, f.inf},
                        {StepKind::CallSaveHandle, f.regfat, f.wrapper, f.handle},
                        {StepKind::CallWithHandle, f.globals},
                        {StepKind::CallWithLoaded, f.unreg, f.handle}};
  e.straight_function(f.fn, steps);
  CHECK(f.hex() ==
        "53488d3d00000000e800000000488b05000000004885c00f8409000000488d3d00000000ffd0488d3d00000000e800000000"
        "4889c3488905000000004889dfe800000000488b3d00000000e8000000005bc3");
  CHECK(f.has_reloc(4, 2, f.desc, -4));     // R_X86_64_PC32
  CHECK(f.has_reloc(9, 4, f.reg, -4));      // R_X86_64_PLT32
  CHECK(f.has_reloc(16, 9, f.info, -4));    // R_X86_64_GOTPCREL
  CHECK(f.obj.symbols[f.fn].type == SymbolType::Func);
  CHECK(f.obj.symbols[f.fn].size == 82);
}

TEST_CASE("x86-64 Windows straight-line stub equals llvm-mc's bytes") {
  Fixture f;
  CodeEmitter e(f.obj, f.text, {CodeArch::X86_64, true});
  const Step steps[] = {{StepKind::CallSaveHandle, f.regfat, f.wrapper, f.handle},
                        {StepKind::CallWithHandle, f.globals},
                        {StepKind::CallWithLoaded, f.unreg, f.handle}};
  e.straight_function(f.fn, steps);
  CHECK(f.hex() ==
        "534883ec20488d0d00000000e8000000004889c3488905000000004889d9e800000000488b0d00000000e8000000004883c420"
        "5bc3");
  CHECK(f.has_reloc(8, 4, f.wrapper, -4));  // IMAGE_REL_AMD64_REL32 (the COFF writer stores A+4 = 0)
}

TEST_CASE("AArch64 straight-line stub equals llvm-mc's bytes") {
  Fixture f;
  CodeEmitter e(f.obj, f.text, {CodeArch::AArch64, false});
  const Step steps[] = {{StepKind::CallWithAddress, f.reg, f.desc},
                        {StepKind::CallWeakWithAddress, f.info, f.inf},
                        {StepKind::CallSaveHandle, f.regfat, f.wrapper, f.handle},
                        {StepKind::CallWithHandle, f.globals},
                        {StepKind::CallWithLoaded, f.unreg, f.handle}};
  e.straight_function(f.fn, steps);
  CHECK(f.hex() ==
        "fd7bbea9fd030091f30b00f900000090000000910000009408000090080140f9880000b4000000900000009100013fd6000000"
        "900000009100000094f30300aa08000090000100f9e00313aa0000009408000090000140f900000094f30b40f9fd7bc2a8c003"
        "5fd6");
  CHECK(f.has_reloc(12, 275, f.desc, 0));  // R_AARCH64_ADR_PREL_PG_HI21
  CHECK(f.has_reloc(16, 277, f.desc, 0));  // R_AARCH64_ADD_ABS_LO12_NC
  CHECK(f.has_reloc(20, 283, f.reg, 0));   // R_AARCH64_CALL26
  CHECK(f.has_reloc(24, 311, f.info, 0));  // R_AARCH64_ADR_GOT_PAGE
  CHECK(f.has_reloc(28, 312, f.info, 0));  // R_AARCH64_LD64_GOT_LO12_NC
}

TEST_CASE("ppc64le straight-line stub equals llvm-mc's bytes") {
  Fixture f;
  CodeEmitter e(f.obj, f.text, {CodeArch::Ppc64le, false});
  const Step steps[] = {{StepKind::CallWithAddress, f.reg, f.desc},
                        {StepKind::CallWeakWithAddress, f.info, f.inf},
                        {StepKind::CallSaveHandle, f.regfat, f.wrapper, f.handle},
                        {StepKind::CallWithHandle, f.globals},
                        {StepKind::CallWithLoaded, f.unreg, f.handle}};
  e.straight_function(f.fn, steps);
  CHECK(f.hex() ==
        "00004c3c00004238a602087cf8ffe1fb100001f8d1ff21f8180041f80000623c0000633801000048000000600000823d00008c"
        "e900002c28180082410000623c00006338a603897d2104804e180041e80000623c000063380100004800000060781b7f7c0000"
        "823c000064f878fbe37f01000048000000600000623c000063e8010000480000006030002138100001e8f8ffe1eba603087c20"
        "00804e");
  const std::uint32_t toc = static_cast<std::uint32_t>(f.obj.symbols.size() - 1);
  CHECK(f.obj.symbols[toc].name == ".TOC.");
  CHECK(f.has_reloc(0, 252, toc, 0));      // R_PPC64_REL16_HA .TOC.
  CHECK(f.has_reloc(4, 250, toc, 4));      // R_PPC64_REL16_LO .TOC.+4
  CHECK(f.has_reloc(44, 17, f.info, 0));   // R_PPC64_GOT16_HA
  CHECK(f.has_reloc(48, 59, f.info, 0));   // R_PPC64_GOT16_LO_DS
  CHECK(f.obj.symbols[f.fn].elf_other_flags == 0x60);  // local entry 8 bytes in
}

// SYCL's descriptor_reg/unreg: callee(&sym, size), a size that fits 32 bits and one that does not.
TEST_CASE("CallWithAddressAndValue equals llvm-mc's bytes on every architecture") {
  struct Case {
    CodeArch arch;
    bool coff;
    std::uint64_t small, large;
    const char* hex;
  };
  const Case cases[] = {
      {CodeArch::X86_64, false, 0x1234, 0x123456789a,
       "53488d3d00000000be34120000e800000000488d3d0000000048be9a78563412000000e8000000005bc3"},
      {CodeArch::X86_64, true, 0x1234, 0x123456789a,
       "534883ec20488d0d00000000ba34120000e800000000488d0d0000000048ba9a78563412000000e8000000004883c4205bc3"},
      {CodeArch::AArch64, false, 0x1234, 0x123456789a,
       "fd7bbea9fd030091f30b00f90000009000000091814682d200000094000000900000009141138fd2c18aa6f24102c0f200000094"
       "f30b40f9fd7bc2a8c0035fd6"},
      {CodeArch::Ppc64le, false, 0x12345, 0x123456789abcde,
       "00004c3c00004238a602087cf8ffe1fb100001f8d1ff21f8180041f80000623c000063380100803c452384600100004800000060"
       "0000623c000063381200803c56348460c60784789a788464debc8460010000480000006030002138100001e8f8ffe1eba603087c"
       "2000804e"},
  };
  for (const Case& c : cases) {
    Fixture f;
    CodeEmitter e(f.obj, f.text, {c.arch, c.coff});
    const Step steps[] = {{StepKind::CallWithAddressAndValue, f.reg, f.desc, 0, c.small},
                          {StepKind::CallWithAddressAndValue, f.reg, f.desc, 0, c.large}};
    e.straight_function(f.fn, steps);
    CAPTURE(static_cast<int>(c.arch));
    CHECK(f.hex() == c.hex);
  }
}

TEST_CASE("the registration loop needs its function and variable callees") {
  Fixture f;
  CodeEmitter e(f.obj, f.text, {CodeArch::X86_64, false});
  CHECK_THROWS_WITH_AS(e.globals_loop(f.fn, f.desc, f.desc, EntryLayout{}, RegistrationCallees{}),
                       "internal error: the registration loop needs the function and variable callees", Error);
}
