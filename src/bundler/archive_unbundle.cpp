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
#include "formats/bundle_binary.h"
#include "formats/bundle_text.h"
#include "formats/compressed_bundle.h"
#include "object/bundle_sections.h"
#include "object/object_file.h"
#include "support/llvm_stringmap.h"
#include "support/mapped_file.h"
#include "support/md5.h"
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

constexpr std::string_view kSectionPrefix = "__CLANG_OFFLOAD_BUNDLE__";

std::string member_display(const std::string& archive, const std::string& member) {
  return fmt::format("{}({})", archive, member);
}

// Runs `f`; an ot::Error about `display` gets `base` added to its offset, so
// that errors inside a member point into the archive.
template <typename F>
auto rebased(const std::string& display, std::uint64_t base, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (e.file() != display || !e.offset()) throw;
    throw Error({e.file(), *e.offset() + base}, e.message());
  }
}

// "1,234,567": LLVM's formatWithCommas (for the -verbose statistics).
std::string with_commas(std::uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A member's bundle after decompression: `bytes` views either the archive's
// mapping (owner = the archive) or a decompressed copy (owner = that copy).
struct MemberBundle {
  std::shared_ptr<InputFile> decompressed;
  Bytes bytes;
  bool object = false;
  std::vector<BundleEntry> entries;  // in the order LLVM offers them
};

// LLVM 19's CompressedOffloadBundle::decompress for one member, with its
// -verbose report; its failures are "Failed to decompress code object: ...".
std::shared_ptr<InputFile> decompress_member(const Config& config, Bytes data, const std::string& display,
                                             std::uint64_t base) {
  auto t0 = std::chrono::steady_clock::now();
  const std::uint16_t version = load_le<std::uint16_t>(data.data() + 4);
  const std::uint16_t method = load_le<std::uint16_t>(data.data() + 6);
  if (version >= 2 && data.size() < formats::ccob_header_size(version))
    fail_llvm("Failed to decompress code object: Compressed bundle header size too small");
  if (method > 1) fail_llvm("Failed to decompress code object: Unknown compressing method");
  const formats::CcobHeader h = rebased(display, base, [&] { return formats::read_ccob_header(data, display); });
  const Bytes payload = formats::ccob_payload(data, h);
  std::vector<std::byte> plain;
  try {
    plain = compress::decompress(h.method, payload, h.uncompressed_size);
  } catch (const Error& e) {
    if (h.total_size && *h.total_size != data.size())
      fail_at({display, base + 8},
              "compressed bundle of total size 0x{:x} (the member has 0x{:x} bytes) does not decompress: {}",
              *h.total_size, data.size(), e.message());
    fail_llvm("Failed to decompress code object: Could not decompress embedded file contents: {}", e.message());
  }
  if (config.verbose && config.err) {
    Md5 md5;
    md5.update(plain);
    const std::uint64_t recalculated = md5.truncated();
    const double secs = std::max(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1e-9);
    const double rate = static_cast<double>(plain.size()) / static_cast<double>(payload.size());
    std::string text = fmt::format("Compressed bundle format version: {}\n", h.version);
    if (h.total_size) text += fmt::format("Total file size (from header): {} bytes\n", with_commas(*h.total_size));
    text += fmt::format(
        "Decompression method: {}\nSize before decompression: {} bytes\nSize after decompression: {} bytes\n"
        "Compression rate: {:.2f}\nCompression ratio: {:.2f}%\nDecompression speed: {:.2f} MB/s\n"
        "Stored hash: 0x{:014x}\nRecalculated hash: 0x{:014x}\nHashes match: {}\n",
        compress::method_name(h.method), with_commas(payload.size()), with_commas(plain.size()), rate, 100.0 / rate,
        static_cast<double>(plain.size()) / (1024.0 * 1024.0) / secs, h.hash, recalculated,
        h.hash == recalculated ? "Yes" : "No");
    config.err(text);
  }
  return InputFile::from_memory(display, std::move(plain));
}

// Entries of one member (or of a whole non-archive input when `text_comment`
// is set for a text type). Archive members use LLVM's choice for -type=a:
// objects get the section handler, everything else the binary handler.
MemberBundle open_member(const Config& config, Bytes data, const std::string& display, std::uint64_t base,
                         bool decompress, std::optional<std::string_view> text_comment = std::nullopt) {
  MemberBundle b;
  b.bytes = data;
  // LLVM 19 treats anything shorter than the v1 header as uncompressed.
  if (decompress && data.size() >= 20 && formats::has_ccob_magic(data)) {
    b.decompressed = decompress_member(config, data, display, base);
    b.bytes = b.decompressed->bytes();
    base = 0;  // offsets now refer to the decompressed bytes
  } else if (decompress && config.verbose && data.size() >= 20 && config.err) {
    config.err("Uncompressed bundle.\n");
  }
  rebased(display, base, [&] {
    if (text_comment) {
      b.entries = formats::read_text_bundle(b.bytes, *text_comment, display);
    } else if (object::identify_object(b.bytes) != object::ObjectKind::NotObject) {
      b.object = true;
      for (const object::SectionInfo& s : object::read_sections(b.bytes, display))
        if (s.name.starts_with(kSectionPrefix))
          b.entries.push_back({s.name.substr(kSectionPrefix.size()), s.offset, s.has_data ? s.size : 0});
    } else if (formats::has_binary_bundle_magic(b.bytes)) {
      std::vector<BundleEntry> entries = formats::read_binary_bundle(b.bytes, display);
      std::vector<std::string> ids;
      for (const BundleEntry& e : entries) ids.push_back(e.id);
      for (std::size_t i : stringmap_order(ids)) b.entries.push_back(std::move(entries[i]));
    }
    return 0;
  });
  return b;
}

bool is_host_marker(const MemberBundle& b, const BundleEntry& e) {
  return b.object && e.size == 1 && b.bytes[e.offset] == std::byte{0};
}

// Writes the member's object without its bundle sections (what LLVM 19 asks
// llvm-objcopy to do for a host bundle).
void write_stripped(const MemberBundle& b, const std::string& display, OutputFile& out) {
  std::shared_ptr<InputFile> obj = b.decompressed;
  if (!obj) obj = InputFile::from_memory(display, std::vector<std::byte>(b.bytes.begin(), b.bytes.end()));
  object::write_without_sections(*obj, [](std::string_view name) { return name.starts_with(kSectionPrefix); }, out);
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
    MemberBundle b = open_member(config, m.data, display, m.offset, /*decompress=*/false);
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
    MemberBundle b = open_member(config, m.data, display, m.offset, /*decompress=*/true);
    for (const BundleEntry& e : b.entries) {
      const BundleId code_object(e.id);
      std::vector<std::size_t> compatible;
      for (std::size_t i = 0; i < requested.size(); ++i)
        if (target::is_code_object_compatible(code_object, requested[i], config.hip_openmp_compatible))
          compatible.push_back(i);
      if (compatible.empty()) continue;
      PendingMember pm;
      pm.name = device_member_name(m.name, e.id);
      if (is_host_marker(b, e) && config.print_commands) {
        // -###: LLVM prints the llvm-objcopy command it would run on temporary
        // copies of the member, and the device archive gets an empty member.
        if (config.err) config.err(objcopy_command(config));
      } else if (is_host_marker(b, e)) {
        pm.in_scratch = true;
        pm.scratch_offset = scratch.out().written();
        write_stripped(b, display, scratch.out());
        pm.scratch_size = scratch.out().written() - pm.scratch_offset;
      } else if (b.decompressed) {
        pm.in_scratch = true;
        pm.scratch_size = e.size;
        pm.scratch_offset = scratch.add(b.bytes.subspan(e.offset, e.size));
      } else {
        pm.data = b.bytes.subspan(e.offset, e.size);
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

std::vector<ExtractedFile> extract_to_dir(const Config& config, const std::vector<BundleId>& targets,
                                          const std::string& dir) {
  const std::string& path = config.inputs[0];
  auto in = InputFile::open(path);
  const bool is_archive = archive::is_archive(in->bytes()) || config.type == "a";
  std::vector<archive::Member> members;
  if (is_archive) {
    members = archive::read_members(in->bytes(), path);
  } else {
    archive::Member whole;
    whole.name = std::string(path_filename(path == "-" ? std::string_view("stdin") : std::string_view(path)));
    whole.data = in->bytes();
    members.push_back(std::move(whole));
  }
  std::optional<std::string_view> text_comment;
  if (!is_archive) text_comment = formats::text_comment_for_type(config.type);

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
  for (const archive::Member& m : members) {
    const std::string display = is_archive ? member_display(path, m.name) : path;
    MemberBundle b = open_member(config, m.data, display, m.offset, /*decompress=*/true, text_comment);
    for (const BundleEntry& e : b.entries) {
      bool wanted = requested.empty();
      const BundleId code_object(e.id);
      for (std::size_t i = 0; i < requested.size(); ++i)
        if (target::is_code_object_compatible(code_object, requested[i], config.hip_openmp_compatible))
          wanted = found[i] = true;
      if (!wanted) continue;
      const std::string name = unique_file_name(safe_file_name(device_member_name(m.name, e.id)), taken);
      OutputFile out(staging.path(name));
      if (is_host_marker(b, e))
        write_stripped(b, display, out);
      else if (b.decompressed)
        out.write(b.bytes.subspan(e.offset, e.size));
      else
        out.copy_from(*in, m.offset + e.offset, e.size);
      out.commit();
      staging.add(name);
      written.push_back({is_archive ? m.name : std::string(), e.id, prefix + name});
    }
  }
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (!found[i] && !config.allow_missing_bundles)
      fail_llvm("no compatible code object found for the target '{}' in {}", names[i], path);
  staging.move_all();
  return written;
}

}  // namespace ot::bundler
