// offloadtool wrap: write a host relocatable object (ELF or COFF) that embeds
// device images and registers them with the offload runtime at start-up.
// A thin driver over wrap/wrap.h; no LLVM, assembler or compiler involved.
#include <CLI/CLI.hpp>

#include <memory>

#include "cli/diagnostics.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"
#include "wrap/wrap.h"

namespace ot::tools {

namespace {

struct WrapOptions {
  std::string kind = "openmp", triple, output, scheme = "llvm19";
  std::string entries;  // empty: the impersonated release's entry ABI
  std::vector<std::string> images, archs;
  bool compress = false, relocatable = false;
  int level = 3;
};

// --entries: the ABI's name; llvm19 / llvm20 are the names earlier versions took.
target::EntryAbi entry_abi(const std::string& name, target::LlvmRelease release) {
  if (name.empty()) return target::traits(release).entries;
  return name == "per-kind-32" || name == "llvm19" ? target::EntryAbi::PerKind32 : target::EntryAbi::Unified56;
}

int wrap_images(const WrapOptions& w, target::LlvmRelease release) {
  wrap::Options o;
  o.kind = wrap::parse_kind(w.kind);
  o.triple = w.triple;
  o.scheme = w.scheme == "llvm14" ? wrap::OpenMPScheme::Llvm14 : wrap::OpenMPScheme::Llvm19;
  o.entries = entry_abi(w.entries, release);
  o.compress = w.compress;
  o.compression_level = w.level;
  o.relocatable = w.relocatable;
  wrap::host_target(w.triple);  // an unsupported triple is reported before any input is read
  if (w.relocatable && (o.kind != wrap::Kind::OpenMP || o.scheme != wrap::OpenMPScheme::Llvm19))
    fail("", "--relocatable applies to OpenMP images in .llvm.offloading (--kind openmp, --scheme llvm19)");
  if (o.kind == wrap::Kind::Sycl && w.images.size() != 1)
    fail(w.images[1], "SYCL wraps exactly one image; {} files were given", w.images.size());
  if (!w.archs.empty() && w.archs.size() != w.images.size())
    fail("", "{} --offload-arch values for {} images: give one per image or none", w.archs.size(), w.images.size());
  for (std::size_t i = 0; i < w.images.size(); ++i)
    o.images.push_back({w.images[i], InputFile::open(w.images[i]), w.archs.empty() ? "" : w.archs[i]});
  wrap::write_wrapper(o, w.output);
  return 0;
}

}  // namespace

cli::AppletBody define_wrap(CLI::App& app) {
  auto o = std::make_shared<WrapOptions>();
  app.description(
      "Write a host object file (ELF or COFF, no LLVM needed) that embeds device images and registers\n"
      "them with the offload runtime when the program starts.\n"
      "  openmp: __tgt_register_lib with a __tgt_bin_desc (scheme llvm19: images as OffloadBinaries in\n"
      "          .llvm.offloading, as clang-linker-wrapper 19; scheme llvm14: raw images, as\n"
      "          clang-offload-wrapper 14). --offload-arch adds .offload_arch_list and\n"
      "          __tgt_register_image_info calls (skipped at run time when the runtime lacks it).\n"
      "  cuda:   one fat binary, registered with __cudaRegisterFatBinary and every CUDA entry of\n"
      "          the host's entry table (--entries).\n"
      "  hip:    one offload bundle, or device code objects with one --offload-arch each (bundled\n"
      "          here, 4096-aligned), registered with __hipRegisterFatBinary.\n"
      "  sycl:   one image (SPIR-V, an OffloadBinary: any bytes) in .llvm.offloading, registered with\n"
      "          __sycl_register_lib(image, size) and unregistered with __sycl_unregister_lib, as\n"
      "          llvm-offload-wrapper 23 does.\n"
      "Hosts: x86_64 (ELF; COFF for *-windows-msvc and *-windows-gnu), aarch64 and powerpc64le (ELF).");
  app.add_option("--kind", o->kind, "offload kind: openmp, cuda, hip or sycl (default openmp)")
      ->check(CLI::IsMember({"openmp", "cuda", "hip", "sycl"}));
  app.add_option("--target,--host-triple", o->triple, "host target triple of the object")->required();
  app.add_option("--offload-arch", o->archs,
                 "target ID of each image, in image order (repeat once per image, or not at all)")
      ->allow_extra_args(false);
  app.add_option("--scheme", o->scheme, "OpenMP registration scheme: llvm19 (default) or llvm14")
      ->check(CLI::IsMember({"llvm14", "llvm19"}));
  app.add_option("--entries", o->entries,
                 "where the host's offload entries are and their layout: per-kind-32 (32-byte entries in\n"
                 "<kind>_offloading_entries: clang 19) or unified-56 (56-byte entries in llvm_offload_entries,\n"
                 "filtered by kind: clang 21+); default: the LLVM release impersonated (19: per-kind-32,\n"
                 "22 and 23: unified-56); llvm19 and llvm20 are older names of the two")
      ->check(CLI::IsMember({"per-kind-32", "unified-56", "llvm19", "llvm20"}));
  app.add_flag("--relocatable", o->relocatable,
               "OpenMP: the images in .llvm.offloading.relocatable, for a program linked later with\n"
               "ld -r (as llvm-offload-wrapper 23 --relocatable)");
  app.add_flag("--compress", o->compress, "HIP: compress the offload bundle built from device images (CCOB, zstd)");
  app.add_option("--compression-level", o->level, "zstd level for --compress (default 3, as LLVM)")
      ->check(CLI::Range(-7, 22));
  app.add_option("-o,--output", o->output, "output object file")->required();
  app.add_option("images", o->images, "device images (OpenMP), the fat binary (CUDA, HIP) or the image (SYCL)")
      ->required();
  return [o](const cli::Invocation& inv) { return wrap_images(*o, inv.release); };
}

}  // namespace ot::tools
