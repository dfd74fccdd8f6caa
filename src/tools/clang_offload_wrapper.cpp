// The clang-offload-wrapper personality: LLVM 14's command line (-o,
// -target/--target, positional images, hidden -save-temps and
// -add-omp-offload-notes) plus the documented --offload-arch extension (one
// per following image). Deliberately different from LLVM 14: the output is a
// finished host object file (ELF or COFF) for the target triple, not LLVM
// bitcode, so no LLVM back end is needed to use it; --help says so after
// LLVM's text. Empty images are refused (LLVM 14 wraps them silently).
// The entry range points at the impersonated release's entry ABI (19:
// omp_offloading_entries, 22: llvm_offload_entries), not LLVM 14's.
// -add-omp-offload-notes: LLVM 14 rewrites each ELF image with llvm-objcopy to
// add a .note.openmp section; offloadtool runs no external tools, so it says
// that the images are embedded unchanged (with LLVM's own warning for
// non-ELF images). -save-temps has nothing to keep: no temporary files exist.
#include <cstdio>

#include "cli/diagnostics.h"
#include "cli/llvm_cl.h"
#include "cli/llvm_tools.h"
#include "cli/run.h"
#include "tools/tools.h"
#include "wrap/wrap.h"

namespace ot::tools {

int run_clang_offload_wrapper(const cli::Invocation& inv) {
  auto parsed = cli::llvmcl::parse(cli::llvmcl::kClangOffloadWrapper14, inv);
  // The object-not-bitcode note follows every help text through the tool's
  // extra_help (cli/llvm_tools.cpp), never the version text.
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  const cli::llvmcl::Parsed& p = std::get<cli::llvmcl::Parsed>(parsed);
  return cli::run_guarded(inv.argv0, [&] {
    wrap::Options o;
    o.kind = wrap::Kind::OpenMP;
    o.scheme = wrap::OpenMPScheme::Llvm14;
    // The entry table of the release's host compiler: an object whose range
    // misses the host's entries aborts the first target region.
    o.entries = target::traits(inv.release).entries;
    o.triple = p.value("target").value_or("");
    wrap::host_target(o.triple);  // LLVM 14 checks the triple before reading inputs
    // Each --offload-arch names the architecture of the next positional image.
    std::string pending;
    std::size_t archs = 0;
    for (const cli::llvmcl::Occurrence& occ : p.occurrences()) {
      if (occ.option == "offload-arch") {
        if (!pending.empty()) fail("", "--offload-arch={} is not followed by an input image", pending);
        pending = occ.value;
        ++archs;
      } else if (occ.option.empty()) {
        o.images.push_back({occ.value, InputFile::open(occ.value), pending});
        pending.clear();
      }
    }
    if (!pending.empty()) fail("", "--offload-arch={} is not followed by an input image", pending);
    if (p.flag("add-omp-offload-notes")) {
      for (const wrap::Image& img : o.images) {
        Bytes d = img.file->bytes();
        bool elf = d.size() >= 4 && d[0] == std::byte{0x7f} && d[1] == std::byte{'E'} && d[2] == std::byte{'L'} &&
                   d[3] == std::byte{'F'};
        cli::print_warning(inv.argv0, elf ? fmt::format("{}: ELF notes are not added by this clang-offload-wrapper; "
                                                        "the image is embedded unchanged",
                                                        img.path)
                                          : fmt::format("{} is not an ELF image, so notes cannot be added to it.",
                                                        img.path));
      }
    }
    if (archs != 0 && archs != o.images.size())
      fail("", "{} --offload-arch values for {} images: give one per image or none", archs, o.images.size());
    wrap::write_wrapper(o, p.value("o").value_or(""));
    return 0;
  });
}

}  // namespace ot::tools
