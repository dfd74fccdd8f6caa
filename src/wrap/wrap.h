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
//   EntryVersion::V1 switches the entry tables to LLVM 20+'s
//     llvm_offload_entries with 56-byte entries filtered by kind.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "object/relocatable.h"
#include "object/wrapper_codegen.h"
#include "support/mapped_file.h"

namespace ot::wrap {

enum class Kind : std::uint8_t { OpenMP, Cuda, Hip };
enum class OpenMPScheme : std::uint8_t { Llvm14, Llvm19 };
enum class EntryVersion : std::uint8_t {
  Legacy,  // LLVM <= 19: 32-byte {addr, name, size, flags, data} in <kind>_offloading_entries
  V1,      // LLVM 20+: 56-byte {reserved, version, kind, flags, addr, name, size, data, aux} in llvm_offload_entries
};

// "openmp" / "cuda" / "hip"; throws ot::Error naming the valid kinds otherwise.
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
  EntryVersion entries = EntryVersion::Legacy;
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
