// offloadtool compat: target-ID knowledge for people whose GPU "finds no code
// object": is a code object compatible with a GPU (and why), canonical
// spellings, which entry of a file a runtime would load, composition rules of
// bundles, and the local GPUs' target IDs from the kernel driver.
//
//   offloadtool compat check <code-object-id | code-object-file> <target-id> [--explain] [--bundler]
//                            [--hip-openmp-compatible] [--json]
//   offloadtool compat canonical <target-id>... [--json]
//   offloadtool compat select <file> --target <id> [--bundler] [--hip-openmp-compatible] [--json] [--bytes]
//   offloadtool compat verify <file>... [--json]
//   offloadtool compat detect [--sysfs <dir>] [--xnack on|off] [--json]
//
// detect lists AMD GPUs (amdkfd's sysfs topology: compat/detect.cpp) and NVIDIA
// GPUs (the CUDA driver API: compat/detect_cuda.cpp); docs/gpu-detection.md.
//
// Exit codes: 0 yes / found / clean; 1 check: not compatible, select: nothing
// fits, verify: violations, detect: no GPU of either vendor; 2 errors (bad IDs, unreadable
// or malformed files, usage).
//
// --json prints one object, schema json::Schema::Compat, its "command" member
// naming the subcommand (support/json_schemas.cpp documents the members;
// offloadtool-json(7) is made from it); errors still go to stderr, exit 2.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <memory>
#include <optional>

#include "cli/diagnostics.h"
#include "compat/code_object.h"
#include "compat/detect.h"
#include "compat/target_spec.h"
#include "contents/tree.h"
#include "support/json.h"
#include "support/json_schemas.h"
#include "support/mapped_file.h"
#include "selection/select.h"
#include "target/llvm_release.h"
#include "support/printable.h"
#include "target/processors.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

const std::string_view kSchema = json::schema_name(json::Schema::Compat);

std::string js(std::string_view s) { return json::str(s); }
std::string js_or_null(const std::string& s) { return json::str_or_null(s); }
const char* jb(bool b) { return json::boolean(b); }

std::string spec_json(const compat::TargetSpec& s) {
  std::string features;
  for (std::string_view f : target::kTargetFeatures)
    features += fmt::format("{}{}: {}", features.empty() ? "" : ", ", js(f), js(s.feature_setting(f)));
  bool llvm19 = s.family == compat::Family::Amdgpu   ? target::known_to_llvm19(s.processor)
                : s.family == compat::Family::Nvptx ? target::parse_nvptx_arch(s.processor)->known_to_llvm19
                                                    : true;
  return fmt::format(
      "{{\"text\": {}, \"form\": {}, \"kind\": {}, \"triple\": {}, \"processor\": {}, \"features\": {{{}}}, "
      "\"canonical\": {}, \"generic\": {}, \"known_to_llvm19\": {}}}",
      js(s.text), js(s.bundle_id ? "bundle-id" : "target-id"), js(s.kind), js(s.triple), js(s.processor), features,
      js(s.canonical()), jb(s.is_generic()), jb(llvm19));
}

std::string describe(const compat::TargetSpec& s) {
  std::string out = s.bundle_id ? fmt::format("kind {}, triple {}, ", s.kind, s.triple) : "bare target ID, ";
  out += s.processor.empty() ? "no processor" : "processor " + s.processor;
  if (s.family == compat::Family::Amdgpu)
    for (std::string_view f : target::kTargetFeatures) out += fmt::format(", {} {}", f, s.feature_setting(f));
  return out;
}

// --bundler: the rules of the clang-offload-bundler of the release impersonated.
compat::CheckOptions check_options(bool bundler, bool hip_openmp, target::LlvmRelease release) {
  compat::CheckOptions o;
  o.rules = bundler ? compat::Rules::Bundler : compat::Rules::Runtime;
  o.hip_openmp_compatible = hip_openmp;
  o.release = release;
  return o;
}

// "bundler19", "bundler22" or "runtime" (the JSON's "rules").
std::string rules_name(const compat::CheckOptions& o) {
  return o.rules == compat::Rules::Bundler ? fmt::format("bundler{}", target::traits(o.release).major) : "runtime";
}

// The code object argument: an ID, or else a file holding an AMDGPU code object
// (its ELF header names the target ID). `source` describes the file.
compat::TargetSpec code_spec(const std::string& text, std::string& source) {
  try {
    return compat::parse_spec(text);
  } catch (const Error&) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(text, ec)) throw;
  }
  auto in = InputFile::open(text);
  auto t = compat::amdgpu_code_object(in->bytes());
  if (!t) fail(text, "neither a target ID, a bundle entry ID nor an AMDGPU code object (64-bit ELF, EM_AMDGPU)");
  if (t->target_id.empty()) fail(text, "AMDGPU code object for an unknown processor (EF_AMDGPU_MACH 0x{:x})", t->mach);
  source = fmt::format("{}: AMDGPU code object v{}, e_flags 0x{:x}", text, t->code_object_version, t->e_flags);
  if (t->generic_version) source += fmt::format(", generic version {}", t->generic_version);
  return compat::parse_spec(t->target_id);
}

// A JSON object's members (at two spaces) as an element of an array at four.
std::string as_element(const std::string& members) {
  std::string out = "\n    {\n    ";
  for (char ch : members) {
    out += ch;
    if (ch == '\n') out += "    ";
  }
  return out + "\n    }";
}

// A target list (the one target syntax: "gfx90a,gfx942", a machine's GPUs):
// the code object checked against each; text one line (or --explain block)
// each, JSON "targets" of each one's verdict and steps; exit 0 when it is
// compatible with every one. One target: as ever.
int do_check(const std::string& code_text, const std::string& target_text, bool explain, bool as_json,
             const compat::CheckOptions& o) {
  std::string source;
  const compat::TargetSpec code = code_spec(code_text, source);
  const std::vector<compat::TargetSpec> targets = compat::parse_spec_list({target_text});
  const std::string rules = rules_name(o);
  bool all = true;
  std::string text, members;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const compat::TargetSpec& target = targets[i];
    compat::CheckResult r = compat::check(code, target, o);
    all = all && r.compatible;
    std::string steps;
    for (const compat::Step& s : r.steps)
      steps += fmt::format("{}\n    {{\"rule\": {}, \"verdict\": {}, \"detail\": {}}}", steps.empty() ? "" : ",",
                           js(s.rule), js(s.verdict), js(s.detail));
    const std::string verdict = fmt::format("  \"target\": {},\n  \"compatible\": {},\n  \"generic\": {},\n"
                                            "  \"steps\": [{}\n  ]",
                                            spec_json(target), jb(r.compatible), jb(r.generic), steps);
    members += targets.size() == 1 ? verdict : (i ? "," : "") + as_element(verdict);
    if (explain) {
      std::string out = source.empty() ? "" : fmt::format("source:      {}\n", source);
      out += fmt::format("code object: {} ({})\ntarget:      {} ({})\nrules:       {}\n", code.text, describe(code),
                         target.text, describe(target),
                         o.rules == compat::Rules::Bundler
                             ? fmt::format("LLVM {}'s clang-offload-bundler", target::traits(o.release).major)
                             : std::string("the HIP and OpenMP runtimes"));
      for (const compat::Step& s : r.steps)
        out += fmt::format("  {:<18}{:<6}{}\n", s.rule, s.verdict, printable(s.detail));
      out += r.compatible ? "compatible\n" : "not compatible\n";
      text += (i ? "\n" : "") + out;
    } else {
      text += targets.size() == 1 ? "" : printable(target.text) + ": ";
      text += r.compatible ? "compatible\n" : fmt::format("not compatible: {}\n", printable(r.reason()));
    }
  }
  if (as_json)
    print(fmt::format("{{\n  \"schema\": {},\n  \"command\": \"check\",\n  \"rules\": {},\n  \"source\": {},\n"
                      "  \"code_object\": {},\n{}\n}}\n",
                      js(kSchema), js(rules), js_or_null(source), spec_json(code),
                      targets.size() == 1
                          ? members
                          : fmt::format("  \"targets\": [{}\n  ],\n  \"compatible\": {}", members, jb(all))));
  else
    print(text);
  return all ? 0 : 1;
}

int do_canonical(const std::vector<std::string>& ids, bool as_json, const std::string& prog) {
  int rc = 0;
  std::string items;
  for (const std::string& id : ids) {
    std::string canonical, error;
    try {
      canonical = compat::parse_spec(id).canonical();
    } catch (const Error& e) {
      error = e.message();
      rc = 2;
    }
    if (as_json) {
      items += fmt::format("{}\n    {{\"input\": {}, \"canonical\": {}, \"error\": {}}}", items.empty() ? "" : ",", js(id),
                           error.empty() ? js(canonical) : "null", js_or_null(error));
    } else if (error.empty()) {
      print(printable(canonical) + "\n");
    } else {
      cli::print_error(prog, error);
    }
  }
  if (as_json)
    print(fmt::format("{{\n  \"schema\": {},\n  \"command\": \"canonical\",\n  \"results\": [{}\n  ]\n}}\n", js(kSchema),
                      items));
  return rc;
}

std::vector<contents::FoundContainer> read_containers(const std::string& path) {
  return contents::collect_file(path);
}

// What select says for one target: its text, its JSON members after "rules"
// (an object's inside, at two spaces), and whether an entry was chosen.
struct Said {
  std::string text, json;
  bool ok = false;
};

// A kpack'd binary: per record, what AMD's loader takes (selection::select_kpack).
Said select_kpack(const std::string& path, const std::vector<contents::FoundContainer>& containers,
                  const compat::TargetSpec& target, SizeStyle sizes) {
  const std::vector<selection::KpackRecordSelection> records = selection::select_kpack(containers, target);
  Said said;
  bool all = !records.empty();
  std::string items;
  for (std::size_t r = 0; r < records.size(); ++r) {
    const selection::KpackRecordSelection& k = records[r];
    std::string entries, stubs;
    for (std::size_t i = 0; i < k.selection.candidates.size(); ++i) {
      const selection::Candidate& c = k.selection.candidates[i];
      entries += fmt::format("{}\n        {{\"index\": {}, \"id\": {}, \"location\": {}, \"archive\": {}, "
                             "\"offset\": {}, \"size\": {}, \"compressed\": {}, \"verdict\": {}, \"reason\": {}}}",
                             i ? "," : "", i, js(c.entry.id), js(c.location), js(c.entry.kpack_archive),
                             c.entry.local_offset, c.entry.size, jb(c.entry.compressed), js(c.verdict),
                             js_or_null(c.reason));
    }
    for (std::size_t i = 0; i < k.stubs.size(); ++i) stubs += (i ? ", " : "") + js(k.stubs[i]);
    items += fmt::format("{}\n    {{\"key\": {}, \"selected\": {}, \"entries\": [{}\n      ], \"stubs\": [{}], "
                         "\"hint\": {}}}",
                         r ? "," : "", js(k.key), k.selection.chosen ? std::to_string(*k.selection.chosen) : "null",
                         entries, stubs, js_or_null(k.selection.hint));
    all = all && k.selection.chosen;
  }
  said.json = fmt::format("  \"target\": {},\n  \"records\": [{}\n  ]", spec_json(target), items);
  std::string& out = said.text;
  for (const selection::KpackRecordSelection& k : records) {
    if (k.selection.chosen) {
      const selection::Candidate& c = k.selection.candidates[*k.selection.chosen];
      out += fmt::format("{}: selected {} ({}, {} at 0x{:x} of {}{})\n", printable(k.key), printable(c.entry.id),
                         printable(c.location), size_text(c.entry.size, sizes), c.entry.local_offset,
                         printable(c.entry.kpack_archive), c.entry.compressed ? ", a zstd frame" : "");
    } else {
      out += fmt::format("{}: nothing fits {}\n", printable(k.key), printable(target.text));
    }
    for (std::size_t i = 0; i < k.selection.candidates.size(); ++i) {
      if (k.selection.chosen && i == *k.selection.chosen) continue;
      const selection::Candidate& c = k.selection.candidates[i];
      out += fmt::format("  {} {} ({}): {}\n", c.verdict == "compatible" ? "passed over" : "rejected",
                         printable(c.entry.id), printable(c.location), printable(c.reason));
    }
    for (const std::string& stub : k.stubs)
      out += fmt::format("  fell through: {} (a HIP runtime before rocm-systems #9953 stops there: "
                         "hipErrorInvalidImage)\n", printable(stub));
    if (!k.selection.hint.empty()) out += fmt::format("  hint: {}\n", printable(k.selection.hint));
  }
  if (records.empty())
    out += fmt::format("no kpack archive of {} was found: nothing to select\n", printable(path));
  said.ok = all;
  return said;
}

// The text gives the entry's size as people read it (support/human_size.h), exact with --bytes.
Said select_one(const std::string& path, const std::vector<contents::FoundContainer>& containers,
                const compat::TargetSpec& target, SizeStyle sizes, const compat::CheckOptions& o) {
  selection::Selection s = selection::select_entry(containers, target, o);
  Said said;
  std::string entries;
  for (std::size_t i = 0; i < s.candidates.size(); ++i) {
    const selection::Candidate& c = s.candidates[i];
    entries += fmt::format(
        "{}\n    {{\"index\": {}, \"id\": {}, \"location\": {}, \"offset\": {}, \"size\": {}, \"compressed\": {}, "
        "\"verdict\": {}, \"reason\": {}, \"canonical\": {}, \"code_object\": {}}}",
        i == 0 ? "" : ",", i, js(c.entry.id), js(c.location), c.entry.offset.value_or(c.entry.local_offset), c.entry.size,
        jb(c.entry.compressed), js(c.verdict), js_or_null(c.reason), c.spec ? js(c.spec->canonical()) : "null",
        js_or_null(c.entry.code_object));
  }
  said.json = fmt::format("  \"target\": {},\n  \"selected\": {},\n  \"entries\": [{}\n  ],\n  \"hint\": {}",
                          spec_json(target), s.chosen ? std::to_string(*s.chosen) : "null", entries,
                          js_or_null(s.hint));
  std::string& out = said.text;
  if (s.chosen) {
    const selection::Candidate& c = s.candidates[*s.chosen];
    out += fmt::format("selected {} ({}, {} at 0x{:x}{})\n", printable(c.entry.id), printable(c.location),
                       size_text(c.entry.size, sizes),
                       c.entry.offset.value_or(c.entry.local_offset), !c.entry.compressed      ? ""
                       : c.entry.kind.empty() ? " of the decompressed bundle"
                                              : ", compressed");
  } else if (s.candidates.empty()) {
    out += fmt::format("no entry of {} fits {}: it holds no device code (no bundle, compressed bundle, offload "
                       "binary, NVIDIA fatbin or bundle section)\n", printable(path), printable(target.text));
  } else {
    out += fmt::format("no entry of {} fits {}\n", printable(path), printable(target.text));
  }
  for (std::size_t i = 0; i < s.candidates.size(); ++i) {
    if (s.chosen && i == *s.chosen) continue;
    const selection::Candidate& c = s.candidates[i];
    out += fmt::format("  {} {} ({}): {}\n", c.verdict == "compatible" ? "passed over" : "rejected",
                       printable(c.entry.id), printable(c.location), printable(c.reason));
  }
  if (!s.hint.empty()) out += fmt::format("hint: {}\n", printable(s.hint));
  said.ok = s.chosen.has_value();
  return said;
}

// One target: what it selects. A list (the one target syntax, "gfx90a,sm_80":
// a machine's GPUs): each target's choice in turn, text blocks headed by the
// target, JSON "selections" of the one-target members; exit 0 when every
// target has an entry.
int do_select(const std::string& path, const std::string& target_text, bool as_json, SizeStyle sizes,
              const compat::CheckOptions& o) {
  const std::vector<compat::TargetSpec> targets = compat::parse_spec_list({target_text});
  std::vector<contents::FoundContainer> containers = read_containers(path);
  const bool kpack = std::any_of(containers.begin(), containers.end(),
                                 [](const contents::FoundContainer& c) { return !c.container.kpack_key.empty(); });
  std::vector<Said> said;
  bool all = true;
  for (const compat::TargetSpec& t : targets) {
    said.push_back(kpack ? select_kpack(path, containers, t, sizes) : select_one(path, containers, t, sizes, o));
    all = all && said.back().ok;
  }
  const std::string head = fmt::format("{{\n  \"schema\": {},\n  \"command\": \"select\",\n  \"file\": {},\n  \"rules\": {},\n",
                                       js(kSchema), js(path), kpack ? js("kpack") : js(rules_name(o)));
  if (said.size() == 1) {
    print(as_json ? head + said[0].json + "\n}\n" : said[0].text);
    return all ? 0 : 1;
  }
  std::string out;
  for (std::size_t i = 0; i < said.size(); ++i) {
    if (as_json)
      out += (i ? "," : "") + as_element(said[i].json);
    else
      out += fmt::format("{}{}:\n{}", i ? "\n" : "", printable(targets[i].text), said[i].text);
  }
  print(as_json ? head + "  \"selections\": [" + out + "\n  ]\n}\n" : out);
  return all ? 0 : 1;
}

// A directory given to verify: its files that hold device code, each
// checked as if named (in the tree's order, contents/tree.h); a directory
// without any is one "no-device-code" file. Links and special files are not
// read: text lines in `text`, JSON objects in `skipped`. Each input comes
// with its containers (read once; a file given is read when its turn comes).
using VerifyInput = std::pair<std::string, std::optional<std::vector<contents::FoundContainer>>>;
std::vector<VerifyInput> verify_inputs(const std::vector<std::string>& paths, std::string& text,
                                       fmt::memory_buffer& skipped, bool& any_directory) {
  std::vector<VerifyInput> out;
  for (const std::string& path : paths) {
    if (!contents::is_directory(path)) {
      out.emplace_back(path, std::nullopt);
      continue;
    }
    any_directory = true;
    std::size_t before = out.size();
    for (const contents::TreeItem& item : contents::read_tree(path)) {
      if (item.kind == contents::TreeKind::Directory) continue;
      if (item.kind != contents::TreeKind::File) {
        append_skipped_json(skipped, item, path);
        text += fmt::format("{}: {}\n", printable(item.path), printable(skipped_text(item, path)));
        continue;
      }
      std::vector<contents::FoundContainer> found = read_containers(item.path);
      std::size_t n = 0;
      for (const contents::FoundContainer& c : found) n += c.entries.size() + c.container.refused_duplicates.size();
      if (n != 0) out.emplace_back(item.path, std::move(found));
    }
    if (out.size() == before) out.emplace_back(path, std::vector<contents::FoundContainer>{});  // "no device code found"
  }
  return out;
}

int do_verify(const std::vector<std::string>& inputs, bool as_json) {
  std::size_t violations = 0, warnings = 0, entries = 0, containers = 0;
  std::string files_json, text;
  fmt::memory_buffer skipped;
  bool any_directory = false;
  for (auto& [path, read] : verify_inputs(inputs, text, skipped, any_directory)) {
    auto found = read ? std::move(*read) : read_containers(path);
    auto findings = selection::verify_containers(found);
    // A file without device code is a violation: it holds nothing the rules could be kept by.
    std::size_t file_entries = 0;
    for (const contents::FoundContainer& c : found) file_entries += c.entries.size();
    if (file_entries == 0 && findings.empty())
      findings.push_back({"no-device-code", "error", path, {}, kNoDeviceCode});
    std::string cj, fj;
    for (const contents::FoundContainer& c : found) {
      ++containers;
      entries += c.entries.size();
      std::string ids;
      for (const contents::Entry& e : c.entries) ids += fmt::format("{}{}", ids.empty() ? "" : ", ", js(e.id));
      cj += fmt::format("{}\n        {{\"name\": {}, \"ids\": [{}]}}", cj.empty() ? "" : ",", js(c.name()), ids);
    }
    for (const selection::Finding& f : findings) {
      (f.severity == "error" ? violations : warnings)++;
      std::string ids;
      for (const std::string& id : f.ids) ids += fmt::format("{}{}", ids.empty() ? "" : ", ", js(id));
      fj += fmt::format("{}\n        {{\"rule\": {}, \"severity\": {}, \"container\": {}, \"ids\": [{}], \"message\": {}}}",
                        fj.empty() ? "" : ",", js(f.rule), js(f.severity), js(f.container), ids, js(f.message));
      text += fmt::format("{}: {}: {} [{}]\n", printable(f.container), f.severity, printable(f.message), f.rule);
    }
    files_json += fmt::format("{}\n    {{\"file\": {},\n      \"containers\": [{}\n      ],\n      \"findings\": [{}\n      ]}}",
                              files_json.empty() ? "" : ",", js(path), cj, fj);
  }
  if (as_json) {
    print(fmt::format("{{\n  \"schema\": {},\n  \"command\": \"verify\",\n  \"files\": [{}\n  ],\n  \"violations\": {},\n"
                      "  \"warnings\": {}{}\n}}\n",
                      js(kSchema), files_json, violations, warnings,
                      any_directory ? fmt::format(",\n  \"skipped\": [{}\n  ]", std::string_view(skipped.data(), skipped.size()))
                                    : std::string()));
  } else {
    text += violations != 0
                ? fmt::format("{} violation{}, {} warning{}\n", violations, violations == 1 ? "" : "s", warnings,
                              warnings == 1 ? "" : "s")
                : fmt::format("ok: {} entr{} in {} container{} follow the composition rules{}\n", entries,
                              entries == 1 ? "y" : "ies", containers, containers == 1 ? "" : "s",
                              warnings ? fmt::format(" ({} warning{})", warnings, warnings == 1 ? "" : "s") : "");
    print(text);
  }
  return violations ? 1 : 0;
}

int do_detect(const std::string& root, const std::string& xnack_text, bool as_json, const std::string& prog) {
  std::optional<bool> xnack = compat::chosen_xnack(xnack_text);
  compat::DetectResult r = compat::detect(root, xnack);
  compat::CudaResult nv = compat::detect_cuda(compat::cuda_library());
  const bool any = !r.gpus.empty() || !nv.gpus.empty();
  if (as_json) {
    std::string gpus, cpus, nv_gpus;
    for (std::uint32_t n : r.cpu_nodes) cpus += fmt::format("{}{}", cpus.empty() ? "" : ", ", n);
    for (const compat::DetectedGpu& g : r.gpus) {
      std::string xn = !g.xnack_supported ? "null" : g.xnack ? js(*g.xnack ? "on" : "off") : js("any");
      gpus += fmt::format(
          "{}\n    {{\"node\": {}, \"gfx_target_version\": {}, \"processor\": {}, \"target_id\": {}, \"apu\": {}, "
          "\"vendor_id\": {}, \"device_id\": {}, \"sramecc\": {}, \"xnack\": {}, \"note\": {}}}",
          gpus.empty() ? "" : ",", g.node, g.gfx_target_version, js(g.processor), js(g.target_id), jb(g.apu),
          g.vendor_id, g.device_id, g.sramecc ? js(*g.sramecc ? "on" : "off") : "null", xn, js_or_null(g.note));
    }
    for (const compat::CudaGpu& g : nv.gpus)
      nv_gpus += fmt::format("{}\n    {{\"ordinal\": {}, \"compute_capability\": {}, \"target\": {}, \"name\": {}, "
                             "\"note\": {}}}",
                             nv_gpus.empty() ? "" : ",", g.ordinal,
                             g.target.empty() ? "null" : js(fmt::format("{}.{}", g.major, g.minor)),
                             js_or_null(g.target), js(g.name), js_or_null(g.note));
    auto opt_int = [](const std::optional<int>& v) { return v ? std::to_string(*v) : std::string("null"); };
    std::string cuda = fmt::format(
        "{{\"library\": {}, \"how\": {}, \"loaded\": {}, \"driver_version\": {}, \"init_result\": {}, "
        "\"init_result_name\": {}, \"error\": {}}}",
        js(nv.library), js(nv.how), jb(nv.loaded), opt_int(nv.driver_version), opt_int(nv.init_result),
        js_or_null(nv.init_result_name), js_or_null(compat::cuda_no_gpu_reason(nv)));
    print(fmt::format("{{\n  \"schema\": {},\n  \"command\": \"detect\",\n  \"topology\": {},\n  \"found_topology\": {},\n"
                      "  \"cpu_nodes\": [{}],\n  \"gpus\": [{}\n  ],\n  \"cuda\": {},\n  \"nvidia_gpus\": [{}\n  ]\n}}\n",
                      js(kSchema), js(r.topology), jb(r.found_topology), cpus, gpus, cuda, nv_gpus));
  } else {
    std::string out;
    for (const compat::DetectedGpu& g : r.gpus) {
      out += fmt::format("node {}: {} (gfx_target_version {}{}, device 0x{:04x})\n", g.node,
                         g.target_id.empty() ? "unknown" : g.target_id, g.gfx_target_version, g.apu ? ", APU" : "",
                         g.device_id);
      if (!g.note.empty()) out += fmt::format("  note: {}\n", g.note);
    }
    for (const compat::CudaGpu& g : nv.gpus) {
      out += g.target.empty() ? fmt::format("cuda {}: unknown", g.ordinal)
                              : fmt::format("cuda {}: {} (compute capability {}.{}", g.ordinal, g.target, g.major,
                                            g.minor);
      out += g.name.empty() ? (g.target.empty() ? "\n" : ")\n")
                            : fmt::format("{}{})\n", g.target.empty() ? " (" : ", ", g.name);
      if (!g.note.empty()) out += fmt::format("  note: {}\n", g.note);
    }
    print(out);
    if (!any) {
      cli::print_error(prog, fmt::format("no GPU found: {}; {}", compat::amd_no_gpu_reason(r), compat::cuda_no_gpu_reason(nv)));
    } else if (!nv.error.empty() && !nv.no_driver && !nv.no_device) {
      // AMD GPUs were found, but an NVIDIA driver that is there failed: say so.
      cli::print_warning(prog, nv.error);
    }
  }
  return any ? 0 : 1;
}

struct CompatOptions {
  std::string code_text, target_text, file, sysfs = "/sys", xnack;
  std::vector<std::string> ids, files;
  bool explain = false, as_json = false, bundler = false, hip_openmp = false;
  SizeStyle sizes = SizeStyle::Human;
};

}  // namespace

cli::AppletBody define_compat(CLI::App& app) {
  auto o = std::make_shared<CompatOptions>();
  app.description(
      "Target-ID compatibility: check a code object against a GPU and explain the verdict, canonical\n"
      "spellings, which entry of a file a runtime loads, bundle composition rules, and the local AMD and\n"
      "NVIDIA GPUs.\n\n"
      "Exit codes: 0 compatible / selected / clean / GPU found; 1 not compatible (check), nothing fits\n"
      "(select), violations (verify), no GPU (detect); 2 errors: malformed or unknown target IDs,\n"
      "unreadable or malformed files, usage errors.\n");
  app.require_subcommand(1);

  const std::string json_help =
      fmt::format("machine-readable output (schema {}; offloadtool-json(7))", json::schema_name(json::Schema::Compat));
  // check and select apply the same rules, chosen by the same flags
  auto add_rule_flags = [&](CLI::App* sub) {
    sub->add_flag("--bundler", o->bundler,
                  fmt::format("the clang-offload-bundler's rules of the LLVM release impersonated (one of {};\n"
                              "no generic targets, no CUDA sm rules)",
                              target::supported_majors_text()));
    sub->add_flag("--hip-openmp-compatible", o->hip_openmp, "let hip/hipv4 and openmp entries match each other");
    sub->add_flag("--json", o->as_json, json_help);
  };

  CLI::App* check = app.add_subcommand("check", "is a code object compatible with a target? (exit 0 yes, 1 no, 2 error)");
  check->add_option("code-object", o->code_text,
                    "bundle entry ID or target ID of the code object, or an AMDGPU code object file")
      ->required();
  check->add_option("target", o->target_text,
                    "bundle entry ID or target ID of the GPU, or a comma-separated list of them (compatible with each; "
                    "docs/targets.md)")
      ->required();
  check->add_flag("--explain", o->explain, "print each rule and its verdict");
  add_rule_flags(check);

  CLI::App* canonical = app.add_subcommand("canonical", "canonical spellings (exit 2 if any ID is malformed)");
  canonical->add_option("id", o->ids, "bundle entry IDs or target IDs")->required();
  canonical->add_flag("--json", o->as_json, json_help);

  CLI::App* select = app.add_subcommand("select", "which entry a runtime loads for a GPU (exit 1 when none fits)");
  select->add_option("file", o->file, "bundle, compressed bundle, archive, object or executable ('-' = stdin)")
      ->required();
  select->add_option("-t,--target", o->target_text,
                     "the GPU's target ID (or a bundle entry ID), or a comma-separated list of them: the choice for "
                     "each (docs/targets.md)")
      ->required();
  add_rule_flags(select);
  add_bytes_flag(*select, o->sizes);

  CLI::App* verify = app.add_subcommand("verify", "check bundle composition rules (exit 1 on violations)");
  verify->add_option("file", o->files,
                     "bundles, archives, objects or executables; a directory: each of its files holding device code "
                     "(symbolic links not followed)")
      ->required();
  verify->add_flag("--json", o->as_json, json_help);

  CLI::App* detect = app.add_subcommand(
      "detect",
      "the local GPUs' targets: AMD from amdkfd's sysfs topology, NVIDIA from the CUDA driver (libcuda.so.1,\n"
      "loaded at run time; OFFLOADTOOL_LIBCUDA names another)");
  detect->add_option("--sysfs", o->sysfs, "the sysfs root to read (default /sys)");
  detect->add_option("--xnack", o->xnack,
                     "the xnack mode processes run with: on or off (default: HSA_XNACK, else any)");
  detect->add_flag("--json", o->as_json, json_help);

  // The subcommands belong to `app`, which outlives the body (cli/run.cpp).
  return [o, check, canonical, select, verify](const cli::Invocation& inv) {
    if (check->parsed())
      return do_check(o->code_text, o->target_text, o->explain, o->as_json, check_options(o->bundler, o->hip_openmp, inv.release));
    if (canonical->parsed()) return do_canonical(o->ids, o->as_json, inv.prog);
    if (select->parsed())
      return do_select(o->file, o->target_text, o->as_json, o->sizes,
                       check_options(o->bundler, o->hip_openmp, inv.release));
    if (verify->parsed()) return do_verify(o->files, o->as_json);
    return do_detect(o->sysfs, o->xnack, o->as_json, inv.prog);
  };
}

}  // namespace ot::tools
