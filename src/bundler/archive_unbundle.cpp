#include "bundler/archive_unbundle.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>

#include "archive/ar_reader.h"
#include "archive/ar_writer.h"
#include "bundler/bundle_input.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "target/target_id.h"

namespace ot::bundler {

using formats::BundleEntry;
using target::BundleId;

std::string_view path_filename(std::string_view path) {
  if (path.empty()) return path;
  if (path.find_first_not_of('/') == std::string_view::npos) return "/";
  if (path.back() == '/') return ".";
  auto slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view path_stem(std::string_view path) {
  std::string_view name = path_filename(path);
  if (name == "." || name == "..") return name;
  auto dot = name.find_last_of('.');
  return dot == std::string_view::npos ? name : name.substr(0, dot);
}

std::string_view path_extension(std::string_view path) {
  std::string_view name = path_filename(path);
  if (name == "." || name == "..") return {};
  auto dot = name.find_last_of('.');
  return dot == std::string_view::npos ? std::string_view{} : name.substr(dot);
}

std::string device_member_name(std::string_view member_name, std::string_view bundle_id) {
  const std::string_view stem = path_stem(member_name);
  std::string_view ext = path_extension(member_name);
  const std::string target_id = BundleId(bundle_id).target_id();
  if (target_id.find("gfx") != std::string::npos)
    ext = ".bc";
  else if (target_id.find("sm_") != std::string::npos)
    ext = ".cubin";
  std::string name = fmt::format("{}-{}{}{}", stem, bundle_id, stem, ext);
  std::replace(name.begin(), name.end(), ':', '_');
  return name;
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
  const std::string stem(path_stem(name)), ext(path_extension(name));
  for (std::uint64_t n = 1;; ++n) {
    std::string candidate = fmt::format("{}.{}{}", stem, n, ext);
    if (taken.insert(candidate).second) return candidate;
  }
}

namespace {

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

// Where a new member's bytes are: the archive, or a range of the scratch file.
struct PendingMember {
  std::string name;
  Bytes data;                        // when in the archive
  std::uint64_t scratch_offset = 0;  // else
  std::uint64_t scratch_size = 0;
  bool in_scratch = false;
};

std::shared_ptr<InputFile> open_archive(const std::string& path, std::vector<archive::Member>& members) {
  auto in = InputFile::open(path);
  members = archive::read_members(in->bytes(), path);
  return in;
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
  std::vector<archive::Member> members;
  auto in = open_archive(path, members);
  for (const archive::Member& m : members) {
    const std::string display = member_display(path, m.name);
    OpenedBundle b = open_bundle(config, in, m.offset, m.data.size(), display, /*decompress=*/false);
    std::set<std::string> ids;
    for (const BundleEntry& e : b.entries) ids.insert(e.id);
    if (auto c = target::conflicting_target_ids(ids))
      fail_llvm("conflicting TargetIDs [{}, {}] found in {} of {}", c->first, c->second, m.name, path);
  }
}

void unbundle_archive(const Config& config, const std::vector<BundleId>& targets) {
  if (config.check_input_archive) check_input_archive(config);
  const std::string& path = config.inputs[0];
  std::vector<archive::Member> members;
  auto in = open_archive(path, members);

  // As in the non-archive path, LLVM works with the standardised names, parsed again.
  std::vector<std::string> names;
  std::vector<BundleId> requested;
  for (const BundleId& t : targets) {
    names.push_back(t.str());
    requested.emplace_back(names.back());
  }
  std::vector<std::vector<PendingMember>> per_target(targets.size());
  Scratch scratch(config.outputs.empty() ? std::string() : config.outputs[0]);
  for (const archive::Member& m : members) {
    const std::string display = member_display(path, m.name);
    OpenedBundle b = open_bundle(config, in, m.offset, m.data.size(), display);
    for (std::size_t index : b.llvm_order()) {
      const BundleEntry& e = b.entries[index];
      const BundleId code_object(e.id);
      std::vector<std::size_t> compatible;
      for (std::size_t i = 0; i < requested.size(); ++i)
        if (target::is_code_object_compatible(code_object, requested[i], config.hip_openmp_compatible))
          compatible.push_back(i);
      if (compatible.empty()) continue;
      PendingMember pm;
      pm.name = device_member_name(m.name, e.id);
      if (b.is_host_marker(e) && config.print_commands) {
        // -###: LLVM prints the llvm-objcopy command it would run on temporary
        // copies of the member, and the device archive gets an empty member.
        if (config.err) config.err(objcopy_command(config));
      } else if (b.is_host_marker(e)) {
        pm.in_scratch = true;
        pm.scratch_offset = scratch.out().written();
        write_stripped_object(b, scratch.out());
        pm.scratch_size = scratch.out().written() - pm.scratch_offset;
      } else if (b.decompressed()) {
        pm.in_scratch = true;
        pm.scratch_size = e.size;
        pm.scratch_offset = scratch.add(b.payload(e));
      } else {
        pm.data = b.payload(e);
      }
      for (std::size_t i : compatible) per_target[i].push_back(pm);
    }
  }

  for (std::size_t i = 0; i < targets.size(); ++i)
    if (per_target[i].empty() && !config.allow_missing_bundles)
      fail_llvm("no compatible code object found for the target '{}' in heterogeneous archive library: {}", names[i],
                path);

  std::shared_ptr<InputFile> rewritten = scratch.finish(config.inputs[0]);
  std::vector<OutputFile> outs;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    std::vector<archive::NewMember> list;
    list.reserve(per_target[i].size());
    for (const PendingMember& pm : per_target[i]) {
      if (pm.in_scratch)
        list.push_back({pm.name, rewritten->bytes().subspan(pm.scratch_offset, pm.scratch_size), rewritten.get()});
      else
        // Small payloads go through the output's buffer (one write per 64 KiB
        // instead of a copy_file_range per member); large ones are copied by
        // the kernel without entering this process's memory.
        list.push_back({pm.name, pm.data, pm.data.size() >= (1u << 20) ? in.get() : nullptr});
    }
    outs.emplace_back(config.outputs[i]);
    archive::write_gnu_archive(outs.back(), list);
  }
  OutputFile::commit_all(outs);
}

std::vector<ArchiveEntry> archive_entries(const Config& config) {
  const std::string& path = config.inputs[0];
  std::vector<archive::Member> members;
  auto in = open_archive(path, members);
  std::vector<ArchiveEntry> out;
  for (const archive::Member& m : members) {
    OpenedBundle b = open_bundle(config, in, m.offset, m.data.size(), member_display(path, m.name));
    for (const BundleEntry& e : b.entries) out.push_back({m.name, e.id});
  }
  return out;
}

std::vector<ExtractedFile> extract_to_dir(const Config& config, const std::vector<BundleId>& targets,
                                          const std::string& dir) {
  const std::string& path = config.inputs[0];
  auto in = InputFile::open(path);
  const bool is_archive = archive::is_archive(in->bytes()) || config.type == "a";
  std::vector<archive::Member> members;
  if (is_archive) members = archive::read_members(in->bytes(), path);

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
        is_archive ? member : std::string(path_filename(path == "-" ? std::string_view("stdin") : std::string_view(path)));
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
    for (const archive::Member& m : members)
      extract(open_bundle(members_config, in, m.offset, m.data.size(), member_display(path, m.name)), m.name);
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
