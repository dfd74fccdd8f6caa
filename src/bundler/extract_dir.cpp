#include "bundler/extract_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <tuple>

#include "bundler/archive_unbundle.h"
#include "bundler/bundle_input.h"
#include "contents/walker.h"
#include "formats/nv_fatbin.h"
#include "support/llvm_path.h"
#include "support/mapped_file.h"
#include "support/md5.h"
#include "support/output_file.h"
#include "target/target_id.h"

namespace ot::bundler {

using target::BundleId;

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

namespace {

bool utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

}  // namespace

std::string shorten_middle(std::string_view text, std::size_t max, std::string_view tag) {
  if (text.size() <= max) return std::string(text);
  const std::string mark = fmt::format("~{}~", tag);
  const std::size_t keep = max > mark.size() ? max - mark.size() : 0;
  std::size_t head = (keep + 1) / 2, tail_at = text.size() - keep / 2;
  while (head > 0 && utf8_continuation(text[head])) --head;
  while (tail_at < text.size() && utf8_continuation(text[tail_at])) ++tail_at;
  return fmt::format("{}{}{}", text.substr(0, head), mark, text.substr(tail_at));
}

namespace {

std::string name_tag(std::string_view name) {
  Md5 md5;
  md5.update(as_bytes(name));
  return fmt::format("{:08x}", md5.truncated() & 0xffffffffu);
}

}  // namespace

std::string fit_file_name(std::string_view name) { return shorten_middle(name, kMaxFileName, name_tag(name)); }

std::string unique_file_name(const std::string& name, std::set<std::string>& taken) {
  if (taken.insert(name).second) return name;
  const std::string stem(llvm_path::stem(name)), ext(llvm_path::extension(name));
  for (std::uint64_t n = 1;; ++n) {
    std::string candidate = fit_file_name(fmt::format("{}.{}{}", stem, n, ext));
    if (taken.insert(candidate).second) return candidate;
  }
}

std::string extract_file_name(std::string_view base, std::string_view bundle_id) {
  const std::string full = safe_file_name(device_member_name(base, bundle_id));
  if (full.size() <= kMaxFileName) return full;
  // The stem appears twice: shortened alike, it leaves room for the ID and extension.
  const std::string_view file = llvm_path::filename(base), stem = llvm_path::stem(file);
  const std::string_view ext = file.substr(stem.size());
  const std::string tag = name_tag(full);
  const std::size_t fixed = full.size() - 2 * stem.size(), shortest = tag.size() + 2 + 16;
  if (!stem.empty() && fixed + 2 * shortest <= kMaxFileName) {
    const std::string shorter = fmt::format("{}{}", shorten_middle(stem, (kMaxFileName - fixed) / 2, tag), ext);
    std::string name = safe_file_name(device_member_name(shorter, bundle_id));
    if (name.size() <= kMaxFileName) return name;
  }
  return fit_file_name(full);
}

std::string extract_base_name(const contents::Container& c, const std::string& input) {
  std::string member = c.innermost_member();
  if (!member.empty()) return member;
  return std::string(llvm_path::filename(input == "-" ? std::string_view("stdin") : std::string_view(input)));
}

namespace {

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

// `dir`, created if missing; "<dir>/" is returned.
std::string prepare_dir(const std::string& dir) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT || ::mkdir(dir.c_str(), 0777) != 0) throw Error({}, open_error_text(dir, errno));
  } else if (!S_ISDIR(st.st_mode)) {
    throw Error({}, open_error_text(dir, ENOTDIR));
  }
  return dir.ends_with('/') ? dir : dir + "/";
}

// The walk's visitor: selects, names and writes each entry as it is visited.
class Extractor : public contents::Visitor {
 public:
  Extractor(const Config& config, const InputFile& in, const std::vector<BundleId>& requested, Staging& staging,
            std::string prefix)
      : config_(config), in_(in), requested_(requested), found_(requested.size(), false), staging_(staging),
        prefix_(std::move(prefix)) {}

  void container(const contents::Container& c) override {
    // The bundle reader refuses such a bundle: its entries cannot be told apart.
    if (!c.refused_duplicates.empty())
      fail(c.name(), "the bundle stores '{}' twice: its entries are not read", c.refused_duplicates.front());
  }

  void entry(const contents::Container& c, const contents::Entry& e) override {
    if (e.fatbin) {
      fatbin_entry(c, e);
      return;
    }
    bool wanted = requested_.empty();
    const BundleId code_object(e.id, config_.id_rules);
    for (std::size_t i = 0; i < requested_.size(); ++i)
      if (target::is_code_object_compatible(code_object, requested_[i], config_.hip_openmp_compatible))
        wanted = found_[i] = true;
    if (!wanted) return;
    const std::string member = c.innermost_member();
    const std::string name = unique_file_name(extract_file_name(extract_base_name(c, in_.path()), e.id), taken_);
    OutputFile out(staging_.path(name));
    if (!c.object.empty() && is_host_marker(e.bytes))  // an object's host entry
      write_stripped_object(in_, c.object, object_name(c), out);
    else if (e.offset)
      out.copy_from(in_, *e.offset, e.size);  // in the named file: no pass through memory
    else
      out.write(e.bytes);
    out.commit();
    staging_.add(name);
    written_.push_back({member, e.id, prefix_ + name});
  }

  const std::vector<bool>& found() const { return found_; }
  std::vector<ExtractedFile> take_written() { return std::move(written_); }

 private:
  // An NVIDIA fatbin's entry, named as cuobjdump -xelf/-xptx names it:
  // "<file stem>.<n>.sm_80.cubin" and "<file stem>.<n>.sm_80.ptx", n counting
  // the cubins and the PTX files of each file or member apart; written
  // decompressed, PTX without the NUL that ends its text in the fatbin.
  // Selected by its target ("sm_80", "compute_80") in a requested ID.
  void fatbin_entry(const contents::Container& c, const contents::Entry& e) {
    bool wanted = requested_.empty();
    for (std::size_t i = 0; i < requested_.size(); ++i)
      if (requested_[i].target_id() == e.id) wanted = found_[i] = true;
    const std::string base = extract_base_name(c, in_.path());
    auto& [cubins, ptx, other] = counters_[base];
    const formats::FatbinEntry& fe = *e.fatbin;
    const std::uint64_t n = fe.kind == formats::kFatbinKindElf ? ++cubins : fe.kind == formats::kFatbinKindPtx ? ++ptx : ++other;
    if (!wanted) return;
    const std::string arch = fmt::format("sm_{}{}", fe.arch, e.id.substr(e.id.find_last_not_of("af") + 1));
    const std::string ext = fe.kind == formats::kFatbinKindElf ? "cubin"
                            : fe.kind == formats::kFatbinKindPtx ? "ptx"
                                                                 : fmt::format("kind{}.bin", fe.kind);
    const std::string stem(llvm_path::stem(base));
    const std::string name =
        unique_file_name(fit_file_name(safe_file_name(fmt::format("{}.{}.{}.{}", stem, n, arch, ext))), taken_);
    std::vector<std::byte> image = contents::entry_image(e, contents::location(c, e));
    std::size_t size = image.size();
    if (fe.kind == formats::kFatbinKindPtx)
      while (size > 0 && image[size - 1] == std::byte{0}) --size;
    OutputFile out(staging_.path(name));
    out.write(Bytes(image.data(), size));
    out.commit();
    staging_.add(name);
    written_.push_back({c.innermost_member(), e.id, prefix_ + name});
  }

  // "lib.a(ob.o)": the object's name in errors, its chain without the sections' link.
  static std::string object_name(contents::Container c) {
    c.chain.pop_back();
    return c.name();
  }

  const Config& config_;
  const InputFile& in_;
  const std::vector<BundleId>& requested_;
  std::vector<bool> found_;
  Staging& staging_;
  std::string prefix_;
  std::set<std::string> taken_;
  std::vector<ExtractedFile> written_;
  std::map<std::string, std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> counters_;  // fatbin entries per base name
};

}  // namespace

std::vector<ExtractedFile> extract_to_dir(const Config& config, const std::vector<BundleId>& targets,
                                          const std::string& dir, const contents::Limits& limits) {
  const std::string& path = config.inputs[0];
  auto in = open_first_input(config);
  const auto [names, requested] = standardised(targets, config.id_rules);
  // Folder first, so that a bad folder fails before any work.
  const std::string prefix = prepare_dir(dir);
  Staging staging(prefix);
  Extractor x(config, *in, requested, staging, prefix);
  contents::walk_input(*in, x, limits);
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (!x.found()[i] && !config.allow_missing_bundles)
      fail_llvm("no compatible code object found for the target '{}' in {}", names[i], path);
  staging.move_all();
  return x.take_written();
}

}  // namespace ot::bundler
