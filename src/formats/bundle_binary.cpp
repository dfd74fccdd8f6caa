#include "formats/bundle_binary.h"

#include <algorithm>
#include <optional>
#include <set>

namespace ot::formats {

bool has_binary_bundle_magic(Bytes data) {
  return data.size() >= kBundleMagic.size() && as_chars(data.first(kBundleMagic.size())) == kBundleMagic;
}

std::vector<BundleEntry> read_binary_bundle(Bytes data, const std::string& file) {
  return read_binary_bundle(ByteSource(data), file);
}

std::vector<BundleEntry> read_binary_bundle(const ByteSource& src, const std::string& file) {
  std::vector<std::byte> buf;  // the header as far as it is read (when src reads a file)
  return read_binary_bundle(src, file, buf);
}

std::vector<BundleEntry> read_binary_bundle(const ByteSource& src, const std::string& file, std::vector<std::byte>& buf) {
  const std::uint64_t size = src.size();
  auto field = [&](std::uint64_t off, std::uint64_t n, std::string_view what) {
    if (range_exceeds(off, n, size))
      fail_at({file, off}, "{} (0x{:x} bytes) extends past the end of the file (0x{:x} bytes)", what, n, size);
    return src.prefix(off + n, buf).subspan(off);
  };
  if (!has_binary_bundle_magic(src.prefix(kBundleMagic.size(), buf)))
    fail_at({file, 0}, "not an offload bundle (no __CLANG_OFFLOAD_BUNDLE__ magic)");
  std::uint64_t pos = kBundleMagic.size();
  std::uint64_t count = load_le<std::uint64_t>(field(pos, 8, "bundle entry count").data());
  pos += 8;
  // Each entry takes at least 24 header bytes: a count the file cannot hold is a lie.
  if (count > (size - pos) / 24)
    fail_at({file, kBundleMagic.size()}, "bundle entry count {} does not fit in the file (0x{:x} bytes)", count, size);
  std::vector<BundleEntry> entries;
  entries.reserve(count);
  std::set<std::string_view> seen;  // views of the IDs in `entries`, which the reserve keeps in place
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t entry_at = pos;
    BundleEntry e;
    e.offset = load_le<std::uint64_t>(field(pos, 8, "bundle entry offset").data());
    e.size = load_le<std::uint64_t>(field(pos + 8, 8, "bundle entry size").data());
    std::uint64_t id_len = load_le<std::uint64_t>(field(pos + 16, 8, "bundle entry id length").data());
    pos += 24;
    e.id = std::string(as_chars(field(pos, id_len, "bundle entry id")));
    pos += id_len;
    if (range_exceeds(e.offset, e.size, size))
      fail_at({file, entry_at}, "bundle entry {} ('{}') payload at 0x{:x} of 0x{:x} bytes extends past the end of the file (0x{:x} bytes)",
              i, e.id, e.offset, e.size, size);
    entries.push_back(std::move(e));
    if (!seen.insert(entries.back().id).second)
      fail_at({file, entry_at}, "duplicate bundle entry id '{}'", entries.back().id);
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].offset < pos && entries[i].size > 0)
      fail_at({file, entries[i].offset}, "bundle entry {} ('{}') payload overlaps the bundle header (0x{:x} bytes)", i,
              entries[i].id, pos);
  }
  return entries;
}

std::optional<std::vector<BundleEntry>> read_binary_bundle_leniently(Bytes data) {
  std::vector<BundleEntry> entries;
  const std::uint64_t size = data.size();
  auto fits = [size](std::uint64_t at, std::uint64_t n) { return !range_exceeds(at, n, size); };
  if (!has_binary_bundle_magic(data) || !fits(kBundleMagic.size(), 8)) return std::nullopt;
  std::uint64_t pos = kBundleMagic.size();
  const std::uint64_t count = load_le<std::uint64_t>(data.data() + pos);
  pos += 8;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!fits(pos, 24)) return std::nullopt;
    BundleEntry e;
    e.offset = load_le<std::uint64_t>(data.data() + pos);
    e.size = load_le<std::uint64_t>(data.data() + pos + 8);
    const std::uint64_t id_len = load_le<std::uint64_t>(data.data() + pos + 16);
    pos += 24;
    if (!fits(pos, id_len)) return std::nullopt;
    e.id = std::string(as_chars(data.subspan(pos, id_len)));
    pos += id_len;
    if (e.offset == 0 || range_exceeds(e.offset, e.size, size)) break;
    auto same = std::find_if(entries.begin(), entries.end(), [&](const BundleEntry& x) { return x.id == e.id; });
    if (same != entries.end())
      *same = std::move(e);
    else
      entries.push_back(std::move(e));
  }
  return entries;
}

BinaryBundleLayout layout_binary_bundle(std::span<const std::string> ids, std::span<const std::uint64_t> sizes,
                                        std::uint64_t align) {
  BinaryBundleLayout l;
  std::uint64_t header_size = kBundleMagic.size() + 8;
  for (const std::string& id : ids) header_size += 24 + id.size();
  std::uint64_t at = header_size;
  for (std::uint64_t size : sizes) {
    at = align_to(at, align);
    l.offsets.push_back(at);
    at += size;
  }
  l.total_size = ids.empty() ? header_size : at;
  l.header.resize(header_size);
  std::byte* p = l.header.data();
  std::memcpy(p, kBundleMagic.data(), kBundleMagic.size());
  p += kBundleMagic.size();
  store_le<std::uint64_t>(p, ids.size());
  p += 8;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    store_le<std::uint64_t>(p, l.offsets[i]);
    store_le<std::uint64_t>(p + 8, sizes[i]);
    store_le<std::uint64_t>(p + 16, ids[i].size());
    p += 24;
    std::memcpy(p, ids[i].data(), ids[i].size());
    p += ids[i].size();
  }
  return l;
}

}  // namespace ot::formats
