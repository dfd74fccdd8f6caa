// The llvm-offload-wrapper personality: LLVM 22's command line (--kind=openmp|
// cuda|hip required, -o, --triple defaulting to the host's triple, one or more
// inputs), its input rules (any bytes, empty ones too; OpenMP: an
// OffloadBinary's inner image or the whole input, one image per input;
// CUDA/HIP: exactly one input, the fat binary or bundle) and its messages.
// LLVM 23's adds --kind=sycl (the first input, whatever it holds, registered
// with __sycl_register_lib; the others are read, not wrapped) and
// --relocatable (OpenMP images in .llvm.offloading.relocatable; ignored for
// the other kinds).
// Deliberately different from LLVM 22: the output is a finished host object
// file (ELF or COFF) doing what 22's wrapper module does, not LLVM bitcode; a
// note on stderr says so when -o names a .bc or .ll file. The entry ABI is the
// impersonated release's (target::traits(r).entries): 22's llvm_offload_entries,
// or under release 19 (llvm-offload-wrapper-19) 19's <kind>_offloading_entries.
#include <fmt/format.h>

#include <algorithm>

#include "cli/diagnostics.h"
#include "cli/llvm_cl.h"
#include "cli/llvm_tools.h"
#include "cli/run.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "tools/tools.h"
#include "wrap/wrap.h"

namespace ot::tools {

namespace {

// LLVM's default target triple on the machine offloadtool was built for (Debian's spellings).
constexpr std::string_view kHostTriple =
#if defined(__aarch64__)
    "aarch64-unknown-linux-gnu";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    "powerpc64le-unknown-linux-gnu";
#else
    "x86_64-pc-linux-gnu";
#endif

}  // namespace

int run_llvm_offload_wrapper(const cli::Invocation& inv) {
  const cli::llvmcl::Tool& tool = cli::llvmcl::llvm_offload_wrapper_tool(inv.release);
  auto parsed = cli::llvmcl::parse(tool, inv);
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  const cli::llvmcl::Parsed& p = std::get<cli::llvmcl::Parsed>(parsed);
  return cli::run_guarded(inv.argv0, [&] {
    wrap::Options o;
    o.kind = wrap::parse_kind(p.value("kind").value_or(""));
    o.scheme = wrap::OpenMPScheme::Llvm19;
    o.entries = target::traits(inv.release).entries;
    o.as_given = true;
    // Only 23's command line has it.
    o.relocatable = std::ranges::any_of(tool.options, [](const auto& opt) { return opt.name == "relocatable"; }) &&
                    p.flag("relocatable");
    o.triple = p.value("triple").value_or(std::string(kHostTriple));
    // LLVM reads every input first, then checks their number, then opens the output.
    for (const std::string& path : p.positionals()) o.images.push_back({path, InputFile::open(path), ""});
    if ((o.kind == wrap::Kind::Cuda || o.kind == wrap::Kind::Hip) && o.images.size() != 1)
      fail("", "CUDA / HIP offloading uses a single fatbinary or offload bundle");
    const std::string output = p.value("o").value_or("");
    if (output.empty()) fail("", "No such file or directory");
    // "-" is a file of that name for LLVM's ToolOutputFile here, not standard output.
    object::ObjectBytes bytes = wrap::build_wrapper(o);
    if (output.ends_with(".bc") || output.ends_with(".ll"))
      cli::print_raw(fmt::format("{}: note: {} holds a host object file, not LLVM {}: link it as it is\n", inv.argv0,
                                 output, output.ends_with(".bc") ? "bitcode" : "IR"));
    const std::string path = output == "-" ? "./-" : output;
    OutputFile out = [&] {
      try {
        return OutputFile(path);
      } catch (const Error& e) {  // LLVM 22 prints the strerror alone ("Is a directory")
        if (std::string reason = open_error_reason(e, path); !reason.empty()) throw LlvmError(reason);
        throw;
      }
    }();
    bytes.write_to(out);
    out.commit();
    return 0;
  });
}

}  // namespace ot::tools
