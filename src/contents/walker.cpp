#include "contents/walker.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <tuple>

#include "archive/ar_reader.h"
#include "archive/stream_reader.h"
#include "codec/codec.h"
#include "compat/code_object.h"
#include "compat/target_spec.h"
#include "compress/ccob.h"
#include "contents/kpack_search.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_sequence.h"
#include "formats/bundle_text.h"
#include "formats/compressed_bundle.h"
#include "formats/kpack.h"
#include "formats/nv_fatbin.h"
#include "formats/offload_binary.h"
#include "object/kpack_records.h"
#include "object/object_file.h"
#include "object/pe_image.h"
#include "support/mapped_file.h"
#include "support/output_file.h"

namespace ot::contents {
namespace {

constexpr std::string_view kSectionPrefix = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view kDup = "duplicate bundle entry id '";  // formats/bundle_binary.cpp's message
constexpr std::string_view kTextStart = "__CLANG_OFFLOAD_BUNDLE____START__";

// Enough of a member to see every magic below (tar's "ustar" is at 257) and
// a bare PTX file's directives (compat::bare_code).
constexpr std::size_t kSniffSize = compat::kBareCodeSniff;
// What emit reads of a code object: its ELF header (64 bytes in ELF64).
constexpr std::size_t kCodeObjectHeader = 64;
// How far into a compressed bundle the headers a visitor reads may lie for
// it to be decoded only that far (Visitor::wants_payloads); past that (a
// bundle of many GPUs, each code object's header behind the one before) it
// is decoded whole, to a scratch file where it is large.
constexpr std::uint64_t kMaxHeadersPrefix = 16u << 20;
// How much of a streamed archive's input is read before its pages are released.
constexpr std::uint64_t kReleaseStep = 8 << 20;

bool duplicate_id(const Error& e) { return e.message().starts_with(kDup); }

// What an entry's bundle ID says, once parsed: its canonical target (nullopt
// when it does not parse: the entry's target is then its ID as stored) and
// its triple, without the empty fields LLVM's 4-field form ends in
// ("amdgcn-amd-amdhsa" of "hipv4-amdgcn-amd-amdhsa--gfx906"; "" when it does
// not parse).
struct Parsed {
  std::optional<std::string> target;
  std::string triple;
};

Parsed parse_bundle_id(const std::string& bundle_id) {
  try {
    const compat::TargetSpec s = compat::parse_spec(bundle_id);
    std::string triple = s.triple;
    while (triple.ends_with('-')) triple.pop_back();
    return {s.canonical(), std::move(triple)};
  } catch (const Error&) {
    return {};
  }
}

constexpr std::string_view kAmdgpuTriple = "amdgcn-amd-amdhsa";
constexpr std::string_view kNvptxTriple = "nvptx64-nvidia-cuda";

}  // namespace

const char* const kNoDeviceCode =
    "no device code found (no offload bundle, compressed bundle, offload binary, NVIDIA fatbin or bundle section, in "
    "any archive member)";

void fail_no_device_code(const std::string& file) { fail(file, "{}", kNoDeviceCode); }

bool may_hold_device_code(Bytes p) {
  auto starts = [&](std::string_view m) { return p.size() >= m.size() && as_chars(p.first(m.size())) == m; };
  // "MZ": a PE image (a DLL or EXE: .hip_fat, .nv_fatb; object::is_pe_image
  // decides on the whole file).
  if (starts("\x7f" "ELF") || starts("MZ") || starts("!<arch>\n") || starts(formats::kBundleMagic) ||
      formats::has_ccob_magic(p) || formats::has_offload_binary_magic(p) || formats::has_fatbin_magic(p) ||
      formats::has_kpack_magic(p) || archive::has_stream_archive_magic(p))
    return true;
  if (p.size() >= 4) {  // COFF objects: a machine number, or bigobj's 0000 ffff
    std::uint16_t m = load_le<std::uint16_t>(p.data()), m2 = load_le<std::uint16_t>(p.data() + 2);
    if (m == 0x8664 || m == 0xaa64 || m == 0x14c || m == 0x1c4 || m == 0xa641 || (m == 0 && m2 == 0xffff)) return true;
  }
  return as_chars(p).find(kTextStart) != std::string_view::npos || compat::bare_code(p).has_value();
}

std::string container_kind(Bytes p) {
  if (formats::has_ccob_magic(p)) return "compressed bundle";
  if (formats::has_fatbin_magic(p)) return "NVIDIA fatbins";
  if (formats::has_offload_binary_magic(p)) return "offload binaries";
  if (formats::has_binary_bundle_magic(p)) return "binary bundle";
  if (formats::has_kpack_magic(p)) return "kpack archive";
  if (formats::find_text_comment(p)) return "text bundle";
  return "";
}

namespace {

// The CCOB an entry is inside: its bytes in the file (header included).
struct Ccob {
  std::uint64_t size = 0;
};

// The file some bytes lie in (the named file, a spooled member): headers are
// read from it with pread, so that listing maps none of its pages in (one
// fault maps 64 KiB around it, or a whole large folio, all of it resident).
// Or the decoder of a compressed bundle read only as far as its headers: the
// bytes are in no memory, and headers are decoded as they are read.
struct Backing {
  const InputFile* file = nullptr;  // none: the bytes are only in memory
  std::uint64_t at = 0;             // where the bytes' [0] lies in it
  compress::CcobPrefix* decoded = nullptr;  // instead of a file

  Backing shifted(std::uint64_t off) const { return {file, at + off, decoded}; }
  bool pread() const { return file && file->fd() >= 0; }
  // `data`, which lies at `at`, as a source reading its headers with pread.
  ByteSource source(Bytes data) const {
    if (decoded) return decoded->source().tail(at);
    if (!pread()) return ByteSource(data);
    return ByteSource(data, [f = file, at = at](std::uint64_t off, std::byte* to, std::uint64_t len) {
      f->read_at(at + off, to, len);
    });
  }
  // The first `n` bytes of `data`, which lies at `local` here, into `to`.
  void copy(Bytes data, std::uint64_t local, std::byte* to, std::size_t n) const {
    if (decoded)
      std::memcpy(to, decoded->head(at + local + n).data() + at + local, n);
    else if (pread())
      file->read_at(at + local, to, n);
    else
      std::memcpy(to, data.data(), n);
  }
};

// Bytes being looked at: a file, a member, a decompressed bundle.
struct Source {
  Bytes data;
  std::string errname;                 // the name errors give: "pkg.deb(data.tar.xz)(./lib.so)"
  std::vector<Link> chain;             // the links down to these bytes
  std::optional<std::uint64_t> base;   // where data[0] lies in the named file, if it does
  unsigned depth = 0;
  Backing backing;                     // where data[0] lies in a file to pread from

  Source inner(Bytes d, std::string err, Link link, std::optional<std::uint64_t> b, Backing k) const {
    Source s{d, std::move(err), chain, b, depth + 1, k};
    s.chain.push_back(std::move(link));
    return s;
  }
};

class Walker {
 public:
  Walker(std::string file, Visitor& v, const Limits& limits)
      : file_(std::move(file)), v_(v), headers_(v.wants_code_object_headers()), limits_(limits) {}

  void node(const Source& s) {
    if (s.depth > limits_.max_depth)
      fail_at({s.errname, 0}, "containers nested more than {} deep", limits_.max_depth);
    Bytes data = s.data;
    if (archive::is_archive(data) || archive::is_thin_archive(data)) {
      ar(s);
      return;
    }
    if (formats::has_kpack_magic(data)) {
      if (limits_.kpack) kpack_archive(s);
      return;
    }
    // A bare code object or cubin is an ELF file too: its processor, not its
    // sections, is what it holds.
    const Bytes prefix = sniff(s, head_);
    if (prefix.size() >= 4 && as_chars(prefix.first(4)) == "\x7f" "ELF") {
      if (auto b = compat::bare_code(prefix)) {
        bare(s, *b);
        return;
      }
    }
    if (object::is_pe_image(data)) {
      pe_image(s);
      return;
    }
    object::ObjectKind kind = object::identify_object(data);
    if (kind == object::ObjectKind::Elf || kind == object::ObjectKind::Coff) {
      const std::vector<object::SectionInfo> sections = object::read_sections(s.data, s.errname);
      object_sections(s, sections);
      kpacked(s, object::find_kpack_records(s.data, sections, s.errname));
      return;
    }
    if (formats::has_offload_binary_magic(data)) {
      offload_binaries(s, data, 0, s.chain);
      return;
    }
    if (formats::has_fatbin_magic(data)) {
      fatbins(data, 0, s.errname, s.chain, s.base, s.backing, false);
      return;
    }
    if (blob(s, data, 0, s.chain)) return;
    if (archive::has_stream_archive_magic(data)) {
      if (!archive::is_compressed_file_only(data)) stream_archive(s);
      return;
    }
    if (auto b = compat::bare_code(prefix); b && b->kind == compat::BareCode::Kind::Ptx) {
      bare(s, *b);
      return;
    }
    text(s, data, s.errname, s.chain, false, s.base);
  }

 private:
  // The first bytes of `s` (up to kSniffSize), copied with pread where they lie
  // in a file: touching the mapping would map in 64 KiB around them.
  static Bytes sniff(const Source& s, std::array<std::byte, kSniffSize>& buf) {
    const std::size_t n = std::min<std::size_t>(s.data.size(), buf.size());
    if (s.backing.file && s.backing.file->fd() >= 0)
      s.backing.file->read_at(s.backing.at, buf.data(), n);
    else
      std::memcpy(buf.data(), s.data.data(), n);
    return Bytes(buf.data(), n);
  }

  // A file (or member) that is one piece of device code: one container holding one entry, the whole file.
  void bare(const Source& s, const compat::BareCode& b) {
    Container c{file_, with(s.chain, std::string(b.description())), {}, {}, true};
    v_.container(c);
    Entry& e = entry_;
    e.index = 0;
    e.offload_binary = false;
    e.id = b.id;
    e.bundle_id = b.id;
    e.target.assign(b.known ? canonical(e.bundle_id, e.id) : std::string_view(e.id));
    e.triple = b.kind == compat::BareCode::Kind::AmdgpuCodeObject ? kAmdgpuTriple : kNvptxTriple;
    e.kind = b.kind == compat::BareCode::Kind::Cubin ? "cubin" : b.kind == compat::BareCode::Kind::Ptx ? "ptx" : "";
    e.processor.reset();
    e.code_object.clear();
    if (b.kind == compat::BareCode::Kind::AmdgpuCodeObject)
      e.code_object = b.known ? b.id : fmt::format("unknown processor ({})", b.id);
    if (b.known) e.processor = b.id;
    e.size = s.data.size();
    e.uncompressed_size = e.size;
    e.compressed = false;
    e.local_offset = 0;
    e.offset = s.base;
    e.ccob_size = 0;
    e.bytes = s.data;
    e.fatbin = nullptr;
    e.kpack_archive.clear();
    e.kpack_binary.clear();
    e.kpack = nullptr;
    v_.entry(c, e);
  }

  void charge(std::uint64_t n, const std::string& where, std::uint64_t at) {
    if (n > limits_.max_expanded_bytes - expanded_)
      fail_at({where, at}, "more than 0x{:x} bytes decompressed or spooled (the limit): a decompression bomb?",
              limits_.max_expanded_bytes);
    expanded_ += n;
  }

  void count_member(std::uint64_t& n, const Source& s) {
    if (++n > limits_.max_members) fail(s.errname, "more than {} archive members (the limit)", limits_.max_members);
  }

  void ar(const Source& s) {
    archive::MemberReader r(s.data, s.errname);
    std::uint64_t n = 0;
    while (auto m = r.next()) {
      count_member(n, s);
      auto base = s.base ? std::optional(*s.base + m->offset) : std::nullopt;
      node(s.inner(m->data, fmt::format("{}({})", s.errname, m->name), {m->name, true}, base,
                   s.backing.shifted(m->offset)));
      release(s.backing.shifted(m->offset), m->data.size());
    }
  }

  // Done with the first `len` bytes at `b` (the named file, a spooled
  // member): their pages may leave memory (read back from the file if touched
  // again), so that a walk through a large archive keeps its resident set flat.
  // In the named file, that is also how far the walk has come.
  void release(Backing b, std::uint64_t len) {
    if (!b.file) return;
    b.file->release(b.at, len);
    if (b.file == top_ && limits_.progress) limits_.progress(b.at + len, top_->size());
  }

 public:
  const InputFile* top_ = nullptr;  // the named file, when it is one (walk_input)

 private:

  // tar, zip, cpio, rpm: one pass; members worth reading are spooled to an
  // unlinked scratch file and mapped, the others read through and dropped.
  void stream_archive(const Source& s) {
    archive::StreamReader r(s.data, s.errname, limits_.threads);
    std::uint64_t n = 0;
    std::vector<std::byte> buf(256 << 10);
    // The compressed bytes read so far leave memory every few MiB, not only
    // after each member: one member can take most of the archive (a .deb's
    // 1.3 GB library: 94 MB of xz input otherwise resident by the end).
    std::uint64_t released = 0;
    auto release_read = [&](std::uint64_t step) {
      if (r.consumed() - released < step) return;
      released = r.consumed();
      release(s.backing, released);
    };
    while (auto h = r.next()) {
      count_member(n, s);
      if (!h->regular) continue;
      std::string errname = fmt::format("{}({})", s.errname, h->name);
      std::size_t got = 0;
      while (got < kSniffSize) {
        std::size_t k = r.read(std::span(buf).subspan(got, kSniffSize - got));
        if (k == 0) break;
        got += k;
      }
      charge(got, errname, 0);
      Bytes prefix(buf.data(), got);
      if (!may_hold_device_code(prefix)) {
        std::uint64_t total = got;
        while (std::size_t k = r.read(buf)) {
          charge(k, errname, total);
          total += k;
          release_read(kReleaseStep);
        }
        release_read(0);
        continue;
      }
      // A declared size past the budget fails before anything is written.
      if (h->size && *h->size > got && *h->size - got > limits_.max_expanded_bytes - expanded_) charge(*h->size - got, errname, got);
      OutputFile spool = OutputFile::scratch("");
      spool.write(prefix);
      std::uint64_t total = got;
      while (std::size_t k = r.read(buf)) {
        charge(k, errname, total);
        spool.write(Bytes(buf.data(), k));
        total += k;
        release_read(kReleaseStep);
      }
      release_read(0);
      std::shared_ptr<InputFile> mapped = spool.map(errname);
      node(s.inner(mapped->bytes(), errname, {h->name, true}, std::nullopt, {mapped.get(), 0}));
      release_read(0);
    }
  }

  // Consecutive bundles and CCOBs at `at` in the source; false when `data` does not start with one.
  bool blob(const Source& s, Bytes data, std::uint64_t at, const std::vector<Link>& chain) {
    std::vector<formats::BundleSpan> spans;
    try {
      spans = rebase_errors(at, [&] { return formats::split_bundles(s.backing.shifted(at).source(data), s.errname); });
    } catch (const Error& e) {
      // The splitter reads every header, and the binary bundle reader refuses
      // one that stores an ID twice. When that is the first bundle, report it
      // (binary() records the duplicate) and nothing after it.
      if (!duplicate_id(e) || !formats::has_binary_bundle_magic(data)) throw;
      if (binary(data, at, s.errname, with(chain, fmt::format("bundle at 0x{:x}", at)), false, s.base, s.backing, {}))
        throw;  // the duplicate is in a later bundle
      return true;
    }
    for (std::size_t i = 0; i < spans.size(); ++i) {
      formats::BundleSpan& sp = spans[i];
      Bytes bytes = data.subspan(sp.offset, sp.size);
      std::uint64_t pos = at + sp.offset;
      std::string text = spans.size() == 1
                             ? fmt::format("{}bundle at 0x{:x}", sp.compressed ? "compressed " : "", pos)
                             : fmt::format("{}bundle {} at 0x{:x}", sp.compressed ? "compressed " : "", i, pos);
      v_.bundle({Container{file_, with(chain, text), {}, {}}, s.errname, bytes, sp.compressed, pos,
                 s.base ? std::optional(*s.base + pos) : std::nullopt});
      if (sp.compressed)
        ccob(s, bytes, pos, with(chain, text));
      else
        binary(bytes, pos, s.errname, with(chain, text), false, s.base, s.backing, {}, &sp.entries);
      // Done with this bundle's pages (a CCOB's compressed bytes are all read
      // to decode it): without this, a library's resident set grew by every
      // bundle it holds (188 MB for rocBLAS's 66 CCOBs).
      release(s.backing.shifted(pos), sp.size);
    }
    return !spans.empty();
  }

  static std::vector<Link> with(std::vector<Link> chain, std::string text) {
    chain.push_back({std::move(text), false});
    return chain;
  }

  // A binary bundle at `at` in bytes whose data[0] lies at `base` in the named
  // file (if it does) and at `backing` in a file to pread headers from (if it
  // does). False when the bundle stores an ID twice: recorded.
  // `read`: its entries, when the caller has read its header already.
  bool binary(Bytes data, std::uint64_t at, const std::string& errname, std::vector<Link> chain, bool compressed,
              std::optional<std::uint64_t> base, Backing backing, Ccob cc,
              std::vector<formats::BundleEntry>* read = nullptr) {
    Container c{file_, std::move(chain), {}, {}};
    std::vector<formats::BundleEntry> entries;
    try {
      if (read)
        entries = std::move(*read);
      else
        entries = rebase_errors(at, [&] { return formats::read_binary_bundle(backing.shifted(at).source(data), errname); });
    } catch (const Error& e) {
      // The reader refuses a bundle storing one ID twice; that is a composition
      // fault `verify` reports, not a reason to stop reading the file.
      if (!duplicate_id(e)) throw;
      std::string id = e.message().substr(kDup.size());
      if (!id.empty()) id.pop_back();
      c.refused_duplicates.push_back(id);
      v_.container(c);
      return false;
    }
    check_no_overlap(entries, at, errname);
    v_.container(c);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::uint64_t local = at + entries[i].offset, size = entries[i].size;
      // Decoded only as far as its headers: no payload in memory, and the
      // caller has looked for fatbins (ccob_headers).
      const Bytes payload = backing.decoded ? Bytes() : data.subspan(entries[i].offset, size);
      if (!backing.decoded && holds_fatbin(size, payload, local, backing)) {
        fatbins(payload, local, errname, with(c.chain, fmt::format("entry {} ({})", i, entries[i].id)), base, backing,
                compressed);
        continue;
      }
      emit(c, i, entries[i].id, payload, size, local, compressed, base, backing, cc);
    }
    return true;
  }

  // The bundle reader bounds each payload by the bundle; payloads sharing
  // bytes (which no writer produces) are hostile input here: one code object
  // would be counted, extracted or pruned twice.
  static void check_no_overlap(const std::vector<formats::BundleEntry>& entries, std::uint64_t at,
                               const std::string& errname) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (entries[i].size) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(entries[a].offset, a) < std::tie(entries[b].offset, b);
    });
    for (std::size_t k = 1; k < order.size(); ++k) {
      const formats::BundleEntry& p = entries[order[k - 1]];
      const formats::BundleEntry& e = entries[order[k]];
      if (e.offset < p.offset + p.size)
        fail_at({errname, at + e.offset}, "bundle entries {} ('{}') and {} ('{}') overlap: payloads at 0x{:x} of 0x{:x} "
                "bytes and at 0x{:x}", order[k - 1], p.id, order[k], e.id, p.offset, p.size, e.offset);
    }
  }

  // parse_bundle_id, once per ID a walk meets: a ROCm library repeats its
  // few IDs in every bundle.
  const Parsed& parsed(const std::string& bundle_id) {
    auto it = parsed_.find(std::string_view(bundle_id));  // no copy of the key to look it up
    if (it == parsed_.end()) it = parsed_.emplace(bundle_id, parse_bundle_id(bundle_id)).first;
    return it->second;
  }
  std::string_view canonical(const std::string& bundle_id, std::string_view id) {
    const Parsed& p = parsed(bundle_id);
    return p.target ? std::string_view(*p.target) : id;
  }

  // `size` bytes at `local`: `payload`, empty where they are in no memory
  // (Backing::decoded). `ob`: the OffloadBinary entry it is, if it is one.
  void emit(const Container& c, std::uint64_t index, std::string_view id, Bytes payload, std::uint64_t size,
            std::uint64_t local, bool compressed, std::optional<std::uint64_t> base, Backing backing, Ccob cc,
            const formats::OffloadEntry* ob = nullptr) {
    // One Entry for the whole walk, every field set again: its strings keep
    // their capacity from one entry to the next (a new Entry per entry was
    // four allocations, a ROCm library's IDs being too long to be stored inline).
    Entry& e = entry_;
    e.index = index;
    e.offload_binary = ob != nullptr;
    if (ob)
      e.bundle_id = compat::offload_bundle_id(*ob);
    else
      e.bundle_id.assign(id);
    e.target.assign(canonical(e.bundle_id, id));
    e.triple.assign(parsed(e.bundle_id).triple);
    e.id.assign(id);
    // The code object's ELF header, copied with pread where the payload lies
    // in a file: touching the mapping instead maps in fault-around's 64 KiB
    // at each header (a ROCm library's 888 entries: 55 MB resident, and most
    // of the time `list` took).
    std::array<std::byte, kCodeObjectHeader> head{};
    const std::size_t n = headers_ ? static_cast<std::size_t>(std::min<std::uint64_t>(size, head.size())) : 0;
    if (n) backing.copy(payload, local, head.data(), n);
    set_processor(e, Bytes(head.data(), n));
    e.size = size;
    e.uncompressed_size = e.size;
    e.kind.clear();
    e.fatbin = nullptr;
    e.compressed = compressed;
    e.local_offset = local;
    e.offset = base && !compressed ? std::optional(*base + local) : std::nullopt;
    e.ccob_size = cc.size;
    e.bytes = payload;
    e.kpack_archive.clear();
    e.kpack_binary.clear();
    e.kpack = nullptr;
    v_.entry(c, e);
  }

  // What the code object's ELF header (its first bytes) names.
  static void set_processor(Entry& e, Bytes header) {
    e.processor.reset();
    e.code_object.clear();
    if (auto t = compat::amdgpu_code_object(header)) {
      if (t->target_id.empty()) {
        e.code_object = fmt::format("unknown processor (EF_AMDGPU_MACH 0x{:x})", t->mach);
      } else {
        e.code_object = t->target_id;
        e.processor = t->target_id;
      }
    } else {
      e.processor = compat::cuda_processor(header);
    }
  }

  // An AMD kpack archive: one container, its code objects the entries.
  void kpack_archive(const Source& s) {
    const formats::KpackArchive a = formats::read_kpack(s.data, s.errname);
    Container c{file_, with(s.chain, fmt::format("kpack archive ({})", formats::kpack_scheme_name(a.scheme))), {}, {}};
    v_.container(c);
    kpack_entries(c, a, s.data, s.errname, s.errname, s.base, s.backing, {});
  }

  // The entries of `a` (whose bytes are `data`, named `errname`; at `base` in
  // the named file if they lie there) for `key`, or all where it is empty.
  void kpack_entries(const Container& c, const formats::KpackArchive& a, Bytes data, const std::string& errname,
                     const std::string& archive, std::optional<std::uint64_t> base, Backing backing,
                     std::string_view key) {
    const bool zstd = a.scheme == formats::KpackScheme::ZstdPerKernel;
    for (std::size_t i = 0; i < a.kernels.size(); ++i) {
      const formats::KpackKernel& k = a.kernels[i];
      if (!key.empty() && k.binary != key) continue;
      Entry& e = entry_;
      e.index = i;
      e.offload_binary = false;
      e.id = k.arch;
      // The bundle entry ID the splitter took it from (it records it as metadata "target").
      e.bundle_id = fmt::format("hipv4-{}--{}", kAmdgpuTriple, k.arch);
      e.target.assign(canonical(e.bundle_id, e.id));
      e.triple.assign(kAmdgpuTriple);
      e.kind.clear();
      const Bytes stored = data.subspan(k.offset, k.stored_size);  // read_kpack checked the range
      std::array<std::byte, kCodeObjectHeader> head{};
      std::size_t n = 0;
      if (headers_ && !zstd) {
        n = static_cast<std::size_t>(std::min<std::uint64_t>(k.stored_size, head.size()));
        backing.copy(stored, k.offset, head.data(), n);
      } else if (headers_) {
        std::vector<std::byte> h;
        try {
          h = codec::decompress_head(codec::Method::Zstd, stored, k.original_size, head.size());
        } catch (const Error& err) {
          fail_at({errname, k.offset}, "the zstd frame of '{}' for {} is damaged: {}", k.binary, k.arch, err.message());
        }
        n = h.size();
        std::memcpy(head.data(), h.data(), n);
      }
      set_processor(e, Bytes(head.data(), n));
      e.size = k.stored_size;
      e.uncompressed_size = k.original_size;
      e.compressed = zstd;
      e.local_offset = k.offset;
      e.offset = base ? std::optional(*base + k.offset) : std::nullopt;
      e.ccob_size = 0;
      e.bytes = stored;
      e.fatbin = nullptr;
      e.kpack_archive = archive;
      e.kpack_binary = k.binary;
      e.kpack = &k;
      v_.entry(c, e);
      e.kpack = nullptr;
    }
  }

  // A kpack'd host binary: its archives looked up as AMD's loader looks them
  // up (contents/kpack_search), where the binary is the named file on disk.
  void kpacked(const Source& s, const std::optional<object::KpackedBinary>& kb) {
    if (!kb || !limits_.kpack || !limits_.kpack_records) return;
    const formats::KpackRef ref = formats::read_kpack_ref(kb->marker, s.errname, kb->marker_offset);
    std::vector<std::string> candidates;
    std::string why_not;
    if (s.chain.size() != 1 || !top_ || top_->path() == "-") {
      why_not = "archives not looked up: the binary lies inside another file";
    } else {
      const KpackEnv env = KpackEnv::from_environment();
      std::error_code ec;
      const std::filesystem::path real = std::filesystem::weakly_canonical(top_->path(), ec);
      if (env.disabled)
        why_not = "archives not looked up: ROCM_KPACK_DISABLE is set";
      else
        candidates = kpack_candidates(ref, (ec ? std::filesystem::path(top_->path()) : real).parent_path().string(), env);
    }
    struct Opened {
      std::string path;
      std::string glob_arch;
      std::shared_ptr<InputFile> file;
      formats::KpackArchive archive;
    };
    std::vector<Opened> archives;
    std::vector<std::string> missing;
    if (!why_not.empty()) missing.push_back(why_not);
    for (const std::string& cand : candidates) {
      const std::vector<KpackFound> found = kpack_glob(cand);
      if (found.empty()) missing.push_back(cand);
      for (const KpackFound& f : found) {
        if (std::any_of(archives.begin(), archives.end(), [&](const Opened& o) { return o.path == f.path; })) continue;
        if (archives.size() >= limits_.max_members) fail(s.errname, "more than {} kpack archives (the limit)", limits_.max_members);
        std::shared_ptr<InputFile> in = InputFile::open(f.path);
        formats::KpackArchive a = formats::read_kpack(in->bytes(), f.path);
        archives.push_back({f.path, f.arch, std::move(in), std::move(a)});
      }
    }
    const std::string marker_link = fmt::format("section {} (kpack marker, '{}')", kb->marker_section, ref.kernel_name);
    if (!missing.empty() || archives.empty()) {
      Container c{file_, with(s.chain, marker_link), {}, {}};
      c.kpack_key = ref.kernel_name;
      c.kpack_missing = missing;
      v_.container(c);
    }
    for (const object::KpackRecord& r : kb->records) {
      const std::string key = fmt::format("{}#{}", ref.kernel_name, r.index);
      const std::vector<Link> rec = with(s.chain, fmt::format("section {}, record {} (HIPK, '{}')", kb->records_section,
                                                              r.position, key));
      for (const Opened& o : archives) {
        Container c{file_, with(rec, "kpack archive " + o.path), {}, {}};
        c.kpack_key = key;
        c.kpack_arches = o.archive.gfx_arches;
        c.kpack_glob_arch = o.glob_arch;
        v_.container(c);
        kpack_entries(c, o.archive, o.file->bytes(), o.path, o.path, std::nullopt, Backing{o.file.get(), 0}, key);
      }
    }
  }

  void ccob(const Source& s, Bytes data, std::uint64_t at, std::vector<Link> chain) {
    formats::CcobHeader h = rebase_errors(at, [&] { return formats::read_ccob_header(data, s.errname); });
    Bytes payload = rebase_errors(at, [&] { return formats::ccob_payload(data, h); });
    if (s.depth + 1 > limits_.max_depth)
      fail_at({s.errname, at}, "containers nested more than {} deep", limits_.max_depth);
    std::string inner = fmt::format("{} (decompressed)", s.errname);
    if (!v_.wants_payloads() && ccob_headers(s, h, payload, at, chain, inner, Ccob{data.size()})) return;
    charge(h.uncompressed_size, s.errname, at);
    // The first bytes say whether a bundle is there at all: a CCOB of anything
    // else is refused before a declared size of many GiB is written out (the
    // per-walk limit stays the backstop). A text bundle's first start marker
    // must lie within them (the bundler writes it first).
    bool may_be_bundle = true;
    try {
      may_be_bundle = compress::may_hold_bundle(h, payload);
    } catch (const Error& e) {
      fail_at({s.errname, at}, "cannot decompress the compressed bundle: {}", e.message());
    }
    if (!may_be_bundle) fail_at({s.errname, at}, "the compressed bundle holds neither a binary nor a text bundle");
    // A large bundle goes to a scratch file (memory stays flat): reading its
    // table and the code object headers touches a few of its pages. For a
    // visitor that reads no payloads (list: headers past kMaxHeadersPrefix)
    // any bundle larger than that prefix does: in memory, each took its whole
    // size (64 MiB at most, 87 MB resident for rocBLAS's CCOBs).
    const std::uint64_t in_memory_limit = v_.wants_payloads() ? codec::kInMemoryLimit : kMaxHeadersPrefix;
    std::vector<std::byte> in_memory;
    std::shared_ptr<InputFile> spilled;
    try {
      if (h.uncompressed_size <= in_memory_limit)
        in_memory = codec::decompress(h.method, payload, h.uncompressed_size);
      else
        // The compressed bytes read leave memory as the decoder goes (18 MB
        // for rocBLAS's largest CCOB).
        spilled = codec::decompress_to_file(h.method, payload, h.uncompressed_size, "", inner, {},
                                            [&, from = s.backing.shifted(at + (payload.data() - data.data()))](
                                                std::uint64_t n) { release(from, n); });
    } catch (const Error& e) {
      fail_at({s.errname, at}, "cannot decompress the compressed bundle: {}", e.message());
    }
    Bytes plain = spilled ? spilled->bytes() : Bytes(in_memory);
    Ccob cc{data.size()};
    if (formats::has_binary_bundle_magic(plain)) {
      binary(plain, 0, inner, std::move(chain), true, std::nullopt, spilled ? Backing{spilled.get(), 0} : Backing{}, cc);
      return;
    }
    Source d{plain, inner, chain, std::nullopt, s.depth + 1, {}};
    if (!text(d, plain, inner, d.chain, true, std::nullopt, cc))
      fail_at({s.errname, at}, "the compressed bundle holds neither a binary nor a text bundle");
  }

  // A CCOB holding a binary bundle, for a visitor that reads no payloads:
  // decoded as far as its table and the first bytes of its entries (their ELF
  // headers where the visitor reads them), no further. False, with nothing
  // visited, where it must be decoded whole: it holds no binary bundle (a text
  // bundle, say), an entry holds an NVIDIA fatbin (whose table can run through
  // the entry), or the headers lie past kMaxHeadersPrefix.
  bool ccob_headers(const Source& s, const formats::CcobHeader& h, Bytes payload, std::uint64_t at,
                    std::vector<Link>& chain, const std::string& inner, Ccob cc) {
    compress::CcobPrefix prefix(h, payload, true, s.errname, at);
    if (!formats::has_binary_bundle_magic(prefix.head(formats::kBundleMagic.size()))) return false;
    const Backing decoded{nullptr, 0, &prefix};
    std::vector<formats::BundleEntry> entries;
    try {
      entries = formats::read_binary_bundle(decoded.source({}), inner);
    } catch (const Error& e) {
      if (!duplicate_id(e)) throw;
      return false;  // binary() reports it, from the whole bundle
    }
    // The first bytes of an entry say whether it holds a fatbin. Without code
    // object headers they are looked at only where the ID does not name an
    // AMDGPU target or the host: a fatbin is NVIDIA's container, and the other
    // entries' first bytes would take decoding the whole bundle.
    auto looked_at = [&](const formats::BundleEntry& e) {
      return e.size && (headers_ || (e.id.find("amdgcn") == std::string::npos && !e.id.starts_with("host-")));
    };
    std::uint64_t reach = 0;
    for (const formats::BundleEntry& e : entries)
      if (looked_at(e)) reach = std::max(reach, e.offset + std::min<std::uint64_t>(e.size, kCodeObjectHeader));
    if (reach > kMaxHeadersPrefix) return false;
    prefix.head(reach);  // at once: one decode, not one per entry
    for (const formats::BundleEntry& e : entries)
      if (looked_at(e) && holds_fatbin(e.size, {}, e.offset, decoded)) return false;
    charge(prefix.decoded(), s.errname, at);
    binary({}, 0, inner, std::move(chain), true, std::nullopt, decoded, cc, &entries);
    return true;
  }

  bool text(const Source&, Bytes data, const std::string& errname, const std::vector<Link>& chain, bool compressed,
            std::optional<std::uint64_t> base, Ccob cc = {}) {
    std::optional<std::string_view> comment = formats::find_text_comment(data);
    if (!comment) return false;
    auto entries = formats::read_text_bundle(data, *comment, errname);
    Container c{file_, with(chain, fmt::format("text bundle ('{}' comments)", *comment)), {}, {}};
    v_.container(c);
    for (std::size_t i = 0; i < entries.size(); ++i)
      emit(c, i, entries[i].id, data.subspan(entries[i].offset, entries[i].size), entries[i].size, entries[i].offset,
           compressed, base, {}, cc);
    return true;
  }

  // The device code sections of an object or image (below).
  static bool device_section(std::string_view name) {
    return name.starts_with(".hip_fat") || name == ".llvm.offloading" || formats::is_fatbin_section(name);
  }

  // A PE image (DLL, EXE): its sections by name (lld-link keeps 8 characters:
  // ".hip_fat", ".nv_fatb", "__nv_rel"), then the fat binaries its
  // registration records point at where they lie in no such section (one
  // renamed or merged into another by the linker).
  void pe_image(const Source& s) {
    const object::PeImage pe = object::PeImage::parse(s.data, s.errname);
    // A kpack'd image's .hip_fat keeps what AMD's splitter did not cut out of
    // its raw data (the tail of its last code object, no bundle): not read.
    const std::optional<object::KpackedBinary> kb = object::find_kpack_records(pe, s.errname);
    std::vector<object::SectionInfo> sections;
    for (std::size_t i = 0; i < pe.sections.size(); ++i) {
      std::string name = pe.names[i] == "__nv_rel" ? "__nv_relfatbin" : pe.names[i] == ".llvm.of" ? ".llvm.offloading" : pe.names[i];
      const bool cut = kb && name.starts_with(".hip_fat");
      sections.push_back({name, pe.sections[i].PointerToRawData, pe.content_size(i), pe.content_size(i) != 0 && !cut, 0});
    }
    object_sections(s, sections);
    kpacked(s, kb);
    for (const object::PeImage::Registration& r : pe.registrations()) {
      const std::string& n = pe.names[r.section];
      if (r.address < pe.image_base)
        fail_at({s.errname, r.slot}, "the registration record in {} points to 0x{:x}, below the image base 0x{:x}", n,
                r.address, pe.image_base);
      const std::uint64_t rva = r.address - pe.image_base;
      const std::optional<std::size_t> k = pe.section_at(rva);
      if (!k) fail_at({s.errname, r.slot}, "the registration record in {} points to RVA 0x{:x}, in no section", n, rva);
      if (device_section(sections[*k].name)) continue;  // walked above
      const std::uint64_t in_sec = rva - pe.sections[*k].VirtualAddress;
      if (in_sec >= pe.content_size(*k))
        fail_at({s.errname, r.slot}, "the registration record in {} points to RVA 0x{:x}, past the file data of {}", n,
                rva, pe.names[*k]);
      const std::uint64_t foff = pe.sections[*k].PointerToRawData + in_sec;
      registered(s, s.data.subspan(foff, pe.content_size(*k) - in_sec), foff,
                 with(s.chain, fmt::format("section {}, registered at RVA 0x{:x}", pe.names[*k], rva)));
    }
  }

  // One fat binary a registration record points at, in a section not named
  // for device code: it extends as far as its own header says.
  void registered(const Source& s, Bytes rest, std::uint64_t at, const std::vector<Link>& chain) {
    const ByteSource src = s.backing.shifted(at).source(rest);
    if (holds_fatbin(rest.size(), rest, at, s.backing)) {
      const formats::Fatbin f = formats::read_fatbin(src, 0, s.errname, at);
      fatbins(rest.first(f.size), at, s.errname, chain, s.base, s.backing, false);
      return;
    }
    std::uint64_t size = 0;
    if (formats::has_ccob_magic(rest)) {
      const formats::CcobHeader h =
          rebase_errors(at, [&] { return formats::read_ccob_header(rest.first(std::min<std::uint64_t>(rest.size(), formats::kMaxCcobHeaderSize)), rest.size(), s.errname); });
      if (!h.total_size) fail_at({s.errname, at}, "a registered compressed bundle of version 1 records no size");
      size = *h.total_size;
    } else if (formats::has_binary_bundle_magic(rest)) {
      for (const formats::BundleEntry& e : rebase_errors(at, [&] { return formats::read_binary_bundle(src, s.errname); }))
        size = std::max(size, e.offset + e.size);
    } else {
      fail_at({s.errname, at}, "a registration record points at neither an offload bundle nor an NVIDIA fatbin");
    }
    if (!blob(s, rest.first(std::min<std::uint64_t>(size, rest.size())), at, chain))
      fail_at({s.errname, at}, "a registration record points at no offload bundle");
  }

  void object_sections(const Source& s, const std::vector<object::SectionInfo>& sections) {
    // Every __CLANG_OFFLOAD_BUNDLE__<id> section of the object is one entry of one container.
    std::vector<const object::SectionInfo*> bundle_sections;
    for (const object::SectionInfo& sec : sections) {
      if (!sec.has_data) continue;
      Bytes bytes = s.data.subspan(sec.offset, sec.size);  // read_sections checked the range
      if (sec.name.starts_with(kSectionPrefix)) {
        bundle_sections.push_back(&sec);
      } else if (sec.name.starts_with(".hip_fat")) {
        if (!bytes.empty() && !blob(s, bytes, sec.offset, with(s.chain, "section " + sec.name)))
          fail_at({s.errname, sec.offset}, "section {} holds no offload bundle", sec.name);
      } else if (sec.name == ".llvm.offloading") {
        offload_binaries(s, bytes, sec.offset, with(s.chain, "section " + sec.name));
      } else if (formats::is_fatbin_section(sec.name)) {
        if (bytes.empty()) continue;
        if (!holds_fatbin(bytes.size(), bytes, sec.offset, s.backing))
          fail_at({s.errname, sec.offset}, "section {} holds no NVIDIA fatbin", sec.name);
        fatbins(bytes, sec.offset, s.errname, with(s.chain, "section " + sec.name), s.base, s.backing, false);
      }
    }
    if (bundle_sections.empty()) return;
    Container c{file_, with(s.chain, fmt::format("{} sections", kSectionPrefix)), {}, s.data};
    v_.container(c);
    for (std::size_t i = 0; i < bundle_sections.size(); ++i) {
      const object::SectionInfo& sec = *bundle_sections[i];
      emit(c, i, std::string_view(sec.name).substr(kSectionPrefix.size()), s.data.subspan(sec.offset, sec.size), sec.size,
           sec.offset, false, s.base, s.backing, {});
    }
  }

  void offload_binaries(const Source& s, Bytes data, std::uint64_t at, const std::vector<Link>& chain) {
    for (const formats::OffloadBinary& b : formats::read_offload_binaries(data, s.errname, at)) {
      Container c{file_, with(chain, fmt::format("offload binary at 0x{:x}", at + b.offset)), {}, {}};
      v_.container(c);
      for (std::size_t i = 0; i < b.entries.size(); ++i) {
        const formats::OffloadEntry& e = b.entries[i];
        Bytes image = data.subspan(e.image_offset, e.image_size);
        if (holds_fatbin(image.size(), image, at + e.image_offset, s.backing)) {
          fatbins(image, at + e.image_offset, s.errname, with(c.chain, fmt::format("entry {} ({})", i, e.id())), s.base,
                  s.backing, false);
          continue;
        }
        emit(c, i, e.id(), image, image.size(), at + e.image_offset, false, s.base, s.backing, {}, &e);
      }
    }
  }

  // Whether the `size` bytes `data`, at `local` of bytes lying at `backing`,
  // start with a fatbin's magic: read with pread where they lie in a file
  // (touching the mapping would map in 64 KiB around them), from the decoder
  // where they are in no memory (`data` is then empty).
  static bool holds_fatbin(std::uint64_t size, Bytes data, std::uint64_t local, Backing backing) {
    if (size < formats::kFatbinHeaderSize) return false;
    std::array<std::byte, 4> magic{};
    backing.copy(data, local, magic.data(), magic.size());
    return formats::has_fatbin_magic(Bytes(magic));
  }

  // The fatbins filling `data`, which lies at `at` of the bytes holding it
  // (those lie at `base` in the named file, if they do, and at `backing` in a
  // file to pread from). `in_ccob`: the bytes are a decompressed bundle's.
  void fatbins(Bytes data, std::uint64_t at, const std::string& errname, const std::vector<Link>& chain,
               std::optional<std::uint64_t> base, Backing backing, bool in_ccob) {
    std::vector<formats::Fatbin> found =
        formats::read_fatbins(backing.shifted(at).source(data), errname, at);
    for (std::size_t i = 0; i < found.size(); ++i) {
      const formats::Fatbin& f = found[i];
      Container c{file_,
                  with(chain, found.size() == 1 ? fmt::format("fatbin at 0x{:x}", at + f.offset)
                                                : fmt::format("fatbin {} at 0x{:x}", i, at + f.offset)),
                  {}, {}};
      v_.container(c);
      for (std::size_t k = 0; k < f.entries.size(); ++k) {
        const formats::FatbinEntry& fe = f.entries[k];
        const std::uint64_t local = at + fe.payload_offset();
        Entry& e = entry_;
        e.index = k;
        e.offload_binary = false;
        e.id = fe.target();
        e.bundle_id = e.id;
        e.target.assign(canonical(e.bundle_id, e.id));
        e.triple.assign(kNvptxTriple);
        e.kind = fe.kind_name();
        if (fe.kind == formats::kFatbinKindElf || fe.kind == formats::kFatbinKindPtx)
          e.processor = e.id;
        else
          e.processor.reset();
        e.code_object.clear();
        e.size = fe.stored_size();
        e.uncompressed_size = fe.uncompressed_size();
        e.compressed = fe.compression() != formats::FatbinCompression::None;
        e.local_offset = local;
        e.offset = base && !in_ccob ? std::optional(*base + local) : std::nullopt;
        e.ccob_size = 0;
        e.bytes = data.subspan(fe.payload_offset(), e.size);
        e.fatbin = &fe;
        e.kpack_archive.clear();
        e.kpack_binary.clear();
        e.kpack = nullptr;
        v_.entry(c, e);
        e.fatbin = nullptr;
      }
    }
  }

  std::string file_;
  Visitor& v_;
  bool headers_;  // v_.wants_code_object_headers()
  std::map<std::string, Parsed, std::less<>> parsed_;
  Entry entry_;  // emit's
  std::array<std::byte, kSniffSize> head_{};  // node's
  const Limits& limits_;
  std::uint64_t expanded_ = 0;
};

class Collector : public Visitor {
 public:
  explicit Collector(std::vector<FoundContainer>& out) : out_(out) {}
  void container(const Container& c) override {
    out_.push_back({c, {}});
    out_.back().container.object = {};
  }
  bool wants_payloads() const override { return false; }  // not kept
  void entry(const Container&, const Entry& e) override {
    out_.back().entries.push_back(e);
    out_.back().entries.back().bytes = {};
    out_.back().entries.back().fatbin = nullptr;
    out_.back().entries.back().kpack = nullptr;
  }

 private:
  std::vector<FoundContainer>& out_;
};

}  // namespace

std::string Container::name() const {
  std::string out;
  for (const Link& l : chain) {
    if (out.empty())
      out = l.text;
    else if (l.member)
      out += fmt::format("({})", l.text);
    else
      out += ", " + l.text;
  }
  return out;
}

std::vector<std::string> Container::path() const {
  std::vector<std::string> out;
  for (const Link& l : chain) out.push_back(l.text);
  return out;
}

std::string Container::innermost_member() const {
  for (auto l = chain.rbegin(); l != chain.rend(); ++l)
    if (l->member) return l->text;
  return {};
}

std::string location(const Container& c, const Entry& e) { return fmt::format("{}, entry {}", c.name(), e.index); }

void walk_bytes(Bytes data, const std::string& name, Visitor& v, const Limits& limits) {
  Walker w(name, v, limits);
  w.node(Source{data, name, {{name, false}}, 0, 0, {}});
}

void walk_file(const std::string& path, Visitor& v, const Limits& limits, const std::string& display) {
  walk_input(*InputFile::open(path), v, limits, display);
}

void walk_input(const InputFile& in, Visitor& v, const Limits& limits, const std::string& display) {
  std::string name = display.empty() ? in.path() : display;
  Walker w(name, v, limits);
  w.top_ = &in;
  w.node(Source{in.bytes(), name, {{name, false}}, 0, 0, {&in, 0}});
}

std::vector<FoundContainer> collect(Bytes data, const std::string& name, const Limits& limits) {
  std::vector<FoundContainer> out;
  Collector c(out);
  walk_bytes(data, name, c, limits);
  return out;
}

std::vector<FoundContainer> collect_file(const std::string& path, const Limits& limits) {
  std::vector<FoundContainer> out;
  Collector c(out);
  walk_file(path, c, limits);
  return out;
}

}  // namespace ot::contents
