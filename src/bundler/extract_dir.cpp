#include "bundler/extract_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "archive/ar_reader.h"
#include "bundler/archive_unbundle.h"
#include "bundler/bundle_input.h"
#include "contents/tree.h"
#include "contents/walker.h"
#include "formats/kpack.h"
#include "formats/nv_fatbin.h"
#include "support/llvm_path.h"
#include "support/mapped_file.h"
#include "support/md5.h"
#include "support/output_file.h"
#include "support/signals.h"
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
// the staging folder is removed, so the destination is left as it was (on a
// signal too: support/signals.h).
class Staging {
 public:
  explicit Staging(const std::string& prefix) : prefix_(prefix) {
    dir_ = fmt::format("{}.offloadtool-extract-{}", prefix, ::getpid());
    if (::mkdir(dir_.c_str(), 0700) != 0) throw Error({}, open_error_text(dir_, errno));
    signals::register_temp_dir(dir_.c_str());
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    signals::unregister_temp_dir(dir_.c_str());
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

// The destination folder, created if missing. A folder this run created is
// removed again when the run fails (it is empty then: the staging folder
// inside it is gone first), so that a failure leaves nothing behind.
class Destination {
 public:
  explicit Destination(const std::string& dir) : dir_(dir) {
    struct stat st{};
    if (::stat(dir.c_str(), &st) != 0) {
      if (errno != ENOENT || ::mkdir(dir.c_str(), 0777) != 0) throw Error({}, open_error_text(dir, errno));
      created_ = true;
    } else if (!S_ISDIR(st.st_mode)) {
      throw Error({}, open_error_text(dir, ENOTDIR));
    }
  }
  Destination(const Destination&) = delete;
  Destination& operator=(const Destination&) = delete;
  ~Destination() {
    if (created_) ::rmdir(dir_.c_str());
  }
  std::string prefix() const { return dir_.ends_with('/') ? dir_ : dir_ + "/"; }  // "<dir>/"
  void keep() { created_ = false; }

 private:
  std::string dir_;
  bool created_ = false;
};

// A requested target: a bundle entry ID (`id`, standardised as LLVM works with
// it) or a bare target ID (`spec` alone).
struct Wanted {
  compat::TargetSpec spec;
  std::optional<BundleId> id;
  std::string name;  // in errors: the standardised ID, or the target as given
};

// The walk's visitor: selects, names and writes each entry as it is visited.
class Extractor : public contents::Visitor {
 public:
  // `taken`: the names given so far, shared by the files of a directory.
  Extractor(const Config& config, const InputFile& in, const std::vector<Wanted>& requested, Staging& staging,
            std::string prefix, const contents::Limits& limits, std::set<std::string>& taken)
      : config_(config), in_(in), requested_(requested), found_(requested.size(), false), staging_(staging),
        prefix_(std::move(prefix)), limits_(limits), input_is_ar_(is_ar(in)), taken_(taken) {}

  void container(const contents::Container& c) override {
    // The bundle reader refuses such a bundle: its entries cannot be told apart.
    if (!c.refused_duplicates.empty())
      fail(c.name(), "the bundle stores '{}' twice: its entries are not read", c.refused_duplicates.front());
  }

  void entry(const contents::Container& c, const contents::Entry& e) override {
    ++entries_;
    if (e.fatbin) {
      fatbin_entry(c, e);
      return;
    }
    bool wanted = requested_.empty();
    // A bare AMDGPU code object is taken for HIP's (ROCm's Tensile libraries,
    // PyTorch's kernels): its ID is the target ID from its header alone.
    std::optional<BundleId> code_object;
    for (std::size_t i = 0; i < requested_.size(); ++i) {
      const Wanted& w = requested_[i];
      bool hit = false;
      if (!w.id) {
        hit = of_target(w.spec, e.bundle_id);
      } else if (c.bare && !e.kind.empty()) {
        hit = w.id->target_id() == e.id;
      } else {
        if (!code_object)
          code_object.emplace(c.bare ? "hipv4-amdgcn-amd-amdhsa--" + e.id : e.kpack ? e.bundle_id : e.id, config_.id_rules);
        hit = target::is_code_object_compatible(*code_object, *w.id, config_.hip_openmp_compatible);
      }
      if (hit) wanted = found_[i] = true;
    }
    if (!wanted) return;
    if (e.kpack) {
      kpack_entry(c, e);
      return;
    }
    const std::string member = c.innermost_member();
    // A bare device code file keeps its own name.
    const std::string name =
        unique_file_name(c.bare ? fit_file_name(safe_file_name(llvm_path::filename(extract_base_name(c, in_.path()))))
                                : extract_file_name(extract_base_name(c, in_.path()), e.id),
                         taken_);
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

  // A kpack archive's code object, named after its binary key and arch
  // ("libk.so.1#0-gfx906.co": the binary's file name, its record's index,
  // the architecture), decoded where it is a zstd frame.
  void kpack_entry(const contents::Container& c, const contents::Entry& e) {
    const formats::KpackKernel& k = *e.kpack;
    const std::string name =
        unique_file_name(fit_file_name(safe_file_name(fmt::format("{}-{}.co", llvm_path::filename(k.binary), k.arch))),
                         taken_);
    OutputFile out(staging_.path(name));
    if (e.compressed)
      out.write(formats::kpack_code_object(formats::KpackScheme::ZstdPerKernel, k, e.bytes, e.kpack_archive));
    else if (e.offset)
      out.copy_from(in_, *e.offset, e.size);
    else
      out.write(e.bytes);
    out.commit();
    staging_.add(name);
    written_.push_back({c.innermost_member(), e.bundle_id, prefix_ + name});
  }

  const std::vector<bool>& found() const { return found_; }
  std::uint64_t entries() const { return entries_; }
  std::vector<ExtractedFile> take_written() { return std::move(written_); }

 private:
  // Is the entry with bundle ID (or bare code object's target, or fatbin
  // entry's target) `id` of the bare target `target`? An ID that does not
  // parse is of none. Parsed once per ID.
  bool of_target(const compat::TargetSpec& target, const std::string& id) {
    auto it = specs_.find(id);
    if (it == specs_.end()) {
      std::optional<compat::TargetSpec> spec;
      try {
        spec = compat::parse_spec(id);
      } catch (const Error&) {
      }
      it = specs_.emplace(id, std::move(spec)).first;
    }
    return it->second && compat::is_of_target(target, *it->second);
  }

  // An NVIDIA fatbin's entry, named and written as CUDA 11.8's
  // `cuobjdump -all -xelf all -xptx all <file>` names and writes it
  // (tests/real/cuda_test.py compares the two):
  //  * "<stem>.<n>.sm_80.cubin", "<stem>.<n>.sm_80.ptx" (compute_80 PTX is
  //    "sm_80" too): <stem> is the file's name without its last extension
  //    ("libcufft.so.10.9.0" of libcufft.so.10.9.0.58), n counts the cubins
  //    and the PTX files apart, from 1, in the order below.
  //  * In an ar archive named on the command line, the archive's stem names
  //    every member's entries and n runs on from member to member ("lib.a":
  //    lib.1.sm_70.cubin ... lib.5.sm_75.cubin). Inside containers cuobjdump
  //    does not read (tar, .deb, zip ...) the innermost member names its
  //    entries, each member numbered apart.
  //  * In one object, .nv_fatbin's entries come before __nv_relfatbin's
  //    whichever section comes first. The walk visits sections in table
  //    order: where an __nv_relfatbin comes before its object's .nv_fatbin
  //    has been seen (or its object has none), the numbers are worked out
  //    for the whole input by a second walk (headers only; a package is decoded twice).
  //  * A cubin is written as far as its ELF headers reach: the end of the
  //    section header table, of the program header table, or of a section
  //    that is not SHT_NOBITS, whichever is last (program headers' file
  //    ranges do not count). What follows, fatbinary's zero padding to 8 or
  //    anything else, is left out. Where the headers reach past the entry,
  //    cuobjdump reads on into whatever follows it; we stop at its end.
  //  * PTX is written decompressed up to its first NUL byte (the NUL that ends
  //    its text in the fatbin, and anything after it, are left out).
  // Selected by its target ("sm_80", "compute_80"), bare or in a requested ID.
  void fatbin_entry(const contents::Container& c, const contents::Entry& e) {
    bool wanted = requested_.empty();
    for (std::size_t i = 0; i < requested_.size(); ++i)
      if (requested_[i].id ? requested_[i].id->target_id() == e.id : of_target(requested_[i].spec, e.id))
        wanted = found_[i] = true;
    const formats::FatbinEntry& fe = *e.fatbin;
    const FatbinPlace place = fatbin_place(c);
    if (place.rank == 0 && place.nv_fatbin) nv_fatbin_seen_.insert(place.object);
    if (place.rank == 1 && !fatbin_numbers_ && !nv_fatbin_seen_.contains(place.object))
      fatbin_numbers_ = number_fatbin_entries();
    std::uint64_t n = 0;
    if (fatbin_numbers_) {
      const auto it = fatbin_numbers_->find(contents::location(c, e));
      if (it == fatbin_numbers_->end()) fail(c.name(), "entry {} was not found again on the second walk", e.index);
      n = it->second;
    } else {
      auto& [cubins, ptx, other] = counters_[place.base];
      n = fe.kind == formats::kFatbinKindElf ? ++cubins : fe.kind == formats::kFatbinKindPtx ? ++ptx : ++other;
    }
    if (!wanted) return;
    // cuobjdump 13 names an arch-specific entry "sm_90a" and a family one
    // plainly ("sm_120", for libcublasLt.so.13's sm_120f cubins).
    const std::string arch = fmt::format("sm_{}{}", fe.arch, (fe.flags & formats::kFatbinFlagArchSpecific) ? "a" : "");
    const std::string ext = fe.kind == formats::kFatbinKindElf ? "cubin"
                            : fe.kind == formats::kFatbinKindPtx ? "ptx"
                                                                 : fmt::format("kind{}.bin", fe.kind);
    const std::string stem(llvm_path::stem(place.base));
    const std::string name =
        unique_file_name(fit_file_name(safe_file_name(fmt::format("{}.{}.{}.{}", stem, n, arch, ext))), taken_);
    // Decoded straight into the output file's mapping (a declared size of
    // GiBs costs no memory: zstd's pages are dropped behind the decoder),
    // then cut to what cuobjdump writes.
    const std::string where = contents::location(c, e);
    const std::uint64_t at = e.offset.value_or(e.local_offset);
    formats::check_fatbin_image(fe, e.bytes, std::min<std::uint64_t>(4ull << 30, limits_.max_expanded_bytes), where, at);
    OutputFile out(staging_.path(name));
    const std::uint64_t full = fe.uncompressed_size();
    std::uint64_t size = full;
    auto cut = [&](Bytes image) {
      if (fe.kind == formats::kFatbinKindPtx)
        return static_cast<std::uint64_t>(std::find(image.begin(), image.end(), std::byte{0}) - image.begin());
      return fe.kind == formats::kFatbinKindElf ? static_cast<std::uint64_t>(elf_extent(image)) : image.size();
    };
    if (std::unique_ptr<WritableRegion> region = out.map_appended(full)) {
      formats::fatbin_image_into(fe, e.bytes, region->bytes(), where, at,
                                 [&](std::uint64_t done) { region->release_behind(done); });
      size = cut(Bytes(region->bytes().data(), full));
    } else if (full) {  // a file system that cannot allocate ahead: through memory
      std::vector<std::byte> image(full);
      formats::fatbin_image_into(fe, e.bytes, image, where, at);
      size = cut(image);
      out.write(Bytes(image.data(), size));
    }
    if (size < out.written()) out.resize(size);
    out.commit();
    staging_.add(name);
    written_.push_back({c.innermost_member(), e.id, prefix_ + name});
  }

  // Whether `in` starts with an ar archive's magic (read once, not per entry).
  static bool is_ar(const InputFile& in) {
    std::array<std::byte, 8> magic{};
    if (in.size() < magic.size()) return false;
    in.read_at(0, magic.data(), magic.size());
    return archive::is_archive(Bytes(magic)) || archive::is_thin_archive(Bytes(magic));
  }

  // Where a fatbin entry lies, for fatbin_entry's names and numbers.
  struct FatbinPlace {
    std::string base;    // the file or member naming it ("lib.a", "libk.so.1", "k.o")
    std::string object;  // its chain before the section holding it
    int rank = 0;        // 1 in __nv_relfatbin (numbered after the object's other fatbins)
    bool nv_fatbin = false;  // in .nv_fatbin
  };

  FatbinPlace fatbin_place(const contents::Container& c) const {
    FatbinPlace p;
    std::size_t members = 0, section = c.chain.size();
    for (std::size_t i = 0; i < c.chain.size(); ++i) {
      if (c.chain[i].member) ++members;
      if (c.chain[i].text.starts_with("section ")) section = i;
    }
    // A direct member of an ar archive named on the command line.
    const bool archive_member = members == 1 && c.chain.size() > 1 && c.chain[1].member && input_is_ar_;
    p.base = archive_member ? extract_base_name(contents::Container{}, in_.path()) : extract_base_name(c, in_.path());
    for (std::size_t i = 0; i < section && i < c.chain.size(); ++i) {
      p.object += c.chain[i].text;
      p.object += '\0';
    }
    if (section < c.chain.size()) {
      p.rank = c.chain[section].text == "section __nv_relfatbin" ? 1 : 0;
      p.nv_fatbin = c.chain[section].text == "section .nv_fatbin" || c.chain[section].text == "section .nv_fatb";
    }
    return p;
  }

  // Every fatbin entry's n (by its location), from a walk of the whole input:
  // each object's entries in walk order, those in __nv_relfatbin last.
  std::map<std::string, std::uint64_t> number_fatbin_entries() const {
    struct Seen {
      std::string base, object, location;
      int rank;
      std::uint16_t kind;
    };
    class Order : public contents::Visitor {
     public:
      explicit Order(const Extractor& x) : x_(x) {}
      bool wants_code_object_headers() const override { return false; }
      void entry(const contents::Container& c, const contents::Entry& e) override {
        if (!e.fatbin) return;
        FatbinPlace p = x_.fatbin_place(c);
        seen.push_back({std::move(p.base), std::move(p.object), contents::location(c, e), p.rank, e.fatbin->kind});
      }
      std::vector<Seen> seen;

     private:
      const Extractor& x_;
    } order(*this);
    contents::walk_input(in_, order, limits_);
    std::vector<Seen>& seen = order.seen;
    for (auto run = seen.begin(); run != seen.end();) {  // one object's entries follow one another
      auto run_end = std::find_if(run, seen.end(), [&](const Seen& s) { return s.object != run->object; });
      std::stable_sort(run, run_end, [](const Seen& a, const Seen& b) { return a.rank < b.rank; });
      run = run_end;
    }
    std::map<std::string, std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> counters;
    std::map<std::string, std::uint64_t> numbers;
    for (const Seen& s : seen) {
      auto& [cubins, ptx, other] = counters[s.base];
      numbers[s.location] =
          s.kind == formats::kFatbinKindElf ? ++cubins : s.kind == formats::kFatbinKindPtx ? ++ptx : ++other;
    }
    return numbers;
  }

  // How many bytes of `image` its ELF headers reach (see fatbin_entry); all
  // of them when it is no ELF file this reads (32- or 64-bit little-endian).
  static std::size_t elf_extent(Bytes image) {
    const auto* d = reinterpret_cast<const unsigned char*>(image.data());
    const std::uint64_t size = image.size();
    auto u16 = [&](std::uint64_t at) { return std::uint64_t(d[at]) | std::uint64_t(d[at + 1]) << 8; };
    auto u32 = [&](std::uint64_t at) { return u16(at) | u16(at + 2) << 16; };
    auto u64 = [&](std::uint64_t at) { return u32(at) | u32(at + 4) << 32; };
    if (size < 52 || std::memcmp(d, "\x7f" "ELF", 4) != 0 || d[5] != 1 || (d[4] != 1 && d[4] != 2)) return size;
    const bool is64 = d[4] == 2;
    if (is64 && size < 64) return size;
    const std::uint64_t phoff = is64 ? u64(0x20) : u32(0x1c), shoff = is64 ? u64(0x28) : u32(0x20);
    const std::uint64_t ehsize = u16(is64 ? 0x34 : 0x28), phentsize = u16(is64 ? 0x36 : 0x2a),
                        phnum = u16(is64 ? 0x38 : 0x2c), shentsize = u16(is64 ? 0x3a : 0x2e),
                        shnum = u16(is64 ? 0x3c : 0x30);
    // Ends past the image (or past 2^64) count as the image's end.
    auto end = [&](std::uint64_t off, std::uint64_t len) { return off > size || len > size - off ? size : off + len; };
    std::uint64_t extent = std::min(ehsize, size);
    if (phnum) extent = std::max(extent, end(phoff, phnum * phentsize));
    if (shnum) extent = std::max(extent, end(shoff, shnum * shentsize));
    if (shentsize >= (is64 ? 64u : 40u) && shoff <= size)
      for (std::uint64_t i = 0; i < shnum && (size - shoff) / shentsize > i; ++i) {
        const std::uint64_t h = shoff + i * shentsize;
        if (u32(h + 4) == 8) continue;  // SHT_NOBITS
        extent = std::max(extent, is64 ? end(u64(h + 0x18), u64(h + 0x20)) : end(u32(h + 0x10), u32(h + 0x14)));
      }
    return static_cast<std::size_t>(extent);
  }

  // "lib.a(ob.o)": the object's name in errors, its chain without the sections' link.
  static std::string object_name(contents::Container c) {
    c.chain.pop_back();
    return c.name();
  }

  const Config& config_;
  const InputFile& in_;
  const std::vector<Wanted>& requested_;
  std::vector<bool> found_;
  std::uint64_t entries_ = 0;  // seen, selected or not
  std::map<std::string, std::optional<compat::TargetSpec>, std::less<>> specs_;  // of_target's
  Staging& staging_;
  std::string prefix_;
  const contents::Limits& limits_;  // the walk's, for fatbin_entry's second walk
  bool input_is_ar_;                // the input is an ar archive: its members' fatbin entries are named after it
  std::set<std::string>& taken_;
  std::vector<ExtractedFile> written_;
  // fatbin_entry's: cubins, PTX and others per base name, the objects whose
  // .nv_fatbin was seen, and the numbers of a second walk where it took one.
  std::map<std::string, std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> counters_;
  std::set<std::string> nv_fatbin_seen_;
  std::optional<std::map<std::string, std::uint64_t>> fatbin_numbers_;
};

}  // namespace

std::vector<ExtractedFile> extract_to_dir(const Config& config, const std::vector<compat::TargetSpec>& targets,
                                          const std::string& dir, const contents::Limits& limits) {
  const std::string& path = config.inputs[0];
  // A directory: each of its regular files as an input, in the tree's order
  // (contents/tree.h), into one staging folder (all or nothing) with one set
  // of names (a file's duplicates of another's are numbered, never replaced).
  const bool tree = contents::is_directory(path);
  std::vector<std::string> files;
  if (tree) {
    for (const contents::TreeItem& item : contents::read_tree(path))
      if (item.kind == contents::TreeKind::File) files.push_back(item.path);
  } else {
    files.push_back(path);
  }
  std::vector<Wanted> requested;
  for (const compat::TargetSpec& t : targets) {
    Wanted w{t, std::nullopt, t.text};
    if (t.bundle_id) {  // as LLVM works with it: standardised, parsed again
      w.name = BundleId(t.text, config.id_rules).str();
      w.id.emplace(w.name, config.id_rules);
    }
    requested.push_back(std::move(w));
  }
  // Folder first, so that a bad folder fails before any work.
  Destination destination(dir);
  const std::string prefix = destination.prefix();
  Staging staging(prefix);
  std::set<std::string> taken;
  std::vector<bool> found(targets.size(), false);
  std::vector<ExtractedFile> written;
  std::uint64_t entries = 0;
  for (const std::string& file : files) {
    auto in = tree ? InputFile::open(file) : open_first_input(config);
    Extractor x(config, *in, requested, staging, prefix, limits, taken);
    contents::walk_input(*in, x, limits, tree ? file : std::string());
    for (std::size_t i = 0; i < targets.size(); ++i) found[i] = found[i] || x.found()[i];
    for (ExtractedFile& f : x.take_written()) written.push_back(std::move(f));
    entries += x.entries();
  }
  if (entries == 0) contents::fail_no_device_code(path);
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (!found[i] && !config.allow_missing_bundles) {
      if (requested[i].id)
        fail_llvm("no compatible code object found for the target '{}' in {}", requested[i].name, path);
      fail_llvm("no code object of the target '{}' found in {}", requested[i].name, path);
    }
  staging.move_all();
  destination.keep();
  return written;
}

}  // namespace ot::bundler
