#include "bundler/archive_unbundle.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
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

std::string safe_file_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    out += (c == '/' || c == '\\' || u < 0x20 || u == 0x7f) ? '_' : c;
  }
  if (out.empty()) return "_";
  if (out == "." || out == "..") return "_" + out;
  return out;
}

std::string unique_file_name(const std::string& name, std::set<std::string>& taken) {
  if (taken.insert(name).second) return name;
  const std::string stem(llvm_path::stem(name)), ext(llvm_path::extension(name));
  for (std::uint64_t n = 1;; ++n) {
    std::string candidate = fmt::format("{}.{}{}", stem, n, ext);
    if (taken.insert(candidate).second) return candidate;
  }
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
      const BundleId code_object(id);
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

// Calls fn(member) for each member of the archive `in` in turn; pages of an
// archive larger than kKeepMapped are let go of behind the walk.
template <typename Fn>
void for_each_member(const InputFile& in, Fn&& fn) {
  archive::MemberReader reader(in.bytes(), in.path());
  const bool keep_mapped = in.size() <= kKeepMapped;
  std::uint64_t dropped = 0;
  while (std::optional<archive::Member> m = reader.next()) {
    fn(*m);
    if (!keep_mapped) dropped = release_behind(in, dropped, m->header_offset);
  }
  if (!keep_mapped) in.release(dropped, in.size() - dropped);
}

// Extracted files are committed one by one (an archive may hold more files
// than a process may keep open) into a hidden staging folder inside the
// destination, and moved into place only when everything succeeded; on failure
// the staging folder is removed, so the destination is left as it was.
class Staging {
 public:
  explicit Staging(const std::string& prefix) : prefix_(prefix) {
    dir_ = fmt::format("{}.offloadtool-extract-{}", prefix, ::getpid());
    if (::mkdir(dir_.c_str(), 0700) != 0) throw Error({}, open_error_text(dir_, errno));
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    for (const std::string& n : names_) ::unlink(path(n).c_str());
    ::rmdir(dir_.c_str());
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  void add(const std::string& name) { names_.push_back(name); }
  void move_all() {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      const std::string to = prefix_ + names_[i];
      if (::rename(path(names_[i]).c_str(), to.c_str()) != 0) {
        const int e = errno;
        names_.erase(names_.begin(), names_.begin() + static_cast<std::ptrdiff_t>(i));
        throw Error({}, open_error_text(to, e));
      }
    }
    names_.clear();
  }

 private:
  std::string prefix_, dir_;
  std::vector<std::string> names_;
};

}  // namespace

void check_input_archive(const Config& config) {
  const std::string& path = config.inputs[0];
  auto in = InputFile::open(path);
  for_each_member(*in, [&](const archive::Member& m) {
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
  auto in = InputFile::open(path);

  // As in the non-archive path, LLVM works with the standardised names, parsed again.
  std::vector<std::string> names;
  std::vector<BundleId> requested;
  for (const BundleId& t : targets) {
    names.push_back(t.str());
    requested.emplace_back(names.back());
  }

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
          for_each_member(*in, [&](const archive::Member& m) {
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
  auto in = InputFile::open(path);
  std::vector<ArchiveEntry> out;
  for_each_member(*in, [&](const archive::Member& m) {
    OpenedBundle b = open_bundle(config, in, m.offset, m.data.size(), member_display(path, m.name));
    for (const BundleEntry& e : b.entries) out.push_back({m.name, e.id});
  });
  return out;
}

std::vector<ExtractedFile> extract_to_dir(const Config& config, const std::vector<BundleId>& targets,
                                          const std::string& dir) {
  const std::string& path = config.inputs[0];
  auto in = InputFile::open(path);
  const bool is_archive = archive::is_archive(in->bytes()) || config.type == "a";
  std::vector<archive::Member> members;  // all read first: a damaged archive fails before any work
  if (is_archive) for_each_member(*in, [&](const archive::Member& m) { members.push_back(m); });

  std::vector<std::string> names;
  std::vector<BundleId> requested;
  for (const BundleId& t : targets) {
    names.push_back(t.str());
    requested.emplace_back(names.back());
  }
  std::vector<bool> found(targets.size(), false);

  // Folder first, so that a bad folder fails before any work.
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT || ::mkdir(dir.c_str(), 0777) != 0) throw Error({}, open_error_text(dir, errno));
  } else if (!S_ISDIR(st.st_mode)) {
    throw Error({}, open_error_text(dir, ENOTDIR));
  }
  const std::string prefix = dir.ends_with('/') ? dir : dir + "/";

  std::vector<ExtractedFile> written;
  std::set<std::string> taken;
  Staging staging(prefix);
  // Files are named as device-archive members: after the archive member, or
  // for a bundle input after the input's file name.
  auto extract = [&](const OpenedBundle& b, const std::string& member) {
    const std::string& name_base =
        is_archive ? member : std::string(llvm_path::filename(path == "-" ? std::string_view("stdin") : std::string_view(path)));
    for (const BundleEntry& e : b.entries) {
      bool wanted = requested.empty();
      const BundleId code_object(e.id);
      for (std::size_t i = 0; i < requested.size(); ++i)
        if (target::is_code_object_compatible(code_object, requested[i], config.hip_openmp_compatible))
          wanted = found[i] = true;
      if (!wanted) continue;
      const std::string name = unique_file_name(safe_file_name(device_member_name(name_base, e.id)), taken);
      OutputFile out(staging.path(name));
      if (b.is_host_marker(e))
        write_stripped_object(b, out);
      else
        out.copy_from(*b.file, b.base + e.offset, e.size);
      out.commit();
      staging.add(name);
      written.push_back({member, e.id, prefix + name});
    }
  };
  if (is_archive) {
    Config members_config = config;  // members are read as -type=a reads them
    members_config.type.assign(1, 'a');  // (not = "a": GCC 12 warns falsely of overlapping copies)
    std::uint64_t dropped = 0;
    for (const archive::Member& m : members) {
      extract(open_bundle(members_config, in, m.offset, m.data.size(), member_display(path, m.name)), m.name);
      if (in->size() > kKeepMapped) dropped = release_behind(*in, dropped, m.header_offset);
    }
  } else {
    for (const OpenedBundle& b : open_bundles(config, in)) extract(b, "");
  }
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (!found[i] && !config.allow_missing_bundles)
      fail_llvm("no compatible code object found for the target '{}' in {}", names[i], path);
  staging.move_all();
  return written;
}

}  // namespace ot::bundler
