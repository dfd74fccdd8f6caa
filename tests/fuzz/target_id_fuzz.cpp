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

  try {
    ot::compat::TargetSpec sa = ot::compat::parse_spec(a);
    // The canonical form parses back to itself.
    std::string canonical = sa.canonical();
    if (ot::compat::parse_spec(canonical).canonical() != canonical) __builtin_trap();
    ot::compat::TargetSpec sb = ot::compat::parse_spec(b);
    auto runtime = ot::compat::check(sa, sb);
    auto bundler = ot::compat::check(sa, sb, {ot::compat::Rules::Bundler19, true});
    // A verdict always comes with its reason.
    if (!runtime.compatible && runtime.reason().empty()) __builtin_trap();
    if (!bundler.compatible && bundler.reason().empty()) __builtin_trap();
  } catch (const ot::Error&) {
  }
  return 0;
}
