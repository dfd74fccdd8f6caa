// libFuzzer: prune_file over any bytes -- bundles, CCOBs, offload binaries,
// objects, archives and linked ELF files (.hip_fatbin, .llvm.offloading) --
// keeping gfx90a. Whatever it accepts, it must write exactly the bytes its
// report counts; everything else must be an ot::Error, never a crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "prune/prune.h"
#include "support/mapped_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ot::prune::Selection keep =
      ot::prune::make_selection(ot::prune::Selection::Mode::Keep, {"gfx90a"}, true);
  auto bytes = reinterpret_cast<const std::byte*>(data);
  auto in = ot::InputFile::from_memory("fuzz.bin", std::vector<std::byte>(bytes, bytes + size));
  std::uint64_t written = 0;
  try {
    ot::prune::Report r = ot::prune::prune_file(*in, keep, "fuzz.bin", [&](ot::Bytes b) { written += b.size(); });
    if (written != r.size_after) __builtin_trap();
  } catch (const ot::Error&) {
  }
  return 0;
}
