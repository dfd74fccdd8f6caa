#include <doctest/doctest.h>

#include <vector>

#include "compat/code_object.h"
#include "support/bytes.h"

using ot::compat::amdgpu_code_object;

TEST_CASE("AMDGPU code object headers name the target ID") {
  // e_flags values as llc 19 writes them (the CLI suite checks every processor).
  auto elf = [](std::uint32_t flags, unsigned abi, std::uint16_t machine = 224) {
    std::vector<std::byte> h(64);
    const char magic[] = "\x7f" "ELF";
    for (int i = 0; i < 4; ++i) h[i] = static_cast<std::byte>(magic[i]);
    h[4] = std::byte{2};
    h[5] = std::byte{1};
    h[8] = static_cast<std::byte>(abi);
    ot::store_le<std::uint16_t>(h.data() + 18, machine);
    ot::store_le<std::uint32_t>(h.data() + 48, flags);
    return h;
  };
  auto id = [&](std::uint32_t flags, unsigned abi) {
    auto t = amdgpu_code_object(elf(flags, abi));
    return t ? t->target_id : std::string("none");
  };
  CHECK(id(0x52f, 3) == "gfx906");                      // v5: xnack any, sramecc any
  CHECK(id(0x73f, 3) == "gfx90a:xnack+");               // xnack on, sramecc any
  CHECK(id(0xe3f, 2) == "gfx90a:sramecc+:xnack-");      // v4: sramecc on, xnack off
  CHECK(id(0x2f, 1) == "gfx906:sramecc-:xnack-");       // v3: clear bits are off
  CHECK(id(0x32f, 1) == "gfx906:sramecc+:xnack+");
  CHECK(id(0x41, 3) == "gfx1100");
  CHECK(id(0x1000151, 4) == "gfx9-generic");
  CHECK(amdgpu_code_object(elf(0x1000151, 4))->generic_version == 1);
  CHECK(id(0x7e, 3).empty());                           // an EF_AMDGPU_MACH nobody knows
  CHECK(id(0x52f, 3) == "gfx906");
  CHECK_FALSE(amdgpu_code_object(elf(0x52f, 3, 62)));   // x86-64
  auto short_header = elf(0x52f, 3);
  short_header.resize(63);
  CHECK_FALSE(amdgpu_code_object(short_header));
}
