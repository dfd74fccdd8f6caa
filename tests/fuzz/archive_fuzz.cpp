// libFuzzer: the archive reader and -type=a unbundling (member bundles,
// compressed members, host objects, device-archive writing), plus the naming
// rules of --extract-dir on every member name and bundle ID found.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "archive/ar_reader.h"
#include "bundler/archive_unbundle.h"
#include "bundler/extract_dir.h"
#include "support/output_file.h"

namespace {

void check_safe(const std::string& name) {
  const std::string safe = ot::bundler::safe_file_name(name);
  if (safe.empty() || safe == "." || safe == ".." || safe.find('/') != std::string::npos ||
      safe.find('\0') != std::string::npos)
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  std::vector<ot::archive::Member> members;
  try {
    members = ot::archive::read_members(bytes, "fuzz.a");
  } catch (const ot::Error&) {
    return 0;
  }
  for (const auto& m : members) {
    if (m.offset > size || m.data.size() > size - m.offset) __builtin_trap();  // promised bounds
    check_safe(m.name);
    check_safe(ot::bundler::device_member_name(m.name, "hip-amdgcn-amd-amdhsa--gfx906:xnack+"));
  }

  static const std::string path = "/tmp/archive_fuzz." + std::to_string(::getpid()) + ".a";
  ot::write_file_atomic(path, bytes);
  ot::bundler::Config c;
  c.type = "a";
  c.inputs = {path};
  c.outputs = {"/dev/null", "/dev/null", "/dev/null"};
  c.allow_missing_bundles = true;
  const std::vector<ot::target::BundleId> targets = {ot::target::BundleId("host-x86_64-unknown-linux-gnu-"),
                                                     ot::target::BundleId("hip-amdgcn-amd-amdhsa--gfx906:xnack+"),
                                                     ot::target::BundleId("openmp-nvptx64-nvidia-cuda--sm_70")};
  try {
    c.check_input_archive = size % 2 == 0;
    ot::bundler::unbundle_archive(c, targets);
  } catch (const ot::Error&) {
  } catch (const ot::LlvmError&) {
  }
  ::unlink(path.c_str());
  return 0;
}
