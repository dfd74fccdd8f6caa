// offloadtool split: what AMD's rocm-kpack splitter does, natively. Each HIP
// binary is rewritten as the splitter rewrites it: an ELF shared library or
// executable with .hip_fatbin by linked_elf.cpp's kpack_linked_elf (the
// .rocm_kpack_ref marker and its segment, HIPK records, .hip_fatbin NOBITS
// with its pages cut), a PE image (DLL, EXE) with .hip_fat by pe_image.cpp's
// kpack_pe_image (the .kpackrf section appended, HIPK records, .hip_fat's
// whole pages cut from its raw data); its code objects go to one .kpack
// archive per architecture (formats/kpack.h's writer), in AMD's installed
// layout:
//
//   OUT/lib/libfoo.so                      marker {kpack_search_paths: ["../.kpack/NAME_@GFXARCH@.kpack"],
//                                                  kernel_name: "lib/libfoo.so"}
//   OUT/.kpack/NAME_gfx1100.kpack          TOC keys "lib/libfoo.so#<i>": the code objects of
//   OUT/.kpack/NAME_gfx90a:xnack-.kpack    the bundle record i registers
//
// A file given alone lands at OUT/<its name>; a directory is rewritten as a
// tree (prune/tree.h's machinery: other files cloned, links kept, the new tree
// renamed into place when complete). Knows nothing of command lines.
#pragma once

#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "formats/kpack.h"
#include "support/bytes.h"

namespace ot {
class InputFile;
}

namespace ot::prune {

// What kpack_linked_elf or kpack_pe_image did to one file.
struct KpackedBinary {
  std::uint64_t records = 0;      // HIPF records made HIPK
  std::uint64_t marker_addr = 0;  // the marker's address (ELF: .rocm_kpack_ref; PE: ImageBase + RVA of .kpackrf)
  std::uint64_t pages_cut = 0;    // 4 KiB pages of .hip_fatbin (.hip_fat) cut out of the file
  std::vector<std::uint64_t> record_bundles;  // per record, the bundle of .hip_fatbin it registers
  std::uint64_t size_before = 0, size_after = 0;
  std::vector<std::string> notes;  // where this differs from AMD's splitter, and why
};

// The linked ELF file `in` (a HIP shared library or executable; `file` names
// it in errors) rewritten with `marker` (formats::write_kpack_ref's bytes) as
// AMD's splitter rewrites it, handed to `sink` in order (pieces of in.bytes()
// are ranges of the input). Each record carries its position i as its index;
// the bundle it registers (among `bundles`, their offsets in .hip_fatbin in
// order) is in record_bundles[i]: the archives key that bundle's code objects
// "#<i>". Everything is checked before the first byte.
KpackedBinary kpack_linked_elf(const InputFile& in, Bytes marker, std::span<const std::uint64_t> bundles,
                               const std::string& file, const codec::Sink& sink);
// The same for a PE32+ image (a DLL or EXE with .hip_fat and .hipFatB), as
// AMD's splitter rewrites it (coff/kpack_transform.py), `bundles` the offsets
// of the bundles in .hip_fat: prune/pe_image.cpp's PePruner::kpack.
KpackedBinary kpack_pe_image(const InputFile& in, Bytes marker, std::span<const std::uint64_t> bundles,
                             const std::string& file, const codec::Sink& sink);

struct SplitOptions {
  std::string name;  // the archives' group name and file prefix (AMD's artifact prefix: "blas_lib")
  formats::KpackScheme scheme = formats::KpackScheme::None;
  // The folder, relative to the output's top, whose .kpack/ holds the archives
  // and from which the binaries' kernel names are taken (AMD's install
  // prefix: "opt/rocm"); every HIP binary must lie under it. Unset: the top
  // for folders and files; for a package, the install prefix of its first HIP
  // binary, the folders before the first lib, lib64, lib32 or bin of its path
  // (usr/lib/x86_64-linux-gnu/librocrand.so.1: "usr"), else its folder (a
  // wheel's demok/libk.so: "demok"), so that a .deb's archives go to
  // /usr/.kpack, not to /.kpack, and a wheel's stay in its package's folder.
  std::optional<std::string> root;
};

struct SplitFile {
  std::string path;  // in the output, relative to it
  KpackedBinary binary;
  std::uint64_t code_objects = 0;
};
struct SplitArchive {
  std::string path;  // relative to the output: "<root>/.kpack/NAME_gfx1100.kpack"
  std::string arch;
  std::uint64_t kernels = 0, size = 0;
};
struct SplitReport {
  std::vector<SplitFile> files;        // the HIP binaries rewritten, in tree order
  std::vector<SplitArchive> archives;  // sorted by architecture
  std::vector<std::string> notes = {};  // what the user should know
};

// Splits `inputs` (files and directories) into the new folder `out_dir`
// (which must not exist; built beside it and renamed into place when
// complete, so that a failure leaves nothing). A file that is no HIP binary
// is copied; an input without any HIP binary is an error.
SplitReport split(const std::vector<std::string>& inputs, const std::string& out_dir, const SplitOptions& options);

}  // namespace ot::prune
