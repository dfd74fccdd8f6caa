#include "compat/target_spec.h"

#include <array>

#include <fmt/format.h>

#include "formats/offload_binary.h"
#include "support/error.h"
#include "target/bundle_id.h"
#include "target/processors.h"
#include "target/target_id.h"
#include "target/triple.h"

namespace ot::compat {
namespace {

using target::find_processor;
using target::parse_nvptx_arch;

// Offload kinds: the bundler's four, and "cuda", which only OffloadBinary
// entries (.llvm.offloading) carry -- LLVM 19's bundler rejects it.
constexpr std::array<std::string_view, 5> kKinds = {"host", "openmp", "hip", "hipv4", "cuda"};

bool is_kind(std::string_view k) {
  for (std::string_view x : kKinds)
    if (x == k) return true;
  return false;
}

[[noreturn]] void bad(std::string_view text, std::string message) {
  throw Error({}, fmt::format("'{}': {}", text, message));
}

std::string_view processor_part(std::string_view id) { return id.substr(0, id.find(':')); }

bool looks_like_processor(std::string_view id) {
  std::string_view p = processor_part(id);
  return find_processor(p) || parse_nvptx_arch(p) || p.starts_with("gfx") || p.starts_with("sm_") ||
         p.starts_with("compute_");
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string unknown_processor(std::string_view name, std::string_view what) {
  std::string msg = fmt::format("unknown {} '{}'", what, name);
  std::string low = lower(name);
  if (low != name && (find_processor(low) || parse_nvptx_arch(low)))
    return msg + fmt::format(" (names are lower case: did you mean '{}'?)", low);
  if (auto near = target::closest_processor(name)) return msg + fmt::format(" (did you mean '{}'?)", *near);
  return msg;
}

std::string supported_features(const target::ProcessorInfo& p) {
  std::string out;
  for (std::string_view f : target::kTargetFeatures)
    if (p.supports(f)) {
      if (!out.empty()) out += ", ";
      out += f;
    }
  return out.empty() ? "none" : out;
}

// The target-ID part: processor and features, checked against `family`
// (None: a bare target ID, whose processor decides the family).
void parse_target_id(std::string_view text, std::string_view id, TargetSpec& s) {
  if (id.empty()) return;
  std::vector<std::string_view> pieces;
  for (std::size_t pos = 0;;) {
    auto colon = id.find(':', pos);
    pieces.push_back(id.substr(pos, colon == std::string_view::npos ? std::string_view::npos : colon - pos));
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  std::string_view proc = pieces.front();
  if (proc.empty()) bad(text, "the target ID has no processor before its first ':'");
  s.processor_given = std::string(proc);

  const target::ProcessorInfo* amd = find_processor(proc);
  auto nv = parse_nvptx_arch(proc);
  if (s.family == Family::None) {
    if (amd) {
      s.family = Family::Amdgpu;
    } else if (nv) {
      s.family = Family::Nvptx;
    } else {
      bad(text, unknown_processor(proc, "processor"));
    }
    s.triple = s.family == Family::Amdgpu ? "amdgcn-amd-amdhsa-" : "nvptx64-nvidia-cuda-";
  }
  if (s.family == Family::Amdgpu) {
    if (!amd) {
      if (nv) bad(text, fmt::format("'{}' is an NVPTX architecture, not an AMDGPU processor", proc));
      bad(text, unknown_processor(proc, "AMDGPU processor"));
    }
    s.processor = std::string(amd->name);
  } else if (s.family == Family::Nvptx) {
    if (!nv) {
      if (amd) bad(text, fmt::format("'{}' is an AMDGPU processor, not an NVPTX architecture", proc));
      bad(text, unknown_processor(proc, "NVPTX architecture"));
    }
    s.processor = std::string(proc);
  } else {
    s.processor = std::string(proc);  // other triples: compared as a plain string, as LLVM does
  }

  for (std::size_t i = 1; i < pieces.size(); ++i) {
    std::string_view piece = pieces[i];
    if (piece.empty()) bad(text, "empty feature (two ':' in a row, or a trailing ':')");
    char sign = piece.back();
    bool known_name = piece == "xnack" || piece == "sramecc";
    if (sign != '+' && sign != '-') {
      if (known_name)
        bad(text, fmt::format("feature '{0}' needs a sign: '{0}+' (on) or '{0}-' (off); leave it out for any", piece));
      bad(text, fmt::format("feature '{}' must end in '+' (on) or '-' (off)", piece));
    }
    std::string_view name = piece.substr(0, piece.size() - 1);
    if (name != "xnack" && name != "sramecc")
      bad(text, fmt::format("unknown feature '{}' (target-ID features are sramecc and xnack)", name));
    if (s.family != Family::Amdgpu)
      bad(text, fmt::format("'{}' takes no target-ID features (only AMDGPU processors have xnack and sramecc)", proc));
    if (!amd->supports(name))
      bad(text, fmt::format("{} does not support the {} feature (its features: {})", amd->name, name,
                            supported_features(*amd)));
    if (!s.features.emplace(std::string(name), sign == '+').second)
      bad(text, fmt::format("feature '{}' is given twice", name));
  }
}

// "<arch>-<vendor>-<os>-<env>" as LLVM 19's 4-argument Triple constructor writes it.
std::string four_field(std::string_view triple_text) {
  target::Triple t(triple_text);
  return target::Triple(t.arch_name(), t.vendor_name(), t.os_name(), t.environment_name()).str();
}

void parse_bundle_id(std::string_view text, TargetSpec& s) {
  auto dash = text.find('-');
  s.kind = std::string(text.substr(0, dash));
  std::string_view rest = dash == std::string_view::npos ? std::string_view() : text.substr(dash + 1);
  if (!is_kind(s.kind)) bad(text, fmt::format("unknown offload kind '{}' (host, hip, hipv4, openmp, cuda)", s.kind));
  if (rest.empty()) bad(text, "a bundle entry ID needs a triple after the offload kind");

  // Dash positions inside `rest`: the triple has at most 4 fields, the target
  // ID follows the 4th dash -- or the 3rd when the triple was written with 3
  // fields ("hip-amdgcn-amd-amdhsa-gfx906"). Unlike LLVM 19, a target ID may
  // itself contain dashes ("gfx10-3-generic").
  std::vector<std::size_t> dashes;
  for (std::size_t i = 0; i < rest.size(); ++i)
    if (rest[i] == '-') dashes.push_back(i);
  std::string_view triple = rest, id;
  if (dashes.size() >= 4) {
    std::string_view id3 = rest.substr(dashes[2] + 1), id4 = rest.substr(dashes[3] + 1);
    bool three = !id4.empty() && !looks_like_processor(id4) &&
                 (find_processor(processor_part(id3)) || parse_nvptx_arch(processor_part(id3)));
    triple = rest.substr(0, dashes[three ? 2 : 3]);
    id = three ? id3 : id4;
  } else if (dashes.size() == 3 && looks_like_processor(rest.substr(dashes[2] + 1))) {
    triple = rest.substr(0, dashes[2]);
    id = rest.substr(dashes[2] + 1);
  }
  target::Triple t(triple);
  if (!t.has_known_arch())
    bad(text, fmt::format("unknown architecture '{}' in the triple '{}'", t.arch_name(), triple));
  s.triple = four_field(triple);
  s.family = t.is_amdgcn() ? Family::Amdgpu : t.is_nvptx() ? Family::Nvptx : Family::Other;
  if (s.kind == "host" && !id.empty()) bad(text, "a host entry takes no target ID");
  parse_target_id(text, id, s);
}

bool is_bundle_text(std::string_view text) {
  auto dash = text.find('-');
  if (dash == std::string_view::npos) return false;
  if (is_kind(text.substr(0, dash))) return true;
  // "<unknown kind>-<known arch>-...": a bundle ID with a bad kind, not a target ID.
  std::string_view rest = text.substr(dash + 1);
  target::Triple t(rest.substr(0, rest.find('-')));
  return t.has_known_arch() && !looks_like_processor(text);
}

// ---- runtime rules ------------------------------------------------------------

Step kind_step(const TargetSpec& code, const TargetSpec& target, const CheckOptions& o) {
  if (!code.bundle_id || !target.bundle_id)
    return {"kind", "skip", "a bare target ID stands for any offload kind"};
  const std::string& a = code.kind;
  const std::string& b = target.kind;
  if (a == b) return {"kind", "pass", fmt::format("both {}", a)};
  bool hip_pair = (a == "hip" || a == "hipv4") && (b == "hip" || b == "hipv4");
  if (hip_pair) return {"kind", "pass", fmt::format("{} and {} are the same runtime", a, b)};
  bool hip_openmp = ((a == "hip" || a == "hipv4") && b == "openmp") || (a == "openmp" && (b == "hip" || b == "hipv4"));
  if (hip_openmp && o.hip_openmp_compatible) return {"kind", "pass", fmt::format("{} and {} (hip-openmp-compatible)", a, b)};
  return {"kind", "fail",
          fmt::format("the code object is for the {} runtime, the target asks for {}{}", a, b,
                      hip_openmp ? " (only with -hip-openmp-compatible)" : "")};
}

std::string_view family_name(Family f) {
  switch (f) {
    case Family::Amdgpu: return "AMDGPU";
    case Family::Nvptx: return "NVPTX";
    case Family::Other: return "host";
    case Family::None: break;
  }
  return "none";
}

Step triple_step(const TargetSpec& code, const TargetSpec& target) {
  if (code.bundle_id && target.bundle_id) {
    bool ok = target::Triple(code.triple).is_compatible_with(target::Triple(target.triple));
    if (ok) return {"triple", "pass", fmt::format("{} and {} are compatible", code.triple, target.triple)};
    return {"triple", "fail", fmt::format("the code object's triple {} does not match {}", code.triple, target.triple)};
  }
  if (code.family == target.family)
    return {"triple", "pass", fmt::format("both {} ({})", family_name(code.family), code.bundle_id ? code.triple : target.triple)};
  return {"triple", "fail",
          fmt::format("the code object is {} code, the target is {}", family_name(code.family), family_name(target.family))};
}

Step nvptx_step(const TargetSpec& code, const TargetSpec& target, CheckResult& r) {
  auto c = parse_nvptx_arch(code.processor);
  auto t = parse_nvptx_arch(target.processor);
  if (code.processor == target.processor) return {"processor", "pass", code.processor};
  if (c && t && !t->is_virtual) {
    const int cv = c->major * 10 + c->minor, tv = t->major * 10 + t->minor;
    const std::string plain = fmt::format("{}_{}", c->is_virtual ? "compute" : "sm", cv);
    const std::string gpu = fmt::format("sm_{}", tv);
    const char* what = c->is_virtual ? "PTX" : "cubin";
    if (c->arch_specific) {
      if (cv != tv)
        return {"processor", "fail", fmt::format("{} code runs only on exactly {}, the target is {}", code.processor,
                                                 fmt::format("sm_{}", cv), target.processor)};
      r.generic = true;
      r.distance = c->is_virtual ? 100 : 0;
      return {"processor", "pass", fmt::format("{} {} runs on {} (arch-specific: that GPU only)", code.processor, what,
                                               target.processor)};
    }
    if (c->family_specific) {
      if (c->major != t->major || c->minor > t->minor)
        return {"processor", "fail", fmt::format("{} code runs only on its family (sm_{}{} and later minor versions), "
                                                 "the target is {}", code.processor, c->major, c->minor, target.processor)};
      r.generic = true;
      r.distance = c->is_virtual ? 100 + (tv - cv) : tv - cv;
      return {"processor", "pass", fmt::format("{} {} runs on {} (family-specific: same major version, minor not "
                                               "below)", code.processor, what, target.processor)};
    }
    if (c->is_virtual && cv <= tv) {
      r.generic = true;
      r.distance = 100 + (tv - cv);
      return {"processor", "pass",
              fmt::format("PTX for {} is compiled for {} by the CUDA driver at load time", code.processor, gpu)};
    }
    if (!c->is_virtual && c->major == t->major && c->minor <= t->minor) {
      r.generic = true;
      r.distance = tv - cv;
      return {"processor", "pass",
              fmt::format("an {} cubin runs on {} (same major version, CUDA binary compatibility)", plain, gpu)};
    }
    if (!c->is_virtual)
      return {"processor", "fail", fmt::format("an {} cubin runs only on sm_{}{} to sm_{}9, the target is {}", plain,
                                               c->major, c->minor, c->major, target.processor)};
    return {"processor", "fail", fmt::format("PTX for {} needs a GPU of at least that compute capability, the target "
                                             "is {}", code.processor, target.processor)};
  }
  return {"processor", "fail", fmt::format("the code object is for {}, the target is {}", code.processor, target.processor)};
}

Step processor_step(const TargetSpec& code, const TargetSpec& target, CheckResult& r) {
  if (code.processor.empty() && target.processor.empty()) return {"processor", "pass", "neither names a processor"};
  if (code.processor.empty())
    return {"processor", "fail", fmt::format("the code object names no processor, the target is {}", target.processor)};
  if (target.processor.empty())
    return {"processor", "fail", fmt::format("the target names no processor, the code object is for {}", code.processor)};
  if (code.family == Family::Nvptx) return nvptx_step(code, target, r);
  if (code.processor == target.processor) {
    std::string d = code.processor;
    if (code.processor_given != code.processor || target.processor_given != target.processor)
      d += fmt::format(" (written {} and {})", code.processor_given, target.processor_given);
    return {"processor", "pass", d};
  }
  if (code.family == Family::Amdgpu) {
    const target::ProcessorInfo* t = find_processor(target.processor);
    if (code.is_generic() && t && t->generic == code.processor) {
      r.generic = true;
      return {"processor", "pass",
              fmt::format("the generic target {} covers {} (code object v6; LLVM 19's bundler does not apply this rule)",
                          code.processor, target.processor)};
    }
    if (target.is_generic() && !code.is_generic())
      return {"processor", "fail",
              fmt::format("a {} code object does not run on every processor {} covers", code.processor, target.processor)};
  }
  return {"processor", "fail", fmt::format("the code object is for {}, the target is {}", code.processor, target.processor)};
}

void feature_steps(const TargetSpec& code, const TargetSpec& target, CheckResult& r) {
  const target::ProcessorInfo* tp = find_processor(target.processor);
  for (std::string_view f : target::kTargetFeatures) {
    auto c = code.features.find(f);
    auto t = target.features.find(f);
    bool relevant = c != code.features.end() || t != target.features.end() || (tp && tp->supports(f));
    if (!relevant) continue;
    std::string rule(f);
    if (c == code.features.end()) {
      if (t != target.features.end()) ++r.features_any;
      r.steps.push_back({rule, "pass", fmt::format("the code object is built for any {} setting", f)});
    } else if (t == target.features.end()) {
      r.steps.push_back({rule, "fail",
                         fmt::format("the code object needs {0} {1}; the target leaves {0} unspecified (any), and only "
                                     "code built for any {0} setting is sure to load -- name the GPU's setting, e.g. {2}:{0}{3}",
                                     f, c->second ? "on" : "off", target.processor, c->second ? '+' : '-')});
    } else if (c->second == t->second) {
      r.steps.push_back({rule, "pass", fmt::format("both {} {}", f, c->second ? "on" : "off")});
    } else {
      r.steps.push_back({rule, "fail",
                         fmt::format("the code object needs {0} {1}, the target runs with {0} {2}", f,
                                     c->second ? "on" : "off", t->second ? "on" : "off")});
    }
  }
}

CheckResult check_runtime(const TargetSpec& code, const TargetSpec& target, const CheckOptions& o) {
  CheckResult r;
  r.steps.push_back(kind_step(code, target, o));
  r.steps.push_back(triple_step(code, target));
  if (r.steps.back().verdict != "fail") {
    r.steps.push_back(processor_step(code, target, r));
    if (code.family == Family::Amdgpu && target.family == Family::Amdgpu) feature_steps(code, target, r);
  }
  r.compatible = true;
  for (const Step& s : r.steps)
    if (s.verdict == "fail") r.compatible = false;
  if (!r.compatible) r.generic = false;
  return r;
}

// ---- LLVM's bundler (19's or 22's bundle-ID rules) -------------------------------

// A bare target ID as a bundle entry ID with the other side's kind and triple
// (or hip/openmp and the processor's usual triple).
std::string as_bundle_id(const TargetSpec& s, const TargetSpec& other) {
  if (s.bundle_id) return s.text;
  if (other.bundle_id) return fmt::format("{}-{}-{}", other.kind, other.triple, s.text);
  return s.family == Family::Nvptx ? "openmp-nvptx64-nvidia-cuda--" + s.text : "hip-amdgcn-amd-amdhsa--" + s.text;
}

CheckResult check_bundler(const TargetSpec& code, const TargetSpec& target, const CheckOptions& o) {
  CheckResult r;
  const target::ReleaseTraits& llvm = target::traits(o.release);
  target::BundleId c(as_bundle_id(code, target), llvm.bundle_ids), t(as_bundle_id(target, code), llvm.bundle_ids);
  r.compatible = target::is_code_object_compatible(c, t, o.hip_openmp_compatible);
  auto add = [&](std::string rule, bool ok, std::string detail) {
    r.steps.push_back({std::move(rule), ok ? "pass" : "fail", std::move(detail)});
    return ok;
  };
  r.steps.push_back({"ids", "pass",
                     fmt::format("LLVM {} reads the code object as '{}' (target ID '{}') and the target as '{}' (target ID '{}')",
                                 llvm.major, c.str(), c.target_id(), t.str(), t.target_id())});
  if (c == t) {
    add("exact", true, "same kind, compatible triples, identical target IDs");
    return r;
  }
  r.steps.push_back({"exact", "skip", "not an exact match; LLVM goes on with the rules below"});
  const std::string& ck = c.kind();
  const std::string& tk = t.kind();
  bool kinds = ck == tk || ((ck == "hip" || ck == "hipv4") && (tk == "hip" || tk == "hipv4"));
  if (!kinds && o.hip_openmp_compatible)
    kinds = (lower(ck).starts_with("hip") && tk == "openmp") || (ck == "openmp" && lower(tk).starts_with("hip"));
  if (!add("kind", kinds, fmt::format("{} / {}", ck, tk))) return r;
  if (!add("triple", c.triple().is_compatible_with(t.triple()), fmt::format("{} / {}", c.triple().str(), t.triple().str())))
    return r;
  target::FeatureMap cf, tf;
  auto cp = target::parse_target_id(c.triple(), c.target_id(), &cf);
  if (!add("parse code object", cp.has_value(),
           cp ? fmt::format("processor '{}'", *cp)
              : fmt::format("LLVM {} cannot parse '{}' as a target ID for {}", llvm.major, c.target_id(), c.triple().str())))
    return r;
  auto tpr = target::parse_target_id(t.triple(), t.target_id(), &tf);
  if (!add("parse target", tpr.has_value(),
           tpr ? fmt::format("processor '{}'", *tpr)
               : fmt::format("LLVM {} cannot parse '{}' as a target ID for {}", llvm.major, t.target_id(), t.triple().str())))
    return r;
  if (!add("processor", *cp == *tpr, fmt::format("{} / {}", *cp, *tpr))) return r;
  if (!add("feature count", cf.size() <= tf.size(),
           fmt::format("the code object names {} feature(s), the target {}", cf.size(), tf.size())))
    return r;
  for (const auto& [name, on] : cf) {
    auto it = tf.find(name);
    std::string want = fmt::format("{}{}", name, on ? '+' : '-');
    if (!add(name, it != tf.end() && it->second == on,
             it == tf.end() ? fmt::format("the code object needs {}, the target does not name {}", want, name)
                            : fmt::format("code object {}, target {}{}", want, name, it->second ? '+' : '-')))
      return r;
  }
  return r;
}

}  // namespace

bool TargetSpec::is_generic() const { return processor.ends_with("-generic"); }

std::string TargetSpec::target_id() const {
  std::string out = processor;
  for (const auto& [name, on] : features) out += fmt::format(":{}{}", name, on ? '+' : '-');
  return out;
}

std::string TargetSpec::canonical() const {
  if (!bundle_id) return target_id();
  return kind + "-" + triple + "-" + target_id();
}

std::string TargetSpec::feature_setting(std::string_view feature) const {
  auto it = features.find(feature);
  return it == features.end() ? "any" : it->second ? "on" : "off";
}

TargetSpec parse_spec(std::string_view text) {
  TargetSpec s;
  s.text = std::string(text);
  if (text.empty()) throw Error({}, "empty target");
  // An ISA name as comgr and the HIP runtime write a GPU's: the AMDGPU triple,
  // "--", then the target ID ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-").
  // It stands for that target ID.
  constexpr std::string_view kIsaPrefix = "amdgcn-amd-amdhsa--";
  if (text.starts_with(kIsaPrefix)) {
    s.family = Family::Amdgpu;
    s.triple = "amdgcn-amd-amdhsa-";
    std::string_view id = text.substr(kIsaPrefix.size());
    if (id.empty()) bad(text, "the ISA name has no target ID after 'amdgcn-amd-amdhsa--'");
    parse_target_id(text, id, s);
  } else if (is_bundle_text(text)) {
    s.bundle_id = true;
    parse_bundle_id(text, s);
  } else {
    parse_target_id(text, text, s);
  }
  return s;
}

std::vector<TargetSpec> parse_spec_list(const std::vector<std::string>& texts) {
  std::vector<TargetSpec> out;
  for (std::string_view list : texts)
    for (std::size_t pos = 0;;) {
      const std::size_t comma = list.find(',', pos);
      const std::string_view item = list.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
      out.push_back(parse_spec(item));
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
  return out;
}

bool is_of_target(const TargetSpec& target, const TargetSpec& entry) {
  if (target.family != entry.family || target.processor.empty() || target.processor != entry.processor) return false;
  for (const auto& [name, on] : target.features) {
    auto it = entry.features.find(name);
    if (it == entry.features.end() || it->second != on) return false;
  }
  return true;
}

std::string offload_bundle_id(const formats::OffloadEntry& e) {
  return fmt::format("{}-{}-{}", formats::offload_kind_name(e.offload_kind), four_field(e.triple()), e.arch());
}

std::string CheckResult::reason() const {
  for (const Step& s : steps)
    if (s.verdict == "fail") return s.detail;
  return "";
}

CheckResult check(const TargetSpec& code, const TargetSpec& target, const CheckOptions& options) {
  return options.rules == Rules::Bundler ? check_bundler(code, target, options) : check_runtime(code, target, options);
}

}  // namespace ot::compat
