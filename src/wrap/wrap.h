// The wrapping engine: device images in, one finished host relocatable object
// out, holding the images, the runtime's descriptor tables, the constructor
// and destructor code and their relocations (llvm-behaviour.md section 4).
//
// Schemes:
//   OpenMP, LLVM 14 (clang-offload-wrapper): raw images, __tgt_bin_desc, a
//     dummy entry in omp_offloading_entries, priority-1 constructor and
//     destructor calling __tgt_register_lib / __tgt_unregister_lib; with an
//     offload arch per image, __offload_arch.N strings in .offload_arch_list,
//     __tgt_image_info records and __tgt_register_image_info calls.
//   OpenMP, LLVM 19 (clang-linker-wrapper): every image embedded as an
//     OffloadBinary in .llvm.offloading (8-aligned), image start/end pointing
//     at the inner image, priority-101 constructor that registers and then
//     calls atexit(unregister).
//   CUDA / HIP (LLVM 19): the fat binary in .nv_fatbin / .hip_fatbin, the
//     {magic, 1, image, null} wrapper in .nvFatBinSegment / .hipFatBinSegment,
//     a priority-101 constructor registering the fat binary and every entry of
//     cuda_offloading_entries / hip_offloading_entries, atexit(unregister).
//   The entry ABI (target::EntryAbi) picks where the host's entries are and
//     their layout: 32-byte entries in <kind>_offloading_entries (LLVM 19), or
//     56-byte entries in llvm_offload_entries filtered by kind (LLVM 21+).
//   as_given (llvm-offload-wrapper 22): every input embedded byte for byte;
//     OpenMP image = the inner image of an OffloadBinary, else the whole input;
//     CUDA/HIP: the one input is the fat binary; empty inputs are accepted.
//   SYCL (llvm-offload-wrapper 23): the first input, whatever it holds, as
//     .sycl_offloading.binary in .llvm.offloading (aligned as LLVM aligns a
//     global without an alignment: 16 above 16 bytes), a priority-1
//     constructor calling __sycl_register_lib(image, size) and a priority-1
//     destructor calling __sycl_unregister_lib(image, size); no entry table.
//   relocatable (llvm-offload-wrapper 23 --relocatable): OpenMP images go to
//     .llvm.offloading.relocatable instead; the other kinds ignore it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "object/relocatable.h"
#include "object/wrapper_codegen.h"
#include "support/mapped_file.h"
#include "target/llvm_release.h"

namespace ot::wrap {

enum class Kind : std::uint8_t { OpenMP, Cuda, Hip, Sycl };
enum class OpenMPScheme : std::uint8_t { Llvm14, Llvm19 };

// "openmp" / "cuda" / "hip" / "sycl"; throws ot::Error naming the valid kinds otherwise.
Kind parse_kind(std::string_view name);

// What the host triple selects: object format, code generator, ELF machine.
struct HostTarget {
  std::string triple;
  object::CodeArch arch = object::CodeArch::X86_64;
  bool coff = false;
  bool mingw = false;  // COFF with the GNU environment: .ctors and -exclude-symbols directives
  std::uint16_t elf_machine = 0;
  std::uint32_t elf_flags = 0;
};

// Throws ot::Error "'<triple>': unsupported target triple" for a triple whose
// architecture is unknown, and a message naming the supported hosts for a
// known architecture or object format the wrapper has no code for.
HostTarget host_target(const std::string& triple);

struct Image {
  std::string path;  // as given, for messages
  std::shared_ptr<const InputFile> file;
  std::string offload_arch;  // target ID, or empty
};

struct Options {
  Kind kind = Kind::OpenMP;
  std::string triple;
  OpenMPScheme scheme = OpenMPScheme::Llvm19;
  target::EntryAbi entries = target::EntryAbi::PerKind32;
  // llvm-offload-wrapper: inputs embedded as given (no OffloadBinary framing of
  // raw images, no HIP bundling, empty inputs accepted); see the top of this file.
  bool as_given = false;
  // llvm-offload-wrapper 23 --relocatable: OpenMP images in .llvm.offloading.relocatable.
  bool relocatable = false;
  std::vector<Image> images;
  // HIP only, when `images` are device code objects rather than one ready
  // offload bundle: the bundle is built here (align 4096, as clang-linker-wrapper
  // does) and, with `compress`, written as a CCOB v2 (zstd, LLVM's bytes).
  bool compress = false;
  int compression_level = 3;
};

// Validates the inputs (at least one image, none empty, offload archs given
// for all images or none, CUDA: exactly one fat binary) and lays the object
// out. Throws ot::Error naming the image for bad input.
object::ObjectBytes build_wrapper(const Options& options);

// build_wrapper + an atomic write of `output` (nothing is left on failure).
void write_wrapper(const Options& options, const std::string& output);

}  // namespace ot::wrap
