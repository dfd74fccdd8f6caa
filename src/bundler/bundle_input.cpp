#include "bundler/bundle_input.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "codec/codec.h"
#include "formats/bundle_sequence.h"
#include "formats/bundle_text.h"
#include "formats/compressed_bundle.h"
#include "object/bundle_sections.h"
#include "object/object_file.h"
#include "support/llvm_stringmap.h"
#include "support/md5.h"
#include "support/output_file.h"

namespace ot::bundler {
namespace {

bool is_valid_type(std::string_view t) {
  return formats::text_comment_for_type(t) || t == "bc" || t == "gch" || t == "ast" || t == "o" || t == "a";
}

// The bundle at `base` of `in`, `size` bytes, decompressed if it is a CCOB
// (then a file of its own, else `in` itself).
std::shared_ptr<InputFile> decompress_if_needed(const Config& config, const std::shared_ptr<InputFile>& in,
                                                std::uint64_t base, std::uint64_t size, const std::string& display) {
  Bytes data = in->bytes().subspan(base, size);
  // LLVM 19 treats anything shorter than the v1 header as uncompressed, 22
  // anything shorter than the magic, version and method.
  const target::ReleaseTraits& llvm = target::traits(config.reading);
  // 23's reader (llvm::object::CompressedOffloadBundle) words its messages in lower case.
  const bool v23 = llvm.ccob_object_reader;
  if (data.size() < llvm.ccob_sniff_size || !formats::has_ccob_magic(data)) {
    if (config.verbose && data.size() >= llvm.ccob_sniff_size && config.err)
      config.err(v23 ? "Uncompressed bundle\n" : "Uncompressed bundle.\n");
    return in;
  }
  // LLVM says "input" for a file, "code object" for an archive member.
  const bool whole = base == 0 && size == in->size();
  const std::string_view failed = whole ? "Failed to decompress input" : "Failed to decompress code object";
  auto t0 = std::chrono::steady_clock::now();
  // LLVM 19's own texts for the two header faults it knows.
  std::uint16_t version = load_le<std::uint16_t>(data.data() + 4), method = load_le<std::uint16_t>(data.data() + 6);
  const bool known_version = version >= 1 && version <= 3;
  // LLVM's text, then ours naming the file and the field.
  if (llvm.ccob_known_versions_only && !known_version && !v23)
    fail_llvm("{}: Compressed bundle header size too small; {}: unknown compressed bundle version {}, at offset 0x{:x}",
              failed, display, version, base + 4);
  if ((version >= 2 || llvm.ccob_known_versions_only) && data.size() < formats::ccob_header_size(version))
    fail_llvm("{}: {}ompressed bundle header size too small", failed, v23 ? 'c' : 'C');
  if (method > 1) fail_llvm("{}: {}nknown compressing method", failed, v23 ? 'u' : 'U');
  if (v23 && !known_version) {
    // 23 knows no header for it and hands the whole bundle, magic first, to the
    // decompressor (observed: zstd's "Unknown frame descriptor" whatever follows).
    std::string why = "not compressed data";
    try {
      codec::decompress(method == 0 ? codec::Method::Zlib : codec::Method::Zstd, data, 1);
    } catch (const Error& e) {
      why = e.message();
    }
    fail_llvm("{}: could not decompress embedded file contents: {}; {}: unknown compressed bundle version {}, at offset 0x{:x}",
              failed, why, display, version, base + 4);
  }
  const formats::CcobHeader h = rebase_errors(base, [&] { return formats::read_ccob_header(data, display); });
  Bytes payload = formats::ccob_payload(data, h);
  std::vector<std::byte> plain;
  std::shared_ptr<InputFile> spilled;
  Md5 md5;
  auto hash = [&](Bytes b) {
    if (config.verbose) md5.update(b);  // the hash is only ever reported, never checked
  };
  try {
    if (h.uncompressed_size <= kInMemoryLimit) {
      plain = codec::decompress(h.method, payload, h.uncompressed_size);
      hash(plain);
    } else {
      // A large bundle is decompressed into an unlinked file beside the outputs
      // and mapped: memory stays flat, payloads still leave by copy_file_range.
      spilled = codec::decompress_to_file(h.method, payload, h.uncompressed_size,
                                             config.outputs.empty() ? "" : config.outputs[0], display, hash,
                                             [&](std::uint64_t n) { in->release(base + h.header_size, n); });
    }
  } catch (const Error& e) {
    // LLVM 19 feeds everything after the header to the decompressor; we stop at
    // the header's total size, so when that differs the failure is ours to explain.
    if (h.total_size && *h.total_size != data.size())
      fail_at({display, base + 8}, "compressed bundle of total size 0x{:x} (the {} has 0x{:x} bytes) does not decompress: {}",
              *h.total_size, whole ? "file" : "member", data.size(), e.message());
    fail_llvm("{}: {}ould not decompress embedded file contents: {}", failed, v23 ? 'c' : 'C', e.message());
  }
  const std::uint64_t plain_size = h.uncompressed_size;
  if (config.verbose && config.err) {
    double secs = std::max(seconds_since(t0), 1e-9);
    std::uint64_t recalculated = md5.truncated();
    double rate = static_cast<double>(plain_size) / static_cast<double>(payload.size());
    std::string text = fmt::format("Compressed bundle format version: {}\n", h.version);
    if (h.total_size) text += fmt::format("Total file size (from header): {} bytes\n", with_commas(*h.total_size));
    text += fmt::format(
        "Decompression method: {}\nSize before decompression: {} bytes\nSize after decompression: {} bytes\n"
        "Compression rate: {:.2f}\nCompression ratio: {:.2f}%\nDecompression speed: {:.2f} MB/s\n"
        "Stored hash: 0x{:014x}\nRecalculated hash: 0x{:014x}\nHashes match: {}\n",
        codec::method_name(h.method), with_commas(payload.size()), with_commas(plain_size), rate,
        100.0 / rate, static_cast<double>(plain_size) / (1024.0 * 1024.0) / secs, h.hash,
        recalculated, h.hash == recalculated ? "Yes" : "No");
    config.err(text);
  }
  if (spilled) return spilled;
  return InputFile::from_memory(display, std::move(plain));
}

// LLVM 23's search for the next bundle of an input (reference 1.5): `what`
// (the magic or "CCOB") at or after `from`.
std::optional<std::uint64_t> find_from(Bytes data, std::string_view what, std::uint64_t from) {
  if (from >= data.size()) return std::nullopt;
  std::string_view s = as_chars(data);
  auto at = s.find(what, from);
  if (at == std::string_view::npos) return std::nullopt;
  return at;
}

// Where a CCOB at `pos` ends as 23 reads it: its header's total size (versions
// 2 and 3), else (or when that runs past the end) the end of the input.
std::uint64_t ccob_end(Bytes data, std::uint64_t pos) {
  Bytes c = data.subspan(pos);
  std::uint16_t version = c.size() >= 6 ? load_le<std::uint16_t>(c.data() + 4) : 0;
  std::uint64_t total = 0;
  if (version == 2 && c.size() >= 12) total = load_le<std::uint32_t>(c.data() + 8);
  if (version == 3 && c.size() >= 16) total = load_le<std::uint64_t>(c.data() + 8);
  return total == 0 || total > c.size() ? data.size() : pos + total;
}

// A plain bundle 23 found by searching, read as its ReadHeader reads one.
OpenedBundle plain_piece(const std::shared_ptr<InputFile>& in, std::uint64_t base, std::uint64_t size) {
  OpenedBundle b;
  b.input = b.file = in;
  b.base = base;
  b.size = size;
  b.display = in->path();
  b.handler = Handler::Binary;
  b.entries = formats::read_binary_bundle_leniently(b.bytes()).value_or(std::vector<formats::BundleEntry>{});
  return b;
}

// The CCOBs of an input that starts with one, each decompressed; none when
// there is only the one (then read as 22 reads it, the whole input).
std::vector<OpenedBundle> ccob_chunks(const Config& config, const std::shared_ptr<InputFile>& in) {
  Bytes data = in->bytes();
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (std::optional<std::uint64_t> pos = 0; pos;) {
    std::uint64_t end = ccob_end(data, *pos);
    spans.emplace_back(*pos, end);
    pos = find_from(data, formats::kCcobMagic, end);
  }
  std::vector<OpenedBundle> chunks;
  if (spans.size() > 1)
    for (const auto& [pos, end] : spans) chunks.push_back(open_bundle(config, in, pos, end - pos, in->path()));
  return chunks;
}

bool reads_several_as_23(const Config& config, Bytes data) {
  return target::traits(config.reading).several_bundles && !config.concatenated &&
         handler_for(config.type, data) == Handler::Binary;
}

constexpr std::uint64_t kSearchSkip = 25;  // 23 looks for the next magic 25 bytes after the last one found

}  // namespace

std::optional<std::string> list_as_23(const Config& config, const std::shared_ptr<InputFile>& in) {
  Bytes data = in->bytes();
  if (!reads_several_as_23(config, data)) return std::nullopt;
  std::string text;
  if (data.size() >= target::traits(config.reading).ccob_sniff_size && formats::has_ccob_magic(data)) {
    // One ID list per CCOB.
    std::vector<OpenedBundle> chunks = ccob_chunks(config, in);
    if (chunks.empty()) return std::nullopt;
    for (const OpenedBundle& b : chunks)
      for (const formats::BundleEntry& e : b.entries) text += e.id + "\n";
    return text;
  }
  // Plain: after each bundle found, every ID found so far. The first, at the
  // start, is read as 22 reads it (a malformed header is an error, ours); the
  // ones found by searching as LLVM reads a header.
  std::vector<std::string> ids;
  auto add = [&](const std::vector<formats::BundleEntry>& entries) {
    for (const formats::BundleEntry& e : entries)
      if (std::find(ids.begin(), ids.end(), e.id) == ids.end()) ids.push_back(e.id);
    for (const std::string& id : ids) text += id + "\n";
  };
  OpenedBundle first = open_bundle(config, in, 0, data.size(), in->path());
  if (formats::has_binary_bundle_magic(data)) add(first.entries);
  std::uint64_t pos = 0;
  while (std::optional<std::uint64_t> hit = find_from(data, formats::kBundleMagic, pos + kSearchSkip)) {
    // A header cut short, or one whose first entry is already out of place, is
    // not a bundle: nothing is listed for it (observed).
    auto entries = formats::read_binary_bundle_leniently(data.subspan(*hit));
    if (entries && !entries->empty()) add(*entries);
    pos = *hit;
  }
  return text;
}

std::vector<OpenedBundle> bundles_as_23_unbundles(const Config& config, const std::shared_ptr<InputFile>& in) {
  Bytes data = in->bytes();
  if (!reads_several_as_23(config, data)) return {};
  if (data.size() >= target::traits(config.reading).ccob_sniff_size && formats::has_ccob_magic(data))
    return ccob_chunks(config, in);
  if (!formats::has_binary_bundle_magic(data)) return {};
  // Split at every later magic: each piece up to the next. One piece: read as 22 does.
  std::vector<std::uint64_t> starts{0};
  while (auto hit = find_from(data, formats::kBundleMagic, starts.back() + kSearchSkip)) starts.push_back(*hit);
  if (starts.size() == 1) return {};
  // -verbose: 23 says it once for each piece (and once when listing).
  if (config.verbose && config.err)
    for (std::size_t i = 0; i < starts.size(); ++i) config.err("Uncompressed bundle\n");
  std::vector<OpenedBundle> pieces;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    std::uint64_t end = i + 1 < starts.size() ? starts[i + 1] : data.size();
    pieces.push_back(plain_piece(in, starts[i], end - starts[i]));
  }
  return pieces;
}

Handler handler_for(const std::string& type, Bytes reference) {
  if (!is_valid_type(type)) fail_llvm("'{}': invalid file type specified", type);
  if (formats::text_comment_for_type(type)) return Handler::Text;
  if ((type == "o" || type == "a") && object::identify_object(reference) != object::ObjectKind::NotObject)
    return Handler::Object;
  return Handler::Binary;
}

std::string with_commas(std::uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool is_host_marker(Bytes payload) { return payload.size() == 1 && payload[0] == std::byte{0}; }

bool OpenedBundle::is_host_marker(const formats::BundleEntry& e) const {
  return handler == Handler::Object && bundler::is_host_marker(payload(e));
}

std::vector<std::size_t> OpenedBundle::llvm_order() const {
  if (handler == Handler::Binary) {
    std::vector<std::string> ids;
    for (const formats::BundleEntry& e : entries) ids.push_back(e.id);
    return stringmap_order(ids);
  }
  std::vector<std::size_t> order(entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

OpenedBundle open_bundle(const Config& config, const std::shared_ptr<InputFile>& in, std::uint64_t base,
                         std::uint64_t size, const std::string& display, bool decompress) {
  OpenedBundle b;
  b.input = in;
  b.display = display;
  b.file = decompress ? decompress_if_needed(config, in, base, size, display) : in;
  b.base = b.decompressed() ? 0 : base;
  b.size = b.decompressed() ? b.file->size() : size;
  Bytes data = b.bytes();
  b.handler = handler_for(config.type, data);
  rebase_errors(b.base, [&] {
    switch (b.handler) {
      case Handler::Text:
        b.entries = formats::read_text_bundle(data, *formats::text_comment_for_type(config.type), display);
        break;
      case Handler::Object:
        for (const object::SectionInfo& s : object::read_sections(data, display)) {
          if (!s.name.starts_with(kSectionPrefix)) continue;
          b.entries.push_back({s.name.substr(kSectionPrefix.size()), s.offset, s.has_data ? s.size : 0});
        }
        break;
      case Handler::Binary:
        if (formats::has_binary_bundle_magic(data)) b.entries = formats::read_binary_bundle(data, display);
        break;
    }
    return 0;
  });
  return b;
}

std::vector<OpenedBundle> open_bundles(const Config& config, const std::shared_ptr<InputFile>& in) {
  if (std::vector<OpenedBundle> as_23 = bundles_as_23_unbundles(config, in); !as_23.empty()) return as_23;
  const std::string& path = in->path();
  std::vector<formats::BundleSpan> spans;
  if (config.concatenated && handler_for(config.type, in->bytes()) == Handler::Binary)
    spans = formats::split_bundles(in->bytes(), path);
  if (spans.size() <= 1) return {open_bundle(config, in, 0, in->size(), path)};
  std::vector<OpenedBundle> bundles;
  for (const formats::BundleSpan& s : spans) bundles.push_back(open_bundle(config, in, s.offset, s.size, path));
  return bundles;
}

void write_stripped_object(const OpenedBundle& b, OutputFile& out) {
  write_stripped_object(*b.file, b.bytes(), b.display, out);
}

void write_stripped_object(const InputFile& file, Bytes object, const std::string& display, OutputFile& out) {
  auto remove = [](std::string_view name) { return name.starts_with(kSectionPrefix); };
  if (object.data() == file.bytes().data() && object.size() == file.size()) {
    object::write_without_sections(file, remove, out);
    return;
  }
  // The writer edits a whole file: an object inside a larger one is copied out first.
  object::write_without_sections(*InputFile::from_memory(display, {object.begin(), object.end()}), remove, out);
}

}  // namespace ot::bundler
