#include "prune/prune.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>

#include "compress/ccob.h"
#include "codec/codec.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_text.h"
#include "formats/compressed_bundle.h"
#include "formats/kpack.h"
#include "formats/nv_fatbin.h"
#include "formats/offload_binary.h"
#include "target/processors.h"

namespace ot::prune {

void check_not_empty(const Selection& selection, const Report& r, const std::string& file) {
  if (selection.allow_empty) return;
  bool any_device = false, device_kept = false;
  for (const EntryReport& e : r.entries) {
    if (e.id.starts_with("host-")) continue;
    any_device = true;
    device_kept = device_kept || e.kept;
  }
  if (any_device && !device_kept)
    throw NothingStays({file},
                       fmt::format("no device entry of the {} would stay (--allow-empty writes it without any)",
                                   r.container),
                       r);
}

void check_found(const Selection& selection, const TreeReport& r, const std::string& file) {
  if (selection.allow_empty) return;
  bool unmatched = false;  // files whose device entries are all for other targets
  for (const FileReport& f : r.files) {
    unmatched = unmatched || f.report.none_for_targets;
    if (!f.per_gpu && !f.report.none_for_targets && (!f.report.entries.empty() || f.action != FileAction::Copy))
      return;  // per-GPU files hold none
  }
  if (unmatched)
    fail(file, "no device entry of any of its files would stay (--allow-empty writes them without any)");
  fail(file, "no device code found (no offload bundle, compressed bundle, offload binary, NVIDIA fatbin, bare code "
       "object or bundle section in any of its files)");
}

namespace {

// The bundle alignment the bundler used for `entries`: the largest power of
// two up to 4096 whose layout reproduces their offsets, else the largest one
// dividing every offset (a bundle laid out by another tool keeps its alignment).
std::uint64_t bundle_alignment(const std::vector<formats::BundleEntry>& entries) {
  std::vector<std::string> ids;
  std::vector<std::uint64_t> sizes;
  for (const formats::BundleEntry& e : entries) {
    ids.push_back(e.id);
    sizes.push_back(e.size);
  }
  for (std::uint64_t align = 4096; align >= 1; align /= 2) {
    formats::BinaryBundleLayout l = formats::layout_binary_bundle(ids, sizes, align);
    bool same = true;
    for (std::size_t i = 0; i < entries.size() && same; ++i) same = l.offsets[i] == entries[i].offset;
    if (same) return align;
  }
  std::uint64_t align = 4096;
  for (const formats::BundleEntry& e : entries)
    while (align > 1 && e.offset % align != 0) align /= 2;
  return align;
}

// Output in order: literal bytes, then `zeros` zero bytes, then `bytes` (of the input).
struct Piece {
  std::vector<std::byte> literal;
  Bytes bytes;
  std::uint64_t zeros = 0;
};

void emit(const std::vector<Piece>& pieces, const codec::Sink& sink) {
  static const std::byte kZero[4096] = {};
  for (const Piece& p : pieces) {
    if (!p.literal.empty()) sink(p.literal);
    for (std::uint64_t left = p.zeros; left > 0;) {
      std::uint64_t n = std::min<std::uint64_t>(left, sizeof kZero);
      sink(Bytes(kZero, n));
      left -= n;
    }
    if (!p.bytes.empty()) sink(p.bytes);
  }
}

// A binary bundle of `size` bytes holding `entries`, pruned: its report, the
// entries that stay and where they go. What prune_binary and a CCOB's
// streaming prune share.
struct BinaryPlan {
  Report report;
  std::vector<formats::BundleEntry> kept;
  formats::BinaryBundleLayout layout;
};

BinaryPlan plan_binary(const std::vector<formats::BundleEntry>& entries, std::uint64_t size, const Selection& selection,
                       const std::string& file) {
  BinaryPlan p{Report{"binary bundle", {}, size, 0}, {}, {}};
  std::uint64_t end = formats::layout_binary_bundle({}, {}, 1).header.size();
  for (const formats::BundleEntry& e : entries) end = std::max({end, e.offset + e.size, e.offset});
  if (end < size)
    fail_at({file, end}, "0x{:x} bytes follow the bundle (several bundles one after another are not pruned yet)",
            size - end);
  std::vector<std::string> ids;
  std::vector<std::uint64_t> sizes;
  for (const formats::BundleEntry& e : entries) {
    const bool kept = stays(selection, e.id, {file, e.offset});
    p.report.entries.push_back({e.id, e.size, kept});
    if (!kept) continue;
    ids.push_back(e.id);
    sizes.push_back(e.size);
    p.kept.push_back(e);
  }
  check_not_empty(selection, p.report, file);
  p.layout = formats::layout_binary_bundle(ids, sizes, bundle_alignment(entries));
  p.report.size_after = p.layout.total_size;
  return p;
}

Report prune_binary(Bytes data, const Selection& selection, const std::string& file, std::vector<Piece>& out) {
  BinaryPlan p = plan_binary(formats::read_binary_bundle(data, file), data.size(), selection, file);
  std::uint64_t at = p.layout.header.size();
  out.push_back({std::move(p.layout.header), {}, 0});
  for (std::size_t i = 0; i < p.kept.size(); ++i) {
    out.push_back({{}, data.subspan(p.kept[i].offset, p.kept[i].size), p.layout.offsets[i] - at});
    at = p.layout.offsets[i] + p.kept[i].size;
  }
  return std::move(p.report);
}

// A text bundle keeps every byte but the dropped entries: each from its start
// marker to the end of its end marker's line (what the bundler wrote for it).
Report prune_text(Bytes data, std::string_view comment, const Selection& selection, const std::string& file,
                  std::vector<Piece>& out) {
  Report r{"text bundle", {}, data.size(), 0};
  const std::string start = formats::text_start_marker(comment), end = formats::text_end_marker(comment);
  std::uint64_t copied = 0;  // bytes of `data` handled so far
  for (const formats::BundleEntry& e : formats::read_text_bundle(data, comment, file)) {
    bool kept = stays(selection, e.id, {file, e.offset});
    r.entries.push_back({e.id, e.size, kept});
    if (kept) continue;
    std::uint64_t from = e.offset - e.id.size() - 1 - start.size();
    // The end marker's line: its ID and newline (the reader found the marker).
    std::string_view rest = as_chars(data).substr(e.offset + e.size + end.size());
    std::size_t line = rest.find('\n');
    std::uint64_t to = data.size() - rest.size() + (line == std::string_view::npos ? rest.size() : line + 1);
    out.push_back({{}, data.subspan(copied, from - copied), 0});
    r.size_after += from - copied;
    copied = to;
  }
  out.push_back({{}, data.subspan(copied), 0});
  r.size_after += data.size() - copied;
  check_not_empty(selection, r, file);
  return r;
}

Report prune_plain(Bytes data, const Selection& selection, const std::string& file, std::vector<Piece>& out) {
  if (formats::has_binary_bundle_magic(data)) return prune_binary(data, selection, file, out);
  if (std::optional<std::string_view> comment = formats::find_text_comment(data))
    return prune_text(data, *comment, selection, file, out);
  fail_at({file, 0}, "not an offload bundle, compressed offload bundle or offload binary");
}

Report prune_ccob(Bytes data, const Selection& selection, const std::string& file, const codec::Sink& sink) {
  formats::CcobHeader h = formats::read_ccob_header(data, file);
  if (h.total_size && *h.total_size < data.size())
    fail_at({file, *h.total_size}, "0x{:x} bytes follow the compressed bundle (several bundles one after another "
            "are not pruned yet)", data.size() - *h.total_size);
  // Refused from its first bytes when they are no bundle, before a declared
  // size of GiBs is decoded (the pruner holds the content in memory).
  bool may_be_bundle = true;
  try {
    may_be_bundle = compress::may_hold_bundle(h, formats::ccob_payload(data, h));
  } catch (const Error& e) {
    fail_at({file, h.header_size}, "cannot decompress the compressed bundle: {}", e.message());
  }
  if (!may_be_bundle) fail_at({file, 0}, "the compressed bundle holds neither a binary nor a text bundle");
  const Bytes payload = formats::ccob_payload(data, h);
  const std::string inner = file + " (decompressed)";
  // A binary bundle is pruned as it is decoded: its table comes from the first
  // decoded bytes, and the kept payloads go to an unlinked scratch file, which
  // is compressed again from its mapping with its pages released behind the
  // compressor. Holding the decoded bundle in memory took 2.2 GB for a 33 KB
  // CCOB holding a 1 GiB entry (and failed under a 2 GiB address-space limit).
  std::shared_ptr<InputFile> scratch;
  std::vector<std::byte> plain;  // a text bundle: decoded in memory
  Report r;
  compress::CcobPrefix table(h, payload, true, file, h.header_size);  // the first decoded bytes, as far as the table goes
  if (formats::has_binary_bundle_magic(table.head(formats::kBundleMagic.size()))) {
    BinaryPlan p = plan_binary(formats::read_binary_bundle(table.source(), inner), h.uncompressed_size, selection, inner);
    const std::vector<formats::BundleEntry>& kept = p.kept;
    const formats::BinaryBundleLayout& layout = p.layout;
    r = std::move(p.report);
    // The kept payloads in the order the decoder meets them, each with where it goes.
    std::vector<std::size_t> order(kept.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::ranges::sort(order, [&](std::size_t a, std::size_t b) { return kept[a].offset < kept[b].offset; });
    OutputFile out = OutputFile::scratch_beside(file);
    out.resize(layout.total_size);
    out.write_at(0, layout.header);
    std::uint64_t at = 0;  // in the decoded bundle
    std::size_t next = 0;  // in `order`: the first kept payload not yet done
    compress::DecodedCcob d = compress::decode_ccob(data, file, 0, [&](Bytes b) {
      for (std::size_t k = next; k < order.size() && kept[order[k]].offset < at + b.size(); ++k) {
        const formats::BundleEntry& e = kept[order[k]];
        const std::uint64_t from = std::max(e.offset, at), to = std::min(e.offset + e.size, at + b.size());
        if (from < to) out.write_at(layout.offsets[order[k]] + (from - e.offset), b.subspan(from - at, to - from));
        if (e.offset + e.size <= at + b.size() && k == next) ++next;
      }
      at += b.size();
    }, true);
    if (!d.hash_matches()) throw compress::hash_mismatch_error(d, file, 0);
    scratch = out.map(inner);
  } else {
    compress::DecodedCcob d = compress::decode_ccob(
        data, file, 0, [&](Bytes b) { plain.insert(plain.end(), b.begin(), b.end()); }, true);
    if (!d.hash_matches()) throw compress::hash_mismatch_error(d, file, 0);
    std::vector<Piece> pieces;
    r = prune_plain(plain, selection, inner, pieces);
    std::vector<std::byte> pruned;
    pruned.reserve(r.size_after);
    emit(pieces, [&](Bytes b) { pruned.insert(pruned.end(), b.begin(), b.end()); });
    plain = std::move(pruned);
  }
  compress::CcobOptions o;
  o.params.method = h.method;
  o.params.level = codec::default_level(h.method);
  o.version = h.version;
  const Bytes pruned = scratch ? scratch->bytes() : Bytes(plain);
  std::vector<std::byte> ccob(formats::ccob_header_size(o.version));
  const formats::CcobHeader nh = compress::compress_ccob(
      pruned, o, file, [&](Bytes b) { ccob.insert(ccob.end(), b.begin(), b.end()); },
      [&](std::uint64_t done) { if (scratch) scratch->release(0, done); });
  const std::vector<std::byte> header = formats::write_ccob_header(nh);
  std::copy(header.begin(), header.end(), ccob.begin());
  r.container = fmt::format("compressed bundle (version {}, {}) holding a {}", h.version,
                            codec::method_name(h.method), r.container);
  r.size_before = h.total_size.value_or(data.size());
  r.size_after = ccob.size();
  sink(ccob);
  return r;
}

Report prune_offload_binaries(Bytes data, const Selection& selection, const std::string& file,
                              std::vector<Piece>& out) {
  Report r{"offload binaries", {}, data.size(), 0};
  for (const formats::OffloadBinary& b : formats::read_offload_binaries(data, file)) {
    std::optional<bool> binary_kept;
    for (const formats::OffloadEntry& e : b.entries) {
      std::string id = e.id();
      bool kept = stays(selection, compat::offload_bundle_id(e), {file, b.offset});
      if (binary_kept && *binary_kept != kept)
        fail_at({file, b.offset}, "offload binary version {} holds entries that stay and entries that go ({})",
                b.version, id);
      binary_kept = kept;
      r.entries.push_back({std::move(id), e.image_size, kept});
    }
    // A binary's bytes are exactly what the packager wrote for its image.
    if (binary_kept.value_or(true)) {
      out.push_back({{}, data.subspan(b.offset, b.size), 0});
      r.size_after += b.size;
    }
  }
  check_not_empty(selection, r, file);
  return r;
}

// NVIDIA fatbins one after another (zero padding between them is dropped):
// each keeps what fatbin_keeps says, its kept entries' headers and payloads
// as stored (nothing is decompressed), under a new 16-byte header. A fatbin
// left without entries stays as an empty fatbin: a program's record points at it.
Report prune_fatbins(const ByteSource& src, const Selection& selection, const std::string& file,
                     std::vector<Piece>& out) {
  const Bytes data = src.data();
  Report r{"NVIDIA fatbins", {}, data.size(), 0};
  for (const formats::Fatbin& f : formats::read_fatbins(src, file)) {
    const std::vector<bool> keep = fatbin_keeps(selection, f);
    std::vector<std::size_t> kept;
    for (std::size_t i = 0; i < f.entries.size(); ++i) {
      r.entries.push_back({f.entries[i].target(), f.entries[i].uncompressed_size(), keep[i]});
      if (keep[i]) kept.push_back(i);
    }
    const Bytes bytes = data.subspan(f.offset, f.size);
    if (kept.size() == f.entries.size()) {
      out.push_back({{}, bytes, 0});
      r.size_after += bytes.size();
      continue;
    }
    std::array<std::byte, formats::kFatbinHeaderSize> header{};
    std::vector<Bytes> pieces = formats::prune_fatbin(bytes, f, kept, header);
    out.push_back({std::vector<std::byte>(header.begin(), header.end()), {}, 0});
    r.size_after += header.size();
    for (std::size_t i = 1; i < pieces.size(); ++i) {
      out.push_back({{}, pieces[i], 0});
      r.size_after += pieces[i].size();
    }
  }
  check_not_empty(selection, r, file);
  return r;
}

// An AMD kpack archive: the kept architectures' code objects under a new TOC,
// laid out by formats::write_kpack as AMD's writer lays them out. Each arch key
// (and each gfx_arches string) is a target ID without its triple, matched as a
// bare code object's is. Stored bytes are copied: a zstd-per-kernel frame is
// never decoded or compressed again; the ordinals of what stays are 0..N-1 in
// their original order, and blobs / zstd_offset and zstd_size follow from the
// new layout. group_name and the TOC's other fields are kept.
Report prune_kpack(Bytes data, const Selection& selection, const std::string& file, std::vector<Piece>& out) {
  const formats::KpackArchive a = formats::read_kpack(data, file);
  Report r{fmt::format("kpack archive ({})", formats::kpack_scheme_name(a.scheme)), {}, data.size(), 0};
  formats::KpackArchive kept = a;
  kept.kernels.clear();
  kept.gfx_arches.clear();
  for (const formats::KpackKernel& k : a.kernels) {
    const bool stay = stays(selection, k.arch, {file, k.offset});
    r.entries.push_back({k.arch, k.original_size, stay, fmt::format("binary '{}'", k.binary)});
    if (stay) kept.kernels.push_back(k);
  }
  check_not_empty(selection, r, file);
  for (const std::string& arch : a.gfx_arches)
    if (stays(selection, arch, {file, a.toc_offset})) kept.gfx_arches.push_back(arch);
  // gfx_arch_family names a family ("gfx110X") or, as AMD's splitter writes
  // it, the archive's one architecture: where that is an architecture the
  // archive listed and no longer does, it becomes the first that stays (the
  // splitter's gfx_arches[0]), so that the TOC names no code it lacks.
  const bool family_dropped = std::ranges::find(a.gfx_arches, a.gfx_arch_family) != a.gfx_arches.end() &&
                              std::ranges::find(kept.gfx_arches, a.gfx_arch_family) == kept.gfx_arches.end();
  if (family_dropped && !kept.gfx_arches.empty()) kept.gfx_arch_family = kept.gfx_arches.front();
  // New ordinals in the order of the old ones; stored[new ordinal] is the stored blob or frame, as it is.
  std::vector<formats::KpackKernel*> by_ordinal;
  for (formats::KpackKernel& k : kept.kernels) by_ordinal.push_back(&k);
  std::ranges::sort(by_ordinal, {}, [](const formats::KpackKernel* k) { return k->ordinal; });
  std::vector<Bytes> stored;
  for (formats::KpackKernel* k : by_ordinal) {
    k->ordinal = static_cast<std::uint32_t>(stored.size());
    stored.push_back(data.subspan(k->offset, k->stored_size));  // read_kpack checked the range
  }
  // The code objects or frames go out as views of the input; the header, frame sizes and TOC as written.
  formats::write_kpack(kept, stored, [&](Bytes b, bool is_stored) {
    if (is_stored)
      out.push_back({{}, b, 0});
    else
      out.push_back({std::vector<std::byte>(b.begin(), b.end()), {}, 0});
    r.size_after += b.size();
  });
  return r;
}

}  // namespace

std::vector<bool> fatbin_keeps(const Selection& selection, const formats::Fatbin& f) {
  const std::size_t n = f.entries.size();
  std::vector<std::optional<compat::TargetSpec>> specs(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t kind = f.entries[i].kind;
    if (kind == formats::kFatbinKindElf || kind == formats::kFatbinKindPtx) specs[i] = compat::parse_spec(f.entries[i].target());
  }
  std::vector<bool> hit(n, false);
  for (const compat::TargetSpec& t : selection.targets) {
    if (t.family != compat::Family::Nvptx) continue;
    const std::optional<target::NvptxArch> a = target::parse_nvptx_arch(t.processor);
    if (!a) continue;
    const unsigned number = static_cast<unsigned>(a->major * 10 + a->minor);
    // An entry of a kind we do not know goes with the targets of its arch number.
    for (std::size_t i = 0; i < n; ++i)
      if (!specs[i] && f.entries[i].arch == number) hit[i] = true;
    if (selection.mode == Selection::Mode::Drop) {
      for (std::size_t i = 0; i < n; ++i)
        if (specs[i] && specs[i]->processor == t.processor) hit[i] = true;
      continue;
    }
    // What a GPU of that compute capability loads: for sm_XY the nearest
    // cubin, else the newest PTX; for compute_XY the PTX it would JIT.
    const compat::TargetSpec gpu = compat::parse_spec(
        fmt::format("sm_{}{}", number, a->arch_specific ? "a" : a->family_specific ? "f" : ""));
    std::optional<std::size_t> best;
    std::tuple<bool, int> best_rank{};
    for (std::size_t i = 0; i < n; ++i) {
      if (!specs[i]) continue;
      if (a->is_virtual && !target::parse_nvptx_arch(specs[i]->processor)->is_virtual) continue;
      const compat::CheckResult c = compat::check(*specs[i], gpu);
      if (!c.compatible) continue;
      const std::tuple<bool, int> rank{c.generic, c.distance};
      if (!best || rank < best_rank) {
        best = i;
        best_rank = rank;
      }
    }
    if (best) hit[*best] = true;
  }
  if (selection.mode == Selection::Mode::Keep) return hit;
  for (std::size_t i = 0; i < n; ++i) hit[i] = !hit[i];
  return hit;
}

std::uint64_t Report::dropped() const {
  return static_cast<std::uint64_t>(std::ranges::count(entries, false, &EntryReport::kept));
}

Selection make_selection(Selection::Mode mode, const std::vector<std::string>& targets, bool allow_empty) {
  Selection s{mode, {}, allow_empty};
  for (const std::string& t : targets) {
    try {
      s.targets.push_back(compat::parse_spec(t));
    } catch (const Error& e) {
      fail("", "target '{}': {}", t, e.message());
    }
  }
  return s;
}

bool selects(const compat::TargetSpec& target, const compat::TargetSpec& entry) {
  compat::TargetSpec code = entry;
  // A feature the target leaves open matches the entry's setting, whatever it is.
  std::erase_if(code.features, [&](const auto& f) { return !target.features.contains(f.first); });
  return compat::check(code, target).compatible;
}

bool stays(const Selection& selection, std::string_view id, const Where& where) {
  if (id.starts_with("host-")) return true;
  compat::TargetSpec entry;
  try {
    entry = compat::parse_spec(id);
  } catch (const Error& e) {
    fail_at(where, "entry '{}' cannot be matched: {}", id, e.message());
  }
  if (entry.kind == "host") return true;
  bool any = std::ranges::any_of(selection.targets, [&](const compat::TargetSpec& t) { return selects(t, entry); });
  return selection.mode == Selection::Mode::Keep ? any : !any;
}

Report prune_fatbin_container(const ByteSource& src, const Selection& selection, const std::string& file,
                              const codec::Sink& sink) {
  std::vector<Piece> pieces;
  Report r = prune_fatbins(src, selection, file, pieces);
  emit(pieces, sink);
  return r;
}

Report prune_container(Bytes data, const Selection& selection, const std::string& file, const codec::Sink& sink) {
  if (formats::has_ccob_magic(data)) return prune_ccob(data, selection, file, sink);
  std::vector<Piece> pieces;
  Report r = formats::has_offload_binary_magic(data) ? prune_offload_binaries(data, selection, file, pieces)
             : formats::has_fatbin_magic(data)       ? prune_fatbins(ByteSource(data), selection, file, pieces)
             : formats::has_kpack_magic(data)        ? prune_kpack(data, selection, file, pieces)
                                                      : prune_plain(data, selection, file, pieces);
  emit(pieces, sink);
  return r;
}

}  // namespace ot::prune
