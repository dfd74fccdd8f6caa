#include "prune/join.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <map>
#include <memory>

#include "codec/codec.h"
#include "contents/walker.h"
#include "formats/bundle_binary.h"
#include "formats/kpack.h"
#include "object/kpack_records.h"
#include "object/object_file.h"
#include "object/elf_types.h"
#include "object/pe_image.h"
#include "prune/kinds.h"
#include "prune/packing.h"
#include "support/error.h"
#include "support/mapped_file.h"

namespace ot::prune {
namespace {

constexpr std::uint64_t kFatbinAlign = 4096;  // clang: .hip_fatbin's alignment and the bundler's -bundle-align
constexpr std::uint64_t kChunk = 1u << 20;    // code objects are copied through a buffer of this size

// One code object a record's key has in an archive, as the walk found it.
struct Found {
  std::string archive;  // its path
  formats::KpackKernel kernel;
  bool zstd = false;
};

// What the walk of a kpack'd binary finds: per binary key, the code objects of
// the archives in the loader's order, and the paths looked at in vain.
class Finder : public contents::Visitor {
 public:
  std::map<std::string, std::vector<Found>> by_key;
  std::vector<std::string> missing;
  void container(const contents::Container& c) override {
    for (const std::string& m : c.kpack_missing)
      if (std::find(missing.begin(), missing.end(), m) == missing.end()) missing.push_back(m);
  }
  void entry(const contents::Container& c, const contents::Entry& e) override {
    if (c.kpack_key.empty() || !e.kpack) return;  // the binary's own device code: there is none
    by_key[c.kpack_key].push_back({e.kpack_archive, *e.kpack, e.compressed});
  }
  bool wants_code_object_headers() const override { return false; }
};

// The host entry's ID `release`'s clang writes for the machine and format
// (PE: --target=<arch>-pc-windows-msvc, lld-link's images; a MinGW image gets
// it too, where 23's clang wrote w64-windows-gnu). 19 and 22 write their
// compiling machine's architecture, not the target's: for a PE image, which
// Debian's clang cross-compiles, x86_64 (an ELF file keeps its own machine's,
// as a native build would have).
std::string host_id(target::LlvmRelease release, bool aarch64, bool pe) {
  const target::ReleaseTraits& t = target::traits(release);
  if (pe && !t.hip_host_from_target) aarch64 = false;
  return fmt::format("host-{}-{}-", aarch64 ? "aarch64" : "x86_64",
                     pe ? t.hip_host_rest_pe : aarch64 ? t.hip_host_rest_aarch64 : t.hip_host_rest);
}

// The bundle entry ID of a code object: the one the splitter recorded, where
// it names the same architecture, else clang's for HIP.
std::string bundle_id(const formats::KpackKernel& k) {
  for (const auto& [key, value] : k.metadata)
    if (key == "target" && value.size() > k.arch.size() && value.ends_with(k.arch) &&
        value[value.size() - k.arch.size() - 1] == '-' && value.starts_with("hip"))
      return value;
  return fmt::format("hipv4-amdgcn-amd-amdhsa--{}", k.arch);
}

struct Bundle {
  std::vector<std::string> ids;        // host first
  std::vector<std::uint64_t> sizes;
  std::vector<const Found*> objects;   // per ID after the host's
  formats::BinaryBundleLayout layout;
  std::uint64_t offset = 0;            // in the new .hip_fatbin
};

class Joiner {
 public:
  Joiner(const InputFile& in, const Selection* keep, target::LlvmRelease release, const std::string& file)
      : in_(in), keep_(keep), release_(release), file_(file) {}

  Report run(const codec::Sink& sink) {
    const Bytes data = in_.bytes();
    const bool pe = object::is_pe_image(data);
    std::optional<object::KpackedBinary> kb;
    std::string host;
    if (pe) {
      const object::PeImage image = object::PeImage::parse(data, file_);
      kb = object::find_kpack_records(image, file_);
      host = host_id(release_, image.machine == object::coff::IMAGE_FILE_MACHINE_ARM64, true);
    } else {
      if (object::identify_object(data) != object::ObjectKind::Elf)
        fail_at({file_, 0}, "neither an ELF file nor a PE image: only kpack'd shared libraries, executables and DLLs "
                "are joined");
      kb = object::find_kpack_records(data, object::read_sections(data, file_), file_);
      host = host_id(release_, load_le<std::uint16_t>(data.data() + 18) == object::elf::EM_AARCH64, false);
    }
    if (!kb) fail_at({file_, 0}, "no HIPK record: not a kpack'd binary, nothing to join");
    const formats::KpackRef ref = formats::read_kpack_ref(kb->marker, file_, kb->marker_offset);
    contents::walk_input(in_, finder_, {}, file_);

    // The records in their section's order; all of them HIPK (join_linked_elf checks).
    std::vector<const object::KpackRecord*> records(kb->records.size());
    for (const object::KpackRecord& r : kb->records) {
      if (r.position >= records.size())
        fail_at({file_, r.offset}, "{} mixes HIPF and HIPK records: not joined", kb->records_section);
      records[r.position] = &r;
    }
    std::vector<EntryReport> entries;
    JoinedFatbin fb;
    fb.align = kFatbinAlign;
    for (const object::KpackRecord* r : records) {
      const std::string key = fmt::format("{}#{}", ref.kernel_name, r->index);
      const std::string where = fmt::format("record {} ('{}')", r->position, key);
      Bundle b;
      b.ids.push_back(host);
      b.sizes.push_back(0);
      std::vector<std::pair<std::string, const Found*>> chosen;
      std::vector<std::string> seen;
      static const std::vector<Found> kNone;
      auto it = finder_.by_key.find(key);
      for (const Found& f : it == finder_.by_key.end() ? kNone : it->second) {  // a reference, not a copy
        // The first archive holding an architecture is the one the loader reads.
        if (std::find(seen.begin(), seen.end(), f.kernel.arch) != seen.end()) continue;
        seen.push_back(f.kernel.arch);
        const std::string id = bundle_id(f.kernel);
        const bool kept = !keep_ || stays(*keep_, id, {f.archive, f.kernel.offset});
        entries.push_back({id, f.kernel.original_size, kept, fmt::format("{}, {}", where, f.archive)});
        if (kept) chosen.emplace_back(id, &f);
      }
      if (chosen.empty()) {
        std::string looked;
        for (const std::string& m : finder_.missing) looked += fmt::format("{}{}", looked.empty() ? "" : ", ", m);
        if (seen.empty())
          fail_at({file_, r->offset}, "{}: no archive holds a code object for it{}{}", where,
                  looked.empty() ? "" : "; not found: ", looked);
        fail_at({file_, r->offset}, "{}: none of its code objects ({}) is a kept target", where, fmt::join(seen, ", "));
      }
      const bool descending = target::traits(release_).hip_ids_descending;
      std::sort(chosen.begin(), chosen.end(),
                [&](const auto& a, const auto& b) { return descending ? b.first < a.first : a.first < b.first; });
      for (const auto& [id, f] : chosen) {
        b.ids.push_back(id);
        b.sizes.push_back(f->kernel.original_size);
        b.objects.push_back(f);
      }
      // Records that registered one bundle (-fgpu-rdc: each translation unit's
      // record, the one linked bundle) get the same code objects: one bundle again.
      if (const std::optional<std::uint64_t> same = same_as_before(b)) {
        fb.bundle_offsets.push_back(*same);
        continue;
      }
      b.layout = formats::layout_binary_bundle(b.ids, b.sizes, kFatbinAlign);
      fb.size = align_up(fb.size, kFatbinAlign);
      fb.bundle_offsets.push_back(fb.size);
      b.offset = fb.size;
      fb.size += b.layout.total_size;
      bundles_.push_back(std::move(b));
    }
    fb.emit = [this, &fb](const codec::Sink& out) { emit(fb, out); };
    Report report = pe ? join_pe_image(in_, fb, file_, sink) : join_linked_elf(in_, fb, file_, sink);
    report.entries = std::move(entries);
    return report;
  }

 private:
  // The offset of an earlier bundle of the same IDs and code objects, byte for byte.
  std::optional<std::uint64_t> same_as_before(const Bundle& b) {
    for (const Bundle& e : bundles_) {
      if (e.ids != b.ids || e.sizes != b.sizes) continue;
      bool same = true;
      for (std::size_t k = 0; same && k < b.objects.size(); ++k) same = same_bytes(*e.objects[k], *b.objects[k]);
      if (same) return e.offset;
    }
    return std::nullopt;
  }
  // Whether two code objects are the same bytes: their stored bytes compared
  // a chunk at a time (zstd frames: the frames, which the same bytes make
  // alike when one writer wrote them; else they count as different).
  bool same_bytes(const Found& x, const Found& y) {
    if (x.zstd != y.zstd || x.kernel.stored_size != y.kernel.stored_size) return false;
    const std::shared_ptr<InputFile>& a = archive(x.archive);
    const std::shared_ptr<InputFile>& c = archive(y.archive);
    std::vector<std::byte> p(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, x.kernel.stored_size))), q(p.size());
    for (std::uint64_t done = 0; done < x.kernel.stored_size;) {
      const std::uint64_t n = std::min<std::uint64_t>(p.size(), x.kernel.stored_size - done);
      a->read_at(x.kernel.offset + done, p.data(), n);
      c->read_at(y.kernel.offset + done, q.data(), n);
      if (std::memcmp(p.data(), q.data(), n) != 0) return false;
      done += n;
    }
    return true;
  }
  const std::shared_ptr<InputFile>& archive(const std::string& path) {
    std::shared_ptr<InputFile>& a = archives_[path];
    if (!a) a = InputFile::open(path);
    return a;
  }

  void emit(const JoinedFatbin&, const codec::Sink& out) {
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < bundles_.size(); ++i) {
      const Bundle& b = bundles_[i];
      emit_zeros(b.offset - at, out);
      at = b.offset;
      out(Bytes(b.layout.header));
      std::uint64_t in_bundle = b.layout.header.size();
      for (std::size_t k = 0; k < b.objects.size(); ++k) {
        const std::uint64_t off = b.layout.offsets[k + 1];
        emit_zeros(off - in_bundle, out);
        code_object(*b.objects[k], out);
        in_bundle = off + b.sizes[k + 1];
      }
      at += in_bundle;
    }
  }

  // The code object's bytes, read from its archive a chunk at a time (or its
  // frame, decoded in pieces): the archive's pages are not kept mapped in.
  void code_object(const Found& f, const codec::Sink& out) {
    const std::shared_ptr<InputFile>& a = archive(f.archive);
    const formats::KpackKernel& k = f.kernel;
    if (k.offset > a->size() || k.stored_size > a->size() - k.offset)
      fail_at({f.archive, k.offset}, "the code object of '{}' for {} lies past the end of the archive", k.binary, k.arch);
    if (!f.zstd) {
      buf_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, k.stored_size)));
      for (std::uint64_t done = 0; done < k.stored_size;) {
        const std::uint64_t n = std::min<std::uint64_t>(buf_.size(), k.stored_size - done);
        a->read_at(k.offset + done, buf_.data(), n);
        out(Bytes(buf_.data(), n));
        done += n;
      }
      return;
    }
    std::vector<std::byte> frame(k.stored_size);
    a->read_at(k.offset, frame.data(), frame.size());
    try {
      codec::decompress_stream(codec::Method::Zstd, Bytes(frame), k.original_size, out);
    } catch (const Error& e) {
      if (!e.file().empty()) throw;
      fail_at({f.archive, k.offset}, "the zstd frame of '{}' for {}: {}", k.binary, k.arch, e.message());
    }
  }

  const InputFile& in_;
  const Selection* keep_;
  target::LlvmRelease release_;
  const std::string& file_;
  Finder finder_;
  std::vector<Bundle> bundles_;
  std::map<std::string, std::shared_ptr<InputFile>> archives_;
  std::vector<std::byte> buf_;
};

}  // namespace

Report join_file(const InputFile& in, const Selection* keep, target::LlvmRelease release, const std::string& file,
                 const codec::Sink& sink) {
  return Joiner(in, keep, release, file).run(sink);
}

FileOutcome join_tree_file(const InputFile& in, const Selection* keep, target::LlvmRelease release,
                           const std::string& file, const codec::Sink& sink) {
  std::array<std::byte, 64> head{};
  const Bytes prefix = in.head(head);
  if (formats::has_kpack_magic(prefix)) {
    FileOutcome o;
    o.action = FileAction::Remove;
    o.report.container = "kpack archive";
    o.report.size_before = in.size();
    return o;
  }
  const Bytes data = in.bytes();
  if (object::is_pe_image(data)) {
    if (!object::find_kpack_records(object::PeImage::parse(data, file), file)) return {};
  } else {
    if (object::identify_object(data) != object::ObjectKind::Elf) return {};
    if (!object::find_kpack_records(data, object::read_sections(data, file), file)) return {};
  }
  FileOutcome o;
  o.action = FileAction::Write;
  o.report = join_file(in, keep, release, file, sink);
  return o;
}

TreeReport join_tree(const std::string& root, const Selection* keep, target::LlvmRelease release,
                     const std::string& out_dir) {
  auto joined = std::make_shared<bool>(false);
  auto emptied = std::make_shared<std::set<std::string>>();  // folders of archives left out, relative
  TreeRewrite rw;
  rw.file = [=](const InputFile& in, const std::string& file, std::string_view relative, const codec::Sink& sink) {
    FileOutcome o = join_tree_file(in, keep, release, file, sink);
    *joined = *joined || o.action == FileAction::Write;
    if (o.action == FileAction::Remove)
      for (auto p = std::filesystem::path(relative).parent_path(); !p.empty(); p = p.parent_path())
        emptied->insert(p.string());
    return o;
  };
  rw.finish = [=, &root](const std::string& staging) {
    if (!*joined) fail(root, "no kpack'd binary found (HIPK records in .hipFatBinSegment): nothing to join");
    // The folders only archives were in (.kpack/): gone with them, deepest first.
    for (auto it = emptied->rbegin(); it != emptied->rend(); ++it) {
      const std::filesystem::path p = std::filesystem::path(staging) / *it;
      std::error_code ec;
      if (std::filesystem::is_empty(p, ec) && !ec) std::filesystem::remove(p, ec);
    }
  };
  return rewrite_tree(root, rw, out_dir);
}

}  // namespace ot::prune
