// offloadtool wrap: write a host relocatable object (ELF or COFF) that embeds
// device images and registers them with the offload runtime at start-up.
// A thin driver over wrap/wrap.h; no LLVM, assembler or compiler involved.
#include <CLI/CLI.hpp>

#include "cli/diagnostics.h"
#include "cli/run.h"
#include "cli/version.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"
#include "wrap/wrap.h"

namespace ot::tools {

int run_wrap(const cli::Invocation& inv) {
  CLI::App app{
      "Write a host object file (ELF or COFF, no LLVM needed) that embeds device images and registers\n"
      "them with the offload runtime when the program starts.\n"
      "  openmp: __tgt_register_lib with a __tgt_bin_desc (scheme llvm19: images as OffloadBinaries in\n"
      "          .llvm.offloading, as clang-linker-wrapper 19; scheme llvm14: raw images, as\n"
      "          clang-offload-wrapper 14). --offload-arch adds .offload_arch_list and\n"
      "          __tgt_register_image_info calls (skipped at run time when the runtime lacks it).\n"
      "  cuda:   one fat binary, registered with __cudaRegisterFatBinary and every entry of\n"
      "          cuda_offloading_entries.\n"
      "  hip:    one offload bundle, or device code objects with one --offload-arch each (bundled\n"
      "          here, 4096-aligned), registered with __hipRegisterFatBinary.\n"
      "Hosts: x86_64 (ELF; COFF for *-windows-msvc and *-windows-gnu), aarch64 and powerpc64le (ELF)."};
  app.name(inv.prog);
  app.set_version_flag("--version", cli::version_text);
  std::string kind = "openmp", triple, output, scheme = "llvm19", entries = "llvm19";
  std::vector<std::string> images, archs;
  app.add_option("--kind", kind, "offload kind: openmp, cuda or hip (default openmp)")
      ->check(CLI::IsMember({"openmp", "cuda", "hip"}));
  app.add_option("--target,--host-triple", triple, "host target triple of the object")->required();
  app.add_option("--offload-arch", archs,
                 "target ID of each image, in image order (repeat once per image, or not at all)")
      ->allow_extra_args(false);
  app.add_option("--scheme", scheme, "OpenMP registration scheme: llvm19 (default) or llvm14")
      ->check(CLI::IsMember({"llvm14", "llvm19"}));
  app.add_option("--entries", entries,
                 "offload entry table layout: llvm19 (<kind>_offloading_entries, 32-byte entries; default) or\n"
                 "llvm20 (llvm_offload_entries, 56-byte entries filtered by kind)")
      ->check(CLI::IsMember({"llvm19", "llvm20"}));
  bool compress = false;
  int level = 3;
  app.add_flag("--compress", compress, "HIP: compress the offload bundle built from device images (CCOB, zstd)");
  app.add_option("--compression-level", level, "zstd level for --compress (default 3, as LLVM)")
      ->check(CLI::Range(-7, 22));
  app.add_option("-o,--output", output, "output object file")->required();
  app.add_option("images", images, "device images (OpenMP), or the fat binary (CUDA, HIP)")->required();

  return run_native(app, inv, [&] {
    wrap::Options o;
    o.kind = wrap::parse_kind(kind);
    o.triple = triple;
    o.scheme = scheme == "llvm14" ? wrap::OpenMPScheme::Llvm14 : wrap::OpenMPScheme::Llvm19;
    o.entries = entries == "llvm20" ? wrap::EntryVersion::V1 : wrap::EntryVersion::Legacy;
    o.compress = compress;
    o.compression_level = level;
    wrap::host_target(triple);  // an unsupported triple is reported before any input is read
    if (!archs.empty() && archs.size() != images.size())
      fail("", "{} --offload-arch values for {} images: give one per image or none", archs.size(), images.size());
    for (std::size_t i = 0; i < images.size(); ++i)
      o.images.push_back({images[i], InputFile::open(images[i]), archs.empty() ? "" : archs[i]});
    wrap::write_wrapper(o, output);
    return 0;
  });
}

}  // namespace ot::tools
