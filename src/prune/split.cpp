#include "prune/split.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "compress/ccob.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_sequence.h"
#include "formats/compressed_bundle.h"
#include "object/object_file.h"
#include "object/pe_image.h"
#include "prune/package.h"
#include "prune/tree.h"
#include "support/error.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "support/signals.h"
#include "target/target_id.h"

namespace ot::prune {
namespace {

namespace elf = object::elf;
using E = elf::Elf64LE;

// Below this a code object is read and written; above, copied by the kernel
// from the input (PieceWriter's rule), so that a library's GiB of code
// objects are never resident.
constexpr std::uint64_t kCopyThreshold = 16u << 10;

// The CCOB bundles of the binaries split, decoded one after another into one
// unlinked scratch file beside the output (gone with its last descriptor, on
// any exit), which is never mapped whole: the archives copy code objects from
// it with the kernel and compress each from a mapping of its range alone.
// Holding the decoded bundles in memory until the archives were written took
// their whole size in resident memory and address space.
struct Decoded {
  explicit Decoded(const std::string& near) : file(OutputFile::scratch(near)) {}
  OutputFile file;
  std::shared_ptr<InputFile> reader;  // the file as decoded so far (one descriptor, renewed after each bundle)
};

struct CodeObject {
  std::string id;    // the bundle entry ID
  std::string arch;  // what follows its last "--" (AMD's extract_architecture_from_target)
  std::string key;   // the TOC binary key, "<kernel_name>#<i>", i the record registering its bundle
  std::uint64_t bundle = 0;  // the bundle of .hip_fatbin it is in
  // Its bytes: a range of the input file (a plain bundle's entry), or of the decoded CCOBs.
  std::shared_ptr<InputFile> in;
  std::shared_ptr<Decoded> decoded;
  std::uint64_t off = 0, size = 0;
  const InputFile& file() const { return decoded ? *decoded->reader : *in; }
};

// The device code of a HIP binary to split: its file offset and size, and
// whether the file is a PE image.
struct HipFatbin {
  std::uint64_t off = 0, size = 0;
  bool pe = false;
};

// The .hip_fatbin of a HIP binary to split: a linked ELF64 little-endian file
// with a .hip_fatbin holding bytes, or a PE image with a .hip_fat holding raw
// data and no .kpackrf. Anything else (no ELF or PE; no .hip_fatbin; a
// NOBITS one: already split, or a debug file of objcopy --only-keep-debug,
// AMD's rocm-systems#10058; a PE image split before) is no HIP binary and is
// copied.
std::optional<HipFatbin> hip_fatbin(const InputFile& in, const std::string& file) {
  if (object::is_pe_image(in.bytes())) {
    const object::PeImage pe = object::PeImage::parse(in.bytes(), file);
    std::optional<HipFatbin> found;
    for (std::size_t i = 0; i < pe.sections.size(); ++i) {
      if (pe.names[i] == formats::kKpackRefPeSection) return std::nullopt;
      if (pe.names[i].starts_with(".hip_fat") && pe.content_size(i) > 0)
        found = HipFatbin{pe.sections[i].PointerToRawData, pe.content_size(i), true};
    }
    return found;
  }
  Bytes head = in.bytes().subspan(0, std::min<std::uint64_t>(in.bytes().size(), 64));
  if (object::elf_class_of(head) != object::ElfClass::Elf64LE) return std::nullopt;
  object::ElfFile<E> f = object::ElfFile<E>::parse(in.bytes(), file);
  if (f.ehdr.e_type != elf::ET_DYN && f.ehdr.e_type != elf::ET_EXEC) return std::nullopt;
  for (std::size_t i = 0; i < f.shdrs.size(); ++i)
    if (f.names[i] == ".hip_fatbin" && f.shdrs[i].sh_type != elf::SHT_NOBITS && f.shdrs[i].sh_size > 0)
      return HipFatbin{f.shdrs[i].sh_offset, f.shdrs[i].sh_size, false};
  return std::nullopt;
}

// The code objects of .hip_fatbin (at `off`, `size` bytes of `in`), in order:
// every bundle's non-host entries, a CCOB's decompressed (its hash checked).
// Each is keyed later, per record (Splitter::file). `bundles` gets the
// bundles' offsets in .hip_fatbin; CodeObject::bundle is the bundle's number.
std::vector<CodeObject> code_objects(const std::shared_ptr<InputFile>& in, std::uint64_t off, std::uint64_t size,
                                     const std::string& file, std::vector<std::uint64_t>& bundles,
                                     const std::function<std::shared_ptr<Decoded>()>& scratch) {
  if (off > in->bytes().size() || size > in->bytes().size() - off)
    fail_at({file, off}, ".hip_fatbin (0x{:x} bytes) extends past the end of the file", size);
  Bytes blob = in->bytes().subspan(off, size);
  ByteSource source(blob, [&](std::uint64_t o, std::byte* to, std::uint64_t len) { in->read_at(off + o, to, len); });
  std::vector<formats::BundleSpan> spans = rebase_errors(off, [&] { return formats::split_bundles(source, file); });
  if (spans.empty()) fail_at({file, off}, ".hip_fatbin does not start with an offload bundle");
  std::vector<CodeObject> out;
  for (const formats::BundleSpan& span : spans) {
    const std::uint64_t at = off + span.offset;
    const std::uint64_t b = bundles.size();
    bundles.push_back(span.offset);
    std::set<std::string> arches;
    std::vector<formats::BundleEntry> entries = span.entries;
    std::shared_ptr<Decoded> decoded;
    std::uint64_t base = at;  // of the entries' offsets: in the file, or in the scratch file
    std::uint64_t plain_size = 0;
    if (span.compressed) {
      // Decoded in pieces (the codec's buffers and the frame's window), its
      // hash beside, onto the end of the scratch file; its table read back.
      const Bytes data = blob.subspan(span.offset, span.size);
      // Refused from its first bytes when they are no binary bundle, before
      // a declared size of GiBs is written out. (A header or data that does
      // not decode, or decodes short: the whole decode reports it.)
      bool binary = true;
      try {
        const formats::CcobHeader h = formats::read_ccob_header(data, file);
        const std::vector<std::byte> head = codec::decompress_head(h.method, formats::ccob_payload(data, h),
                                                                   h.uncompressed_size, formats::kBundleMagic.size());
        binary = head.size() < formats::kBundleMagic.size() || formats::has_binary_bundle_magic(head);
      } catch (const Error&) {
      }
      if (!binary) fail_at({file, at}, "the compressed bundle holds no binary offload bundle");
      decoded = scratch();
      base = decoded->file.written();
      compress::DecodedCcob d = compress::decode_ccob(
          data, file, at, [&](Bytes piece) { decoded->file.write(piece); }, true,
          [&](std::uint64_t n) { in->release(at, n); });
      if (!d.hash_matches()) throw compress::hash_mismatch_error(d, file, at);
      decoded->reader = decoded->file.read_back(file + " (decompressed bundles)");
      plain_size = decoded->file.written() - base;
      const std::string inner = file + " (decompressed bundle at " + fmt::format("0x{:x})", at);
      const ByteSource plain = ByteSource::unmapped(plain_size, [&](std::uint64_t o, std::byte* to, std::uint64_t len) {
        decoded->reader->read_at(base + o, to, len);
      });
      std::vector<std::byte> head;
      if (!formats::has_binary_bundle_magic(plain.prefix(formats::kBundleMagic.size(), head)))
        fail_at({file, at}, "the compressed bundle holds no binary offload bundle");
      entries = formats::read_binary_bundle(plain, inner);
    }
    for (const formats::BundleEntry& e : entries) {
      if (e.id.starts_with("host-")) continue;
      const std::size_t dash = e.id.rfind("--");
      if (dash == std::string::npos || dash + 2 == e.id.size())
        fail_at({file, at}, "bundle entry '{}' names no target ID after '--'", e.id);
      CodeObject co;
      co.id = e.id;
      co.arch = e.id.substr(dash + 2);
      if (co.arch.find('/') != std::string::npos || co.arch.find('\0') != std::string::npos)
        fail_at({file, at}, "bundle entry '{}' has a target ID that cannot name a file", e.id);
      if (!arches.insert(co.arch).second)
        fail_at({file, at}, "bundle {} holds two code objects for {}: the archive could key one only", b, co.arch);
      co.bundle = b;
      co.off = base + e.offset;
      co.size = e.size;
      if (decoded) {
        if (e.offset > plain_size || e.size > plain_size - e.offset)
          fail_at({file, at}, "bundle entry '{}' extends past the decompressed bundle", e.id);
        co.decoded = decoded;
      } else {
        co.in = in;
      }
      out.push_back(std::move(co));
    }
  }
  if (out.empty()) fail_at({file, off}, ".hip_fatbin holds no device code object");
  return out;
}

class Splitter {
 public:
  // `near`: the output, beside which the CCOB bundles are decoded.
  Splitter(const SplitOptions& o, std::string near) : near_(std::move(near)), o_(o) {
    if (o_.name.empty() || o_.name.find('/') != std::string::npos || o_.name.find('@') != std::string::npos)
      fail("", "the archive name '{}' must be a non-empty file name without '/' or '@'", o_.name);
  }

  // One file at `relative` (its path in the output): rewritten when it is a
  // HIP binary (true), its code objects kept for the archives.
  // `held`: `in` itself where the caller holds it (a package's spooled
  // member), else `file` is opened again.
  bool file(const InputFile& in, const std::string& file, const std::string& relative, const codec::Sink& sink,
            std::shared_ptr<InputFile> held = nullptr) {
    std::optional<HipFatbin> fatbin = hip_fatbin(in, file);
    if (!fatbin) return false;
    if (!held) held = InputFile::open(file);  // the code objects' bytes outlive the call
    std::vector<std::uint64_t> bundles;
    std::vector<CodeObject> cos = code_objects(held, fatbin->off, fatbin->size, file, bundles, [&] {
      if (!decoded_) decoded_ = std::make_shared<Decoded>(near_);
      return decoded_;
    });
    const std::string kernel = kernel_name(relative, file);
    formats::KpackRef ref;
    std::string up;
    for (char c : kernel)
      if (c == '/') up += "../";
    ref.search_paths.push_back(fmt::format("{}.kpack/{}_{}.kpack", up, o_.name, formats::kGfxArchPlaceholder));
    ref.kernel_name = kernel;
    const std::vector<std::byte> marker = formats::write_kpack_ref(ref);
    SplitFile f{relative,
                fatbin->pe ? kpack_pe_image(in, marker, bundles, file, sink)
                           : kpack_linked_elf(in, marker, bundles, file, sink),
                0};
    // Record i's code objects under "#i": AMD's splitter counts each
    // architecture's code objects instead (co_index), which is i only where
    // each record registers its own bundle, in order, and every bundle holds
    // every architecture (reference §6.2); under -fgpu-rdc two records
    // register one bundle, and the second's code objects were not found.
    std::vector<bool> registered(bundles.size());
    for (std::size_t i = 0; i < f.binary.record_bundles.size(); ++i) {
      const std::uint64_t b = f.binary.record_bundles[i];
      registered[b] = true;
      for (const CodeObject& co : cos) {
        if (co.bundle != b) continue;
        CodeObject k = co;
        k.key = fmt::format("{}#{}", kernel, i);
        by_arch_[k.arch].push_back(std::move(k));
        ++f.code_objects;
      }
      if (i != b)
        f.binary.notes.push_back(fmt::format("record {} registers bundle {}: its code objects are keyed #{} (AMD's "
                                          "splitter counts per architecture, and its key #{} would name another "
                                          "bundle or none)", i, b, i, i));
    }
    for (std::size_t b = 0; b < bundles.size(); ++b)
      if (!registered[b])
        f.binary.notes.push_back(fmt::format("bundle {} of .hip_fatbin is registered by no record: its code objects "
                                          "are left out", b));
    report_.files.push_back(std::move(f));
    return true;
  }

  // No stub archives (reference §6.1): the HIP runtime tries an archive of
  // a more specific target ID first (gfx90a:xnack- before gfx90a on an
  // xnack-off gfx90a), and before rocm-systems #9953 fails at once when that
  // archive lacks a binary's key. Where one binary of the input has code for
  // gfx90a:xnack- and another only for gfx90a, AMD's splitter writes a
  // gfx90a:xnack- archive without the second: split adds to each archive,
  // for every key it lacks, the code object of the most specific archive of
  // the same processor whose features are a subset of its own (code for
  // gfx90a loads on every gfx90a), under its own architecture key.
  void complete_specific_archives() {
    struct Parsed {
      std::string processor;
      target::FeatureMap features;
    };
    std::map<std::string, Parsed> parsed;
    for (const auto& [arch, cos] : by_arch_) {
      Parsed p;
      std::optional<std::string> proc = target::parse_target_id_format(arch, &p.features);
      if (!proc) continue;  // not a target ID: stands alone
      p.processor = *proc;
      parsed[arch] = std::move(p);
    }
    auto subset = [](const target::FeatureMap& a, const target::FeatureMap& b) {  // a strictly inside b
      if (a.size() >= b.size()) return false;
      return std::ranges::all_of(a, [&](const auto& f) {
        auto it = b.find(f.first);
        return it != b.end() && it->second == f.second;
      });
    };
    std::map<std::string, std::vector<CodeObject>> added;
    for (const auto& [arch, p] : parsed) {
      // The donors, most specific first (the loader's order), then by name.
      std::vector<std::string> donors;
      for (const auto& [other, q] : parsed)
        if (q.processor == p.processor && subset(q.features, p.features)) donors.push_back(other);
      std::ranges::stable_sort(donors, [&](const std::string& x, const std::string& y) {
        return parsed[x].features.size() > parsed[y].features.size();
      });
      std::set<std::string> keys;
      for (const CodeObject& co : by_arch_[arch]) keys.insert(co.key);
      for (const std::string& d : donors)
        for (const CodeObject& co : by_arch_[d])
          if (keys.insert(co.key).second) {
            CodeObject c = co;
            c.arch = arch;
            added[arch].push_back(std::move(c));
          }
    }
    for (auto& [arch, cos] : added) {
      report_.notes.push_back(fmt::format("archive {}_{}.kpack also holds {} code objects of less specific targets "
                                          "for the binaries that have none of its own (no stub archive shadows "
                                          "another)", o_.name, arch, cos.size()));
      for (CodeObject& co : cos) by_arch_[arch].push_back(std::move(co));
    }
  }

  // The archives, into `dir`/<root>/.kpack.
  void finish(const std::string& dir, const std::string& input) {
    const std::string kdir = dir + "/" + kpack_dir();
    archives(input, [&] {
      if (::mkdir(kdir.c_str(), 0755) != 0 && errno != EEXIST)
        fail(kdir, "cannot create the directory: {}", std::strerror(errno));
    }, [&](const std::string& name) {
      const std::string path = kdir + "/" + name;
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0) fail(path, "exists in the input: the archive would replace it");
      return OutputFile(path);
    }, [&](const std::string& name, OutputFile& out) {
      out.commit();
      ::chmod((kdir + "/" + name).c_str(), 0644);
    });
  }

  // The archives, as scratch files (a package's new members, `.kpack/<name>`).
  std::vector<PackageMember> finish_scratch(const std::string& input) {
    std::vector<PackageMember> out;
    archives(input, [] {}, [](const std::string&) { return OutputFile::scratch(""); },
             [&](const std::string& name, OutputFile& f) {
               out.push_back({kpack_dir() + "/" + name, f.map(name)});
             });
    return out;
  }

  // Each archive written to the file `open` gives (after `start`), then `done` with it.
  void archives(const std::string& input, const std::function<void()>& start,
                const std::function<OutputFile(const std::string& name)>& open,
                const std::function<void(const std::string& name, OutputFile& out)>& done) {
    if (report_.files.empty()) fail(input, "no HIP binary (.hip_fatbin holding device code): nothing to split");
    complete_specific_archives();
    start();
    for (const auto& [arch, cos] : by_arch_) {
      formats::KpackArchive a;
      a.group_name = o_.name;
      a.gfx_arch_family = arch;
      a.gfx_arches = {arch};
      a.scheme = o_.scheme;
      for (const CodeObject& co : cos) {
        formats::KpackKernel k;
        k.binary = co.key;
        k.arch = arch;
        k.ordinal = static_cast<std::uint32_t>(a.kernels.size());
        k.original_size = co.size;
        k.metadata = {{"target", co.id}, {"source_prefix", ""}};
        a.kernels.push_back(std::move(k));
      }
      const std::string name = fmt::format("{}_{}.kpack", o_.name, arch);
      OutputFile out = open(name);
      // Each code object from its file, never whole in memory: copied by the
      // kernel (small ones read and written), or compressed into the archive
      // from a mapping of its range, whose pages go behind the compressor.
      std::vector<std::byte> small;
      formats::write_kpack(a, [&](std::size_t i) -> std::uint64_t {
        const CodeObject& co = cos[i];
        const InputFile& from = co.file();
        if (o_.scheme == formats::KpackScheme::ZstdPerKernel) {
          const std::uint64_t before = out.written();
          std::unique_ptr<InputFile::Range> r = from.map_range(co.off, co.size);
          formats::kpack_compress(r->bytes(), [&](Bytes b) { out.write(b); }, [&](std::uint64_t n) { r->release(0, n); });
          r->release(0, co.size);
          return out.written() - before;
        }
        if (co.size >= kCopyThreshold) {
          out.copy_from(from, co.off, co.size);
        } else {
          small.resize(co.size);
          from.read_at(co.off, small.data(), co.size);
          out.write(small);
        }
        return co.size;
      }, [&](Bytes b, bool) { out.write(b); }, [&](std::uint64_t at, Bytes b) { out.write_at(at, b); });
      const std::uint64_t size = out.written();
      done(name, out);
      report_.archives.push_back({kpack_dir() + "/" + name, arch, cos.size(), size});
    }
  }

  SplitReport take() { return std::move(report_); }
  bool empty() const { return report_.files.empty(); }
  // For a package: the root, unless given, is its first HIP binary's install prefix.
  void root_from_prefix() { prefix_root_ = true; }

 private:
  // `relative` (a HIP binary's path in the output) from the root, which the
  // first binary fixes when not given.
  std::string kernel_name(const std::string& relative, const std::string& file) {
    if (!root_) {
      std::string r = o_.root.value_or("");
      if (!o_.root && prefix_root_) r = install_prefix(relative);
      while (r.starts_with("./")) r.erase(0, 2);
      while (r.ends_with('/')) r.pop_back();
      if (r == ".") r.clear();
      if (r.starts_with('/') || r == ".." || r.starts_with("../") || r.find("/../") != std::string::npos ||
          r.ends_with("/.."))
        fail("", "--root {}: a folder inside the output, without '..'", *o_.root);
      root_ = r;
    }
    if (root_->empty()) return relative;
    if (!relative.starts_with(*root_ + "/"))
      fail(file, "lies outside the root {} whose .kpack/ holds the archives{}", *root_,
           o_.root ? "" : " (the first HIP binary's install prefix: give --root)");
    return relative.substr(root_->size() + 1);
  }

  // The folders before the first lib, lib64, lib32 or bin of `path`'s
  // folders; without one, its folder ("demok/libk.so": "demok", so that a
  // wheel's archives stay in its package's folder).
  static std::string install_prefix(std::string_view path) {
    std::string prefix;
    for (std::size_t at = 0, slash; (slash = path.find('/', at)) != std::string_view::npos; at = slash + 1) {
      const std::string_view part = path.substr(at, slash - at);
      if (part == "lib" || part == "lib64" || part == "lib32" || part == "bin") return prefix;
      prefix += (prefix.empty() ? "" : "/") + std::string(part);
    }
    return prefix;
  }

  std::string kpack_dir() const { return root_ && !root_->empty() ? *root_ + "/.kpack" : ".kpack"; }

  std::string near_;
  std::shared_ptr<Decoded> decoded_;  // made at the first CCOB bundle
  std::optional<std::string> root_;
  bool prefix_root_ = false;
  const SplitOptions& o_;
  SplitReport report_;
  std::map<std::string, std::vector<CodeObject>> by_arch_;
};

// The folder the files given alone are split into, removed unless renamed
// into place: by the destructor, and on a signal by the handler (as
// prune/tree.cpp's staging folder).
struct Scratch {
  explicit Scratch(std::string d) : dir(std::move(d)) { signals::register_temp_dir(dir.c_str()); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    signals::unregister_temp_dir(dir.c_str());
  }
  void release() {
    signals::unregister_temp_dir(dir.c_str());
    dir.clear();
  }
  std::string dir;
};

}  // namespace

SplitReport split(const std::vector<std::string>& inputs, const std::string& out_dir, const SplitOptions& options) {
  if (inputs.empty()) fail("", "no input to split");
  Splitter s(options, folder_path(out_dir));
  struct stat st {};
  // A package in, a package out: its HIP binaries rewritten in place, the
  // archives added as members (package.h's rewrite_package).
  if (inputs.size() == 1 && ::stat(inputs[0].c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    std::shared_ptr<InputFile> in = InputFile::open(inputs[0]);
    if (package_kind(in->bytes()) != PackageKind::None) {
      if (::lstat(out_dir.c_str(), &st) == 0)
        fail(out_dir, "exists: split writes a new package (remove it, or give another name)");
      s.root_from_prefix();
      PackageRewrite rewrite;
      rewrite.file = [&](const std::shared_ptr<InputFile>& f, const std::string& member, std::string_view plain,
                         const codec::Sink& sink) {
        FileOutcome o;
        o.action = s.file(*f, member, std::string(plain), sink, f) ? FileAction::Write : FileAction::Copy;
        return o;
      };
      // None yet (a wheel's RECORD before its HIP binaries): a binary after it is refused, none at all below.
      rewrite.added = [&] { return s.empty() ? std::vector<PackageMember>{} : s.finish_scratch(inputs[0]); };
      OutputFile out(out_dir);
      rewrite_package(*in, rewrite, inputs[0], [&](Bytes b) { out.write(b); });
      if (s.empty()) fail(inputs[0], "no HIP binary (.hip_fatbin holding device code): nothing to split");
      out.copy_mode_from(inputs[0]);
      out.commit();
      return s.take();
    }
  }
  const std::string out = folder_path(out_dir);
  if (::lstat(out.c_str(), &st) == 0) fail(out, "exists: split writes a new folder (remove it, or give another name)");
  if (inputs.size() == 1 && ::stat(inputs[0].c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    TreeRewrite rewrite;
    rewrite.file = [&](const InputFile& in, const std::string& file, std::string_view relative, const codec::Sink& sink) {
      FileOutcome o;
      o.action = s.file(in, file, std::string(relative), sink) ? FileAction::Write : FileAction::Copy;
      return o;
    };
    rewrite.finish = [&](const std::string& staging) { s.finish(staging, inputs[0]); };
    rewrite_tree(inputs[0], rewrite, out_dir);
    return s.take();
  }
  // Files: each at its name in the new folder.
  std::map<std::string, std::string> names;
  for (const std::string& path : inputs) {
    if (::stat(path.c_str(), &st) != 0) fail(path, "{}", std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail(path, "a directory is split alone (give one directory, or files)");
    if (inputs.size() > 1 && S_ISREG(st.st_mode) && package_kind(InputFile::open(path)->bytes()) != PackageKind::None)
      fail(path, "a package is split alone (give one package, or files)");
    const std::string name = std::filesystem::path(path).filename().string();
    if (!names.emplace(name, path).second) fail(path, "two inputs are named {}", name);
  }
  std::filesystem::path p = std::filesystem::path(out).lexically_normal();
  std::string pattern = (p.parent_path().empty() ? std::string(".") : p.parent_path().string()) + "/." +
                        p.filename().string() + ".XXXXXX";
  if (!::mkdtemp(pattern.data())) fail(out, "cannot create a folder beside it: {}", std::strerror(errno));
  Scratch scratch(pattern);
  for (const auto& [name, path] : names) {
    std::shared_ptr<InputFile> in = InputFile::open(path);
    OutputFile file(scratch.dir + "/" + name);
    PieceWriter writer(file, *in);
    if (!s.file(*in, path, name, writer)) file.clone_from(*in);
    file.copy_mode_from(path);
    file.commit();
  }
  s.finish(scratch.dir, inputs.size() == 1 ? inputs[0] : out);
  if (::chmod(scratch.dir.c_str(), 0755) != 0 ||
      ::renameat2(AT_FDCWD, scratch.dir.c_str(), AT_FDCWD, out.c_str(), RENAME_NOREPLACE) != 0)
    fail(out, "cannot rename {} to it: {}", scratch.dir, std::strerror(errno));
  scratch.release();
  return s.take();
}

}  // namespace ot::prune
