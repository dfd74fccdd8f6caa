#include "selection/select.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "contents/kpack_search.h"
#include "support/error.h"
#include "target/processors.h"

namespace ot::selection {
namespace {

using compat::Family;
using compat::parse_spec;
using compat::Step;

std::string hint_for(const Selection& s, const TargetSpec& target) {
  // An entry for the right processor that only misses on a feature setting.
  for (const Candidate& c : s.candidates) {
    if (!c.spec || c.spec->processor != target.processor || c.result.steps.empty()) continue;
    for (const Step& step : c.result.steps) {
      if (step.verdict != "fail" || (step.rule != "xnack" && step.rule != "sramecc")) continue;
      if (step.rule == "xnack")
        return fmt::format("{} is built for {}; run with HSA_XNACK={} if the GPU allows it, or build {} (any xnack) "
                           "or {}:xnack{}",
                           c.entry.id, c.spec->target_id(), c.spec->feature_setting("xnack") == "on" ? 1 : 0,
                           target.processor, target.processor, target.feature_setting("xnack") == "on" ? '+' : '-');
      return fmt::format("{} is built for {}; build {} (any sramecc) to serve both settings", c.entry.id,
                         c.spec->target_id(), target.processor);
    }
  }
  if (target.family == Family::Amdgpu) {
    const target::ProcessorInfo* p = target::find_processor(target.processor);
    std::string build = fmt::format("build with --offload-arch={}", target.target_id());
    if (p && !p->generic.empty()) {
      std::string members;
      for (const target::ProcessorInfo* m : target::generic_members(p->generic)) {
        members += ' ';
        members += m->name;
      }
      return fmt::format("{}, or with --offload-arch={} (code object v6, LLVM 19+), which serves{}", build, p->generic,
                         members);
    }
    return build;
  }
  if (target.family == Family::Nvptx)
    return fmt::format("build with --offload-arch={} (or add PTX for an older compute_* that the driver can compile)",
                       target.processor);
  return "";
}

bool same_target(const TargetSpec& a, const TargetSpec& b) {
  auto hip = [](const std::string& k) { return k == "hipv4" ? std::string("hip") : k; };
  return hip(a.kind) == hip(b.kind) && a.triple == b.triple && a.target_id() == b.target_id();
}

}  // namespace

Selection select_entry(const std::vector<FoundContainer>& containers, const TargetSpec& target,
                       const CheckOptions& options) {
  Selection s;
  for (const FoundContainer& c : containers) {
    if (!c.container.refused_duplicates.empty())
      throw Error({}, fmt::format("{}: the bundle stores '{}' twice (run 'compat verify')", c.name(),
                                  c.container.refused_duplicates.front()));
    for (const FoundEntry& e : c.entries) {
      Candidate cand{e, contents::location(c.container, e), std::nullopt, {}, "rejected", ""};
      try {
        cand.spec = parse_spec(e.bundle_id);
      } catch (const Error& err) {
        cand.reason = err.message();
      }
      if (cand.spec && cand.spec->kind == "host") {
        cand.reason = "host code, not a device code object";
      } else if (cand.spec) {
        cand.result = check(*cand.spec, target, options);
        if (cand.result.compatible && !e.code_object.empty() && e.code_object != cand.spec->target_id() &&
            cand.spec->family == Family::Amdgpu) {
          // The ID chose the entry; the loader then checks the code object's own header.
          try {
            CheckResult elf = check(parse_spec(e.code_object), target, options);
            if (!elf.compatible) {
              cand.result.compatible = false;
              cand.result.steps.push_back({"code object", "fail", elf.reason()});
            }
          } catch (const Error& err) {
            cand.result.compatible = false;
            cand.result.steps.push_back({"code object", "fail", err.message()});
          }
          if (!cand.result.compatible)
            cand.result.steps.back().detail = fmt::format("the ID fits, but its code object is built for {}: {}",
                                                          e.code_object, cand.result.steps.back().detail);
        }
        if (cand.result.compatible)
          cand.verdict = "compatible";
        else
          cand.reason = cand.result.reason();
      }
      s.candidates.push_back(std::move(cand));
    }
  }
  // Rank: specific before generic, then fewer "any" features, then (NVPTX)
  // the cubin nearest the GPU before PTX, then file order.
  for (std::size_t i = 0; i < s.candidates.size(); ++i) {
    const Candidate& c = s.candidates[i];
    if (c.verdict != "compatible") continue;
    if (!s.chosen) {
      s.chosen = i;
      continue;
    }
    const Candidate& best = s.candidates[*s.chosen];
    if (std::tuple(c.result.generic, c.result.features_any, c.result.distance) <
        std::tuple(best.result.generic, best.result.features_any, best.result.distance))
      s.chosen = i;
  }
  if (s.chosen) {
    Candidate& best = s.candidates[*s.chosen];
    best.verdict = "selected";
    for (Candidate& c : s.candidates) {
      if (c.verdict != "compatible") continue;
      if (c.result.generic && !best.result.generic)
        c.reason = fmt::format("compatible, but {} is a specific processor, preferred over a generic target", best.entry.id);
      else if (c.result.features_any > best.result.features_any)
        c.reason = fmt::format("compatible, but {} matches the target's feature settings exactly", best.entry.id);
      else if (c.result.distance >= 100 && best.result.distance < 100)
        c.reason = fmt::format("compatible, but the {} cubin runs as it is: PTX is JIT-compiled only where no cubin fits "
                               "(offloadtool's rule where NVIDIA documents no order between an older cubin and newer "
                               "PTX)", best.entry.id);
      else if (c.result.distance > best.result.distance)
        c.reason = fmt::format("compatible, but {} is nearer the target (the CUDA driver takes the {} of the highest "
                               "version not above the GPU's)", best.entry.id,
                               best.result.distance >= 100 ? "PTX" : "cubin");
      else
        c.reason = fmt::format("compatible, but {} comes first", best.location);
    }
  } else {
    s.hint = hint_for(s, target);
  }
  return s;
}

std::vector<Finding> verify_containers(const std::vector<FoundContainer>& containers) {
  std::vector<Finding> out;
  for (const FoundContainer& c : containers) {
    const std::string name = c.name();
    for (const std::string& id : c.container.refused_duplicates)
      out.push_back({"duplicate-id", "error", name, {id, id}, fmt::format("'{}' is stored twice", id)});
    std::vector<std::pair<const FoundEntry*, TargetSpec>> parsed;
    int hosts = 0;
    for (const FoundEntry& e : c.entries) {
      try {
        TargetSpec s = parse_spec(e.bundle_id);
        if (s.kind == "host") ++hosts;
        // An OffloadBinary stores a kind, triple and arch, not an ID clang writes.
        if (s.canonical() != e.id && s.kind != "host" && !e.offload_binary)
          out.push_back({"non-canonical", "warning", name, {e.id},
                         fmt::format("'{}' is not in canonical form; clang writes '{}'", e.id, s.canonical())});
        parsed.emplace_back(&e, std::move(s));
      } catch (const Error& err) {
        out.push_back({"invalid-id", "error", name, {e.id}, err.message()});
      }
    }
    for (const auto& [e, spec] : parsed)
      if (!e->code_object.empty() && spec.family == Family::Amdgpu && e->code_object != spec.target_id())
        out.push_back({"code-object-mismatch", "error", name, {e->id},
                       fmt::format("'{}' names {}, but its code object is built for {}", e->id,
                                   spec.target_id().empty() ? "no processor" : spec.target_id(), e->code_object)});
    if (hosts > 1)
      out.push_back({"several-hosts", "error", name, {}, fmt::format("{} host entries; a bundle has at most one", hosts)});
    // Duplicates after canonical spelling.
    for (std::size_t i = 0; i < parsed.size(); ++i)
      for (std::size_t j = i + 1; j < parsed.size(); ++j)
        if (same_target(parsed[i].second, parsed[j].second))
          out.push_back({"duplicate-id", "error", name, {parsed[i].first->id, parsed[j].first->id},
                         fmt::format("'{}' and '{}' name the same target ({})", parsed[i].first->id,
                                     parsed[j].first->id, parsed[i].second.canonical())});
    // Per kind, triple and processor: a feature is "any" everywhere or set everywhere.
    for (std::size_t i = 0; i < parsed.size(); ++i) {
      for (std::size_t j = i + 1; j < parsed.size(); ++j) {
        const TargetSpec& a = parsed[i].second;
        const TargetSpec& b = parsed[j].second;
        if (a.kind != b.kind || a.triple != b.triple || a.processor != b.processor || a.processor.empty()) continue;
        for (std::string_view f : target::kTargetFeatures) {
          bool in_a = a.features.count(f) != 0, in_b = b.features.count(f) != 0;
          if (in_a == in_b) continue;
          out.push_back({"mixed-features", "error", name, {parsed[i].first->id, parsed[j].first->id},
                         fmt::format("'{}' and '{}' mix {} any with {} on/off for {}; a runtime cannot tell which to "
                                     "load (LLVM's bundler refuses such targets as conflicting)",
                                     parsed[i].first->id, parsed[j].first->id, f, f, a.processor)});
          break;
        }
      }
    }
  }
  return out;
}

std::vector<KpackRecordSelection> select_kpack(const std::vector<FoundContainer>& containers, const TargetSpec& target) {
  const std::vector<std::string> order = contents::kpack_arch_order(target.target_id());
  auto rank = [&](std::string_view arch) {
    return static_cast<std::size_t>(std::find(order.begin(), order.end(), arch) - order.begin());
  };
  std::string tried;
  for (const std::string& a : order) tried += (tried.empty() ? "" : ", ") + a;
  std::vector<KpackRecordSelection> out;
  std::map<std::string, std::size_t> by_key;
  for (const FoundContainer& c : containers) {
    if (c.container.kpack_key.empty() || (c.container.kpack_arches.empty() && c.entries.empty())) continue;
    auto [it, added] = by_key.try_emplace(c.container.kpack_key, out.size());
    if (added) out.push_back({c.container.kpack_key, {}, {}});
  }
  for (KpackRecordSelection& r : out) {
    // The archives of the record that the loader opens, in its order.
    std::vector<const FoundContainer*> archives;
    for (const FoundContainer& c : containers)
      if (c.container.kpack_key == r.key && !c.container.kpack_arches.empty() &&
          (c.container.kpack_glob_arch.empty() || rank(c.container.kpack_glob_arch) < order.size()))
        archives.push_back(&c);
    // The choice: the first string, then the first archive listing it that holds the key.
    const FoundContainer* chosen_in = nullptr;
    const FoundEntry* chosen = nullptr;
    for (const std::string& a : order) {
      for (const FoundContainer* c : archives) {
        const auto& listed = c->container.kpack_arches;
        if (std::find(listed.begin(), listed.end(), a) == listed.end()) continue;
        const auto e = std::find_if(c->entries.begin(), c->entries.end(), [&](const FoundEntry& x) { return x.id == a; });
        if (e == c->entries.end()) {
          r.stubs.push_back(fmt::format("{} lists {} but holds no '{}'", c->container.chain.back().text, a, r.key));
          continue;
        }
        chosen_in = c;
        chosen = &*e;
        break;
      }
      if (chosen) break;
    }
    for (const FoundContainer& c : containers) {
      if (c.container.kpack_key != r.key) continue;
      const bool opened = std::find(archives.begin(), archives.end(), &c) != archives.end();
      for (const FoundEntry& e : c.entries) {
        Candidate k;
        k.entry = e;
        k.location = contents::location(c.container, e);
        const auto& listed = c.container.kpack_arches;
        if (&c == chosen_in && &e == chosen) {
          k.verdict = "selected";
          r.selection.chosen = r.selection.candidates.size();
        } else if (rank(e.id) == order.size()) {
          k.verdict = "rejected";
          k.reason = fmt::format("{} is not among the architectures the loader tries for {} ({})", e.id,
                                 target.target_id(), tried);
        } else if (!opened) {
          k.verdict = "rejected";
          k.reason = fmt::format("the loader does not open this archive for {} (its name stands for {})",
                                 target.target_id(), c.container.kpack_glob_arch);
        } else if (std::find(listed.begin(), listed.end(), e.id) == listed.end()) {
          k.verdict = "rejected";
          k.reason = fmt::format("the archive's gfx_arches does not list {}: the loader does not look it up", e.id);
        } else {
          k.verdict = "compatible";
          k.reason = fmt::format("{} comes first in the loader's order ({})", chosen ? chosen->id : "", tried);
        }
        r.selection.candidates.push_back(std::move(k));
      }
    }
    if (!chosen)
      r.selection.hint = fmt::format("no archive found holds '{}' for any of {}", r.key, tried);
  }
  return out;
}

}  // namespace ot::selection
