// Finding the offload images in any input, as LLVM 19's extractOffloadBinaries
// does: raw OffloadBinaries (several may follow each other), ELF relocatable
// objects, executables and shared libraries (every SHT_LLVM_OFFLOADING
// section, whatever its name), COFF objects (sections named
// ".llvm.offloading*"), LLVM bitcode (globals in section ".llvm.offloading")
// and `ar` archives (every member, recursively). Anything else holds no
// images. Nothing is copied except what bitcode stores bit-packed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/offload_binary.h"
#include "target/llvm_release.h"

namespace ot {
class InputFile;
}

namespace ot::packager {

struct FoundImage {
  // LLVM's buffer identifier for the binary: the input path for raw binaries
  // and objects, the member name for anything inside an archive. It names the
  // members of a --archive output.
  std::string origin;
  std::string container;  // where it was found: "raw", "section .llvm.offloading", "lib.a(x.o), section ...",
                          // "bitcode global 0 in .llvm.offloading"
  // The bytes the offsets below count in: the input file itself, or for
  // bitcode the decoded initialiser of the global.
  std::shared_ptr<const InputFile> source;
  std::uint32_t version = 0;
  std::uint64_t binary_offset = 0;  // of its OffloadBinary header in `source`
  std::uint64_t binary_size = 0;
  std::uint64_t entry_index = 0;    // inside that binary (version 2 may hold several)
  formats::OffloadEntry entry;      // image_offset counts from the start of `source`
};

enum class Diagnostics {
  Native,  // offloadtool's own messages for every problem
  Llvm19,  // where LLVM's OffloadBinary parser fails, its exact words (as ot::LlvmError); which
           // release's parser: the `release` argument below (formats::llvm_verdict)
};

std::vector<FoundImage> find_offload_images(const std::shared_ptr<const InputFile>& in, Diagnostics diagnostics,
                                            target::LlvmRelease release = target::LlvmRelease::Llvm19);

// The images of the binaries filling `outer`'s image, which starts with the
// OffloadBinary magic (LLVM 23 extracts those instead of the image): read as
// LLVM reads a section, one binary after another. Offsets count in
// outer.source; the container says where it was nested.
std::vector<FoundImage> find_nested_images(const FoundImage& outer, Diagnostics diagnostics,
                                           target::LlvmRelease release);

}  // namespace ot::packager
