// libFuzzer: target-ID and bundle-ID parsing (LLVM 19's view and compat's),
// canonical form and both compatibility rule sets. Input: "<code object>\n<target>";
// the same bytes also go to the AMDGPU code object header reader.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compat/code_object.h"
#include "compat/target_spec.h"
#include "support/error.h"
#include "target/bundle_id.h"
#include "target/target_id.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto co = ot::compat::amdgpu_code_object(ot::as_bytes(in)); co && !co->target_id.empty())
    (void)ot::compat::parse_spec(co->target_id);  // a header's target ID always parses
  auto nl = in.find('\n');
  std::string_view a = in.substr(0, nl);
  std::string_view b = nl == std::string_view::npos ? a : in.substr(nl + 1);

  // The bundler's view: never throws.
  ot::target::BundleId ca(a), cb(b);
  (void)ca.str();
  ot::target::FeatureMap features;
  (void)ot::target::parse_target_id(ca.triple(), ca.target_id(), &features);
  (void)ot::target::is_code_object_compatible(ca, cb, true);
  // LLVM 22's rules: never throw (22's standard form is no fixed point:
  // "hip-amdgcn-amdhsa--gfx906" gives "...-amdhsa-gfx906-", then "...-amdhsa--"),
  // and a spelling suggested instead of a lossy one is never lossy itself.
  const auto five = ot::target::BundleIdRules::FivePieces;
  ot::target::BundleId fa(a, five), fb(b, five);
  (void)fa.str();
  (void)ot::target::is_code_object_compatible(fa, fb, true);
  if (auto lossy = ot::target::lossy_under_five_pieces(a);
      lossy && !lossy->use_instead.empty() && ot::target::lossy_under_five_pieces(lossy->use_instead))
    __builtin_trap();

  try {
    ot::compat::TargetSpec sa = ot::compat::parse_spec(a);
    // The canonical form parses back to itself.
    std::string canonical = sa.canonical();
    if (ot::compat::parse_spec(canonical).canonical() != canonical) __builtin_trap();
    ot::compat::TargetSpec sb = ot::compat::parse_spec(b);
    auto runtime = ot::compat::check(sa, sb);
    // A verdict always comes with its reason, under the runtimes' rules and each release's bundler's.
    if (!runtime.compatible && runtime.reason().empty()) __builtin_trap();
    for (const ot::target::ReleaseTraits& llvm : ot::target::supported_releases()) {
      auto bundler = ot::compat::check(sa, sb, {ot::compat::Rules::Bundler, true, llvm.release});
      if (!bundler.compatible && bundler.reason().empty()) __builtin_trap();
    }
  } catch (const ot::Error&) {
  }
  return 0;
}
