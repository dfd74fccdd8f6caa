#include "bundler/archive_unbundle.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <unordered_map>

#include "archive/ar_reader.h"
#include "archive/ar_writer.h"
#include "archive/member_symbols.h"
#include "bundler/bundle_input.h"
#include "support/llvm_path.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "support/parallel.h"
#include "target/target_id.h"

namespace ot::bundler {

using formats::BundleEntry;
using target::BundleId;

std::string_view device_extension(std::string_view bundle_id) {
  const std::string target_id = BundleId(bundle_id).target_id();
  if (target_id.find("gfx") != std::string::npos) return ".bc";
  if (target_id.find("sm_") != std::string::npos) return ".cubin";
  return {};
}

std::string device_member_name(std::string_view member_name, std::string_view bundle_id, std::string_view device_ext) {
  const std::string_view stem = llvm_path::stem(member_name);
  const std::string_view ext = device_ext.empty() ? llvm_path::extension(member_name) : device_ext;
  std::string name;
  name.reserve(2 * stem.size() + bundle_id.size() + ext.size() + 1);
  name.append(stem).append("-").append(bundle_id).append(stem).append(ext);
  std::replace(name.begin(), name.end(), ':', '_');
  return name;
}

std::string device_member_name(std::string_view member_name, std::string_view bundle_id) {
  return device_member_name(member_name, bundle_id, device_extension(bundle_id));
}

namespace {

// The archive is read through its mapping, and memory stays within a budget
// however large it is: an archive of up to kKeepMapped stays mapped (so the
// writers find its pages there); of a larger one the header walk and each
// scan slice let go of the pages behind them as they go, in steps of
// kReleaseStep, and the writers read the payloads with pread.
constexpr std::uint64_t kKeepMapped = 64u << 20;
constexpr std::uint64_t kReleaseStep = 8u << 20;
constexpr std::size_t kSliceMembers = 64;

std::string member_display(const std::string& archive, const std::string& member) {
  return fmt::format("{}({})", archive, member);
}

// The command LLVM 19 shows for -### (quoted arguments; its temporary file
// names are random, these are fixed).
std::string objcopy_command(const Config& config) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return fmt::format(
      "\"{}\" \"--regex\" \"--remove-section=__CLANG_OFFLOAD_BUNDLE__.*\" \"--\" "
      "\"{}/clang-offload-bundler-000000.tmp\" \"{}/clang-offload-bundler-000001.tmp\"\n",
      config.objcopy_path, dir, dir);
}

// Rewritten member data (decompressed payloads, stripped host objects) is
// appended to one unlinked scratch file beside the outputs, which is mapped
// when the archives are written: memory holds one member at a time, however
// many there are.
class Scratch {
 public:
  explicit Scratch(std::string near) : near_(std::move(near)) {}
  OutputFile& out() {
    if (!out_) out_.emplace(OutputFile::scratch(near_));
    return *out_;
  }
  std::uint64_t add(Bytes data) {
    const std::uint64_t at = out().written();
    out().write(data);
    return at;
  }
  // The finished file (nullptr when nothing was added).
  std::shared_ptr<InputFile> finish(const std::string& name) { return out_ ? out_->map(name) : nullptr; }

 private:
  std::string near_;
  std::optional<OutputFile> out_;
};

// Where a new member's bytes are: the archive, or a range of a scratch file
// (then `data` is set once the scratch file is mapped).
struct PendingMember {
  std::string name;
  Bytes data;
  const InputFile* source = nullptr;  // the file `data` lies in, if any
  std::uint64_t scratch_offset = 0;
  std::uint64_t scratch_size = 0;
  bool in_scratch = false;
  const std::vector<std::string>* symbols = nullptr;  // worked out while scanning
};

// Lets go of the pages of `in` before `pos`, kReleaseStep or more at a time;
// `dropped` is where the last release ended, the new end is returned.
std::uint64_t release_behind(const InputFile& in, std::uint64_t dropped, std::uint64_t pos) {
  if (pos < dropped + kReleaseStep) return dropped;
  in.release(dropped, pos - dropped);
  return pos;
}

// What one slice of the archive's members gives each requested target, with
// the slice's own scratch file and record of what each bundle entry ID means
// (an archive repeats a few IDs over many members: each is worked out once).
struct Slice {
  explicit Slice(std::string near) : scratch(std::move(near)) {}
  std::vector<archive::Member> members;
  struct IdVerdict {
    std::vector<std::size_t> compatible;  // indexes of the requested targets
    std::string_view device_ext;
  };
  std::unordered_map<std::string, IdVerdict> verdicts;
  std::vector<std::vector<PendingMember>> per_target;
  Scratch scratch;
  std::shared_ptr<InputFile> rewritten;      // the scratch file, mapped
  std::deque<std::vector<std::string>> symbol_lists;
};

void scan_slice(const Config& config, const std::shared_ptr<InputFile>& in, const std::vector<BundleId>& requested,
                Slice& slice) {
  const std::vector<archive::Member>& members = slice.members;
  static const std::vector<std::string> kNoSymbols;
  slice.per_target.resize(requested.size());
  auto verdict = [&](const std::string& id) -> const Slice::IdVerdict& {
    auto [it, inserted] = slice.verdicts.try_emplace(id);
    if (inserted) {
      const BundleId code_object(id, config.id_rules);
      for (std::size_t i = 0; i < requested.size(); ++i)
        if (target::is_code_object_compatible(code_object, requested[i], config.hip_openmp_compatible))
          it->second.compatible.push_back(i);
      it->second.device_ext = device_extension(id);
    }
    return it->second;
  };
  const bool keep_mapped = in->size() <= kKeepMapped;
  std::uint64_t dropped = members.empty() ? 0 : members.front().header_offset;
  for (const archive::Member& m : members) {
    OpenedBundle b = open_bundle(config, in, m.offset, m.data.size(), member_display(in->path(), m.name));
    for (std::size_t index : b.llvm_order()) {
      const BundleEntry& e = b.entries[index];
      const Slice::IdVerdict& v = verdict(e.id);
      if (v.compatible.empty()) continue;
      PendingMember pm;
      pm.name = device_member_name(m.name, e.id, v.device_ext);
      if (b.is_host_marker(e) && config.print_commands) {
        // -###: LLVM prints the llvm-objcopy command it would run on temporary
        // copies of the member, and the device archive gets an empty member.
        if (config.err) config.err(objcopy_command(config));
      } else if (b.is_host_marker(e)) {
        pm.in_scratch = true;
        pm.scratch_offset = slice.scratch.out().written();
        write_stripped_object(b, slice.scratch.out());
        pm.scratch_size = slice.scratch.out().written() - pm.scratch_offset;
      } else if (b.decompressed()) {
        pm.in_scratch = true;
        pm.scratch_size = e.size;
        pm.scratch_offset = slice.scratch.add(b.payload(e));
      } else {
        pm.data = b.payload(e);
        pm.source = in.get();
        // Its archive symbols now, while its pages are here; a damaged object
        // is left to the writer, which fails where LLVM fails.
        try {
          std::vector<std::string> symbols = archive::archive_symbols(pm.data, pm.name);
          pm.symbols = symbols.empty() ? &kNoSymbols : &slice.symbol_lists.emplace_back(std::move(symbols));
        } catch (const Error&) {
        }
      }
      for (std::size_t i : v.compatible) slice.per_target[i].push_back(pm);
    }
    if (!keep_mapped) dropped = release_behind(*in, dropped, m.header_offset);
  }
  if (!keep_mapped && !members.empty())
    in->release(dropped, members.back().offset + members.back().data.size() - dropped);
}

// Calls fn(member) for each member of the archive `in` in turn (errors carry
// the texts of `llvm`'s archive reader); pages of an
// archive larger than kKeepMapped are let go of behind the walk.
template <typename Fn>
void for_each_member(const InputFile& in, target::LlvmRelease llvm, Fn&& fn) {
  archive::MemberReader reader(in.bytes(), in.path(), false, llvm);
  const bool keep_mapped = in.size() <= kKeepMapped;
  std::uint64_t dropped = 0;
  while (std::optional<archive::Member> m = reader.next()) {
    fn(*m);
    if (!keep_mapped) dropped = release_behind(in, dropped, m->header_offset);
  }
  if (!keep_mapped) in.release(dropped, in.size() - dropped);
}

}  // namespace

void check_input_archive(const Config& config) {
  const std::string& path = config.inputs[0];
  auto in = open_first_input(config);
  for_each_member(*in, config.reading, [&](const archive::Member& m) {
    OpenedBundle b = open_bundle(config, in, m.offset, m.data.size(), member_display(path, m.name), /*decompress=*/false);
    std::set<std::string> ids;
    for (const BundleEntry& e : b.entries) ids.insert(e.id);
    if (auto c = target::conflicting_target_ids(ids))
      fail_llvm("conflicting TargetIDs [{}, {}] found in {} of {}", c->first, c->second, m.name, path);
  });
}

void unbundle_archive(const Config& config, const std::vector<BundleId>& targets) {
  Crew crew;  // first, so that its helpers are running when there is work for them
  if (config.check_input_archive) check_input_archive(config);
  const std::string& path = config.inputs[0];
  auto in = open_first_input(config);

  // As in the non-archive path, LLVM works with the standardised names, parsed again.
  const auto [names, requested] = standardised(targets, config.id_rules);

  // The members in slices of kSliceMembers, each scanned as soon as the walk
  // over the headers has passed it, side by side with the walk and each other.
  // Slices do not depend on the machine, so every machine takes the same path.
  // -verbose and -### print as they go: then all is done in order on this thread.
  const bool in_order = config.verbose || config.print_commands;
  const std::string near = config.outputs.empty() ? std::string() : config.outputs[0];
  std::deque<Slice> scans;
  run_pipeline(
      crew, in_order ? 1 : 0, scans,
      [&](auto add) {
        std::vector<archive::Member> batch;
        auto publish = [&] {
          if (batch.empty()) return;
          Slice slice(near);
          slice.members = std::exchange(batch, {});
          add(std::move(slice));
        };
        try {
          for_each_member(*in, config.reading, [&](const archive::Member& m) {
            batch.push_back(m);
            if (batch.size() == kSliceMembers) publish();
          });
        } catch (...) {
          publish();  // the members before a damaged header are scanned, and report first
          throw;
        }
        publish();
      },
      [&](std::size_t, Slice& slice) { scan_slice(config, in, requested, slice); });

  std::vector<std::vector<PendingMember>> per_target(targets.size());
  for (Slice& scan : scans) {
    scan.rewritten = scan.scratch.finish(path);
    for (std::size_t i = 0; i < targets.size(); ++i)
      for (PendingMember& pm : scan.per_target[i]) {
        if (pm.in_scratch) {
          pm.data = scan.rewritten->bytes().subspan(pm.scratch_offset, pm.scratch_size);
          pm.source = scan.rewritten.get();
        }
        per_target[i].push_back(std::move(pm));
      }
  }
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (per_target[i].empty() && !config.allow_missing_bundles)
      fail_llvm("no compatible code object found for the target '{}' in heterogeneous archive library: {}", names[i],
                path);

  // One archive per target, written side by side: each is its own file, so
  // the bytes do not depend on the thread count; most of the time is the
  // kernel copying payloads into the page cache, which scales with threads.
  // The pages of a large archive were let go of by the scan: its writers read
  // the payloads (pread into a buffer) rather than map them in again, so
  // memory stays flat with no more releasing (5000 members, 263 MB: 11300
  // page faults instead of 15700, no madvise calls instead of 167).
  std::vector<OutputFile> outs;
  for (std::size_t i = 0; i < targets.size(); ++i) outs.emplace_back(config.outputs[i]);
  crew.last_stage();
  run_jobs(crew, targets.size(), 0, [&](std::size_t i) {
    const std::vector<PendingMember>& pending = per_target[i];
    std::vector<archive::NewMember> list;
    list.reserve(pending.size());
    for (const PendingMember& pm : pending) list.push_back({pm.name, pm.data, pm.source, pm.symbols});
    archive::write_gnu_archive(outs[i], list, {.read_sources = in->size() > kKeepMapped});
  });
  OutputFile::commit_all(outs);
}

std::vector<ArchiveEntry> archive_entries(const Config& config) {
  const std::string& path = config.inputs[0];
  auto in = open_first_input(config);
  std::vector<ArchiveEntry> out;
  for_each_member(*in, config.reading, [&](const archive::Member& m) {
    OpenedBundle b = open_bundle(config, in, m.offset, m.data.size(), member_display(path, m.name));
    for (const BundleEntry& e : b.entries) out.push_back({m.name, e.id});
  });
  return out;
}

}  // namespace ot::bundler
