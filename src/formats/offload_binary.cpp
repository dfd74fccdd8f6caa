#include "formats/offload_binary.h"

#include <algorithm>
#include <array>

#include "formats/llvm_string_table.h"

namespace ot::formats {
namespace {

constexpr std::array<std::byte, 4> kMagic = {std::byte{0x10}, std::byte{0xFF}, std::byte{0x10}, std::byte{0xAD}};

bool starts_with(Bytes data, std::string_view prefix) {
  return data.size() >= prefix.size() && as_chars(data.first(prefix.size())) == prefix;
}

// Bounds-checked field access inside one binary; errors carry absolute offsets.
class BinaryReader {
 public:
  BinaryReader(Bytes binary, const std::string& file, std::uint64_t base) : b_(binary), file_(file), base_(base) {}

  std::uint64_t size() const { return b_.size(); }
  Where at(std::uint64_t off) const { return {file_, base_ + off}; }

  template <typename T>
  T get(std::uint64_t off) const {  // callers check the range first
    return load_le<T>(b_.data() + off);
  }

  // A NUL-terminated string starting at `off`, which must lie inside the binary.
  std::string c_string(std::uint64_t off, std::uint64_t record, std::string_view what) const {
    if (off >= b_.size())
      fail_at(at(record), "{} offset 0x{:x} is past the end of the binary (0x{:x} bytes)", what, off, b_.size());
    std::string_view rest = as_chars(b_.subspan(off));
    std::size_t nul = rest.find('\0');
    if (nul == std::string_view::npos)
      fail_at(at(record), "{} at 0x{:x} has no terminating NUL before the end of the binary (0x{:x} bytes)", what, off,
              b_.size());
    return std::string(rest.substr(0, nul));
  }

  std::string sized_string(std::uint64_t off, std::uint64_t len, std::uint64_t record, std::string_view what) const {
    if (range_exceeds(off, len, b_.size()))
      fail_at(at(record), "{} (0x{:x} bytes at 0x{:x}) extends past the end of the binary (0x{:x} bytes)", what, len,
              off, b_.size());
    return std::string(as_chars(b_.subspan(off, len)));
  }

 private:
  Bytes b_;
  const std::string& file_;
  std::uint64_t base_;
};

OffloadEntry read_entry(const BinaryReader& r, std::uint32_t version, std::uint64_t eoff, std::uint64_t index) {
  OffloadEntry e;
  e.image_kind = r.get<std::uint16_t>(eoff);
  e.offload_kind = r.get<std::uint16_t>(eoff + 2);
  e.flags = r.get<std::uint32_t>(eoff + 4);
  const std::uint64_t string_offset = r.get<std::uint64_t>(eoff + 8);
  const std::uint64_t num_strings = r.get<std::uint64_t>(eoff + 16);
  e.image_offset = r.get<std::uint64_t>(eoff + 24);
  e.image_size = r.get<std::uint64_t>(eoff + 32);

  const std::uint64_t record = version == 1 ? kOffloadStringEntrySizeV1 : kOffloadStringEntrySizeV2;
  if (string_offset > r.size() || num_strings > (r.size() - string_offset) / record)
    fail_at(r.at(eoff + 8), "entry {}: 0x{:x} string entries at 0x{:x} extend past the end of the binary (0x{:x} bytes)",
            index, num_strings, string_offset, r.size());
  if (range_exceeds(e.image_offset, e.image_size, r.size()))
    fail_at(r.at(eoff + 24), "entry {}: image (0x{:x} bytes at 0x{:x}) extends past the end of the binary (0x{:x} bytes)",
            index, e.image_size, e.image_offset, r.size());
  if (e.image_size != 0 && e.image_offset < kOffloadHeaderSize)
    fail_at(r.at(eoff + 24), "entry {}: image at 0x{:x} overlaps the header", index, e.image_offset);

  e.strings.reserve(num_strings);
  for (std::uint64_t j = 0; j < num_strings; ++j) {
    const std::uint64_t s = string_offset + j * record;
    const std::uint64_t key_off = r.get<std::uint64_t>(s);
    const std::uint64_t value_off = r.get<std::uint64_t>(s + 8);
    OffloadString str;
    str.key = r.c_string(key_off, s, fmt::format("entry {}: string {}: key", index, j));
    if (version == 1)
      str.value = r.c_string(value_off, s + 8, fmt::format("entry {}: string {}: value", index, j));
    else
      str.value = r.sized_string(value_off, r.get<std::uint64_t>(s + 16), s + 8,
                                 fmt::format("entry {}: string {}: value", index, j));
    e.strings.push_back(std::move(str));
  }
  return e;
}

}  // namespace

bool has_offload_binary_magic(Bytes data) {
  return data.size() >= kMagic.size() && std::equal(kMagic.begin(), kMagic.end(), data.begin());
}

bool is_llvm_bitcode(Bytes data) {
  return starts_with(data, "BC\xC0\xDE") || starts_with(data, "\xDE\xC0\x17\x0B");
}

ImageKind image_kind_from_extension(std::string_view ext, target::LlvmRelease release) {
  if (ext == "spv" && target::traits(release).spirv_image_kind) return ImageKind::Spirv;
  if (ext == "o") return ImageKind::Object;
  if (ext == "bc") return ImageKind::Bitcode;
  if (ext == "cubin") return ImageKind::Cubin;
  if (ext == "fatbin") return ImageKind::Fatbinary;
  if (ext == "s") return ImageKind::Ptx;
  return ImageKind::None;
}

std::string_view image_kind_extension(std::uint16_t kind, target::LlvmRelease release) {
  switch (static_cast<ImageKind>(kind)) {
    case ImageKind::Object: return "o";
    case ImageKind::Bitcode: return "bc";
    case ImageKind::Cubin: return "cubin";
    case ImageKind::Fatbinary: return "fatbin";
    case ImageKind::Ptx: return "s";
    case ImageKind::Spirv: return target::traits(release).spirv_image_kind ? "spv" : "";
    case ImageKind::None: break;
  }
  return "";
}

std::string_view image_kind_description(std::uint16_t kind) {
  switch (static_cast<ImageKind>(kind)) {
    case ImageKind::Object: return "elf";
    case ImageKind::Bitcode: return "llvm ir";
    case ImageKind::Cubin: return "cubin";
    case ImageKind::Fatbinary: return "fatbinary";
    case ImageKind::Ptx: return "ptx";
    case ImageKind::Spirv:  // llvm-objdump 19 and 22 do not know it
    case ImageKind::None: break;
  }
  return "<none>";
}

std::uint16_t offload_kind_number(std::string_view name, target::LlvmRelease release) {
  const target::ReleaseTraits& t = target::traits(release);
  if (name == "openmp") return static_cast<std::uint16_t>(OffloadKind::OpenMP);
  if (name == "cuda") return static_cast<std::uint16_t>(OffloadKind::Cuda);
  if (name == "hip") return t.hip_offload_kind;
  if (name == "sycl") return t.sycl_offload_kind;
  return static_cast<std::uint16_t>(OffloadKind::None);
}

std::string_view offload_kind_name(std::uint16_t kind) {
  switch (static_cast<OffloadKind>(kind)) {
    case OffloadKind::OpenMP: return "openmp";
    case OffloadKind::Cuda: return "cuda";
    case OffloadKind::None: return "none";
  }
  for (const target::ReleaseTraits& t : target::supported_releases()) {
    if (kind == t.hip_offload_kind) return "hip";
    if (kind == t.sycl_offload_kind) return "sycl";  // never 0: handled above
  }
  return "none";
}

std::string OffloadEntry::id() const {
  return fmt::format("{}-{}-{}", offload_kind_name(offload_kind), triple(), arch());
}

std::string_view OffloadEntry::get(std::string_view key) const {
  for (auto it = strings.rbegin(); it != strings.rend(); ++it)
    if (it->key == key) return it->value;
  return {};
}

OffloadBinary read_offload_binary(Bytes data, std::uint64_t offset, const std::string& file, std::uint64_t base) {
  const Where where{file, base + offset};
  const std::uint64_t rest = offset <= data.size() ? data.size() - offset : 0;
  if (rest < kOffloadHeaderSize)
    fail_at(where, "truncated offload binary header: 0x{:x} bytes left, the header needs 0x{:x}", rest,
            kOffloadHeaderSize);
  const Bytes tail = data.subspan(offset);
  if (!has_offload_binary_magic(tail)) fail_at(where, "bad offload binary magic (expected 10 ff 10 ad)");

  OffloadBinary b;
  b.offset = offset;
  b.version = load_le<std::uint32_t>(tail.data() + 4);
  if (b.version != 1 && b.version != 2)
    fail_at({file, base + offset + 4}, "unsupported offload binary version {} (1 and 2 are supported)", b.version);
  b.size = load_le<std::uint64_t>(tail.data() + 8);
  if (b.size > rest)
    fail_at({file, base + offset + 8}, "offload binary size 0x{:x} extends past the end of the data (0x{:x} bytes left)",
            b.size, rest);
  if (b.size < kOffloadHeaderSize)
    fail_at({file, base + offset + 8}, "offload binary size 0x{:x} is smaller than its header (0x{:x} bytes)", b.size,
            kOffloadHeaderSize);

  const BinaryReader r(tail.first(b.size), file, base + offset);
  const std::uint64_t entries_offset = r.get<std::uint64_t>(16);
  const std::uint64_t count = b.version == 1 ? 1 : r.get<std::uint64_t>(24);
  if (entries_offset < kOffloadHeaderSize && count != 0)
    fail_at(r.at(16), "entries at 0x{:x} overlap the header", entries_offset);
  if (entries_offset > b.size || count > (b.size - entries_offset) / kOffloadEntrySize)
    fail_at(r.at(16), "0x{:x} entries at 0x{:x} extend past the end of the binary (0x{:x} bytes)", count,
            entries_offset, b.size);

  b.entries.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    OffloadEntry e = read_entry(r, b.version, entries_offset + i * kOffloadEntrySize, i);
    e.image_offset += offset;
    b.entries.push_back(std::move(e));
  }
  return b;
}

std::vector<OffloadBinary> read_offload_binaries(Bytes data, const std::string& file, std::uint64_t base) {
  std::vector<OffloadBinary> out;
  for (std::uint64_t offset = 0; offset < data.size();) {
    out.push_back(read_offload_binary(data, offset, file, base));
    offset += out.back().size;  // at least the 32-byte header: always progresses
  }
  return out;
}

Llvm19Verdict llvm19_verdict(Bytes rest) {
  if (rest.size() < kOffloadHeaderSize + kOffloadEntrySize || !has_offload_binary_magic(rest))
    return Llvm19Verdict::ParseFailed;
  const std::uint32_t version = load_le<std::uint32_t>(rest.data() + 4);
  // LLVM 19 accepts version 1 only. Version 2 is let through on purpose: the
  // reader understands it, so binaries from newer LLVM stay usable.
  if (version != 1 && version != 2) return Llvm19Verdict::ParseFailed;
  const std::uint64_t size = load_le<std::uint64_t>(rest.data() + 8);
  if (size > rest.size() || size < kOffloadEntrySize || size < kOffloadHeaderSize) return Llvm19Verdict::UnexpectedEof;
  const std::uint64_t entry_offset = load_le<std::uint64_t>(rest.data() + 16);
  const std::uint64_t entry_size = load_le<std::uint64_t>(rest.data() + 24);
  if (version == 1) {
    if (entry_offset > size - kOffloadEntrySize || entry_size > size - kOffloadHeaderSize)
      return Llvm19Verdict::UnexpectedEof;
    const std::uint64_t string_offset = load_le<std::uint64_t>(rest.data() + entry_offset + 8);
    const std::uint64_t image_offset = load_le<std::uint64_t>(rest.data() + entry_offset + 24);
    if (image_offset > size || string_offset > size) return Llvm19Verdict::UnexpectedEof;
  }
  return Llvm19Verdict::Accepted;
}

Llvm19Verdict llvm23_verdict(Bytes rest) {
  if (rest.size() < kOffloadHeaderSize + kOffloadEntrySize || !has_offload_binary_magic(rest))
    return Llvm19Verdict::ParseFailed;
  const std::uint32_t version = load_le<std::uint32_t>(rest.data() + 4);
  if (version != 1 && version != 2) return Llvm19Verdict::ParseFailed;
  const std::uint64_t size = load_le<std::uint64_t>(rest.data() + 8);
  if (size > rest.size() || size < kOffloadEntrySize) return Llvm19Verdict::UnexpectedEof;
  const std::uint64_t entries_offset = load_le<std::uint64_t>(rest.data() + 16);
  const std::uint64_t count = version == 1 ? 1 : load_le<std::uint64_t>(rest.data() + 24);
  // LLVM multiplies without an overflow check (and then reads wild memory);
  // a count that large is past the end here.
  if (count > size / kOffloadEntrySize) return Llvm19Verdict::UnexpectedEof;
  const std::uint64_t entries_size = kOffloadEntrySize * count;
  if (entries_offset > size - entries_size || entries_size > size - kOffloadHeaderSize)
    return Llvm19Verdict::UnexpectedEof;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::byte* e = rest.data() + entries_offset + kOffloadEntrySize * i;
    const std::uint64_t string_offset = load_le<std::uint64_t>(e + 8);
    const std::uint64_t num_strings = load_le<std::uint64_t>(e + 16);
    const std::uint64_t image_offset = load_le<std::uint64_t>(e + 24);
    if (image_offset > size || string_offset > size ||
        num_strings > (size - string_offset) / kOffloadStringEntrySizeV2)
      return Llvm19Verdict::UnexpectedEof;
  }
  return Llvm19Verdict::Accepted;
}

Llvm19Verdict llvm_verdict(Bytes rest, target::LlvmRelease release) {
  return target::traits(release).offload_binary_version >= 2 ? llvm23_verdict(rest) : llvm19_verdict(rest);
}

std::string_view llvm19_verdict_text(Llvm19Verdict v) {
  switch (v) {
    case Llvm19Verdict::ParseFailed: return "Invalid data was encountered while parsing the file";
    case Llvm19Verdict::UnexpectedEof: return "The end of the file was unexpectedly encountered";
    case Llvm19Verdict::Accepted: break;
  }
  return "";
}

OffloadBinaryFrame frame_offload_binary_v1(const OffloadImageDesc& desc) {
  ElfStringTable strtab;
  for (const OffloadString& s : desc.strings) {
    strtab.add(s.key);
    strtab.add(s.value);
  }
  strtab.finalize();

  const std::uint64_t string_entries = kOffloadHeaderSize + kOffloadEntrySize;
  const std::uint64_t strtab_offset = string_entries + kOffloadStringEntrySizeV1 * desc.strings.size();
  const std::uint64_t image_offset = align_to(strtab_offset + strtab.size(), kOffloadAlignment);
  if (desc.image_size > UINT64_MAX - image_offset - kOffloadAlignment)
    fail({}, "image of 0x{:x} bytes is too large for an offload binary", desc.image_size);
  const std::uint64_t total = align_to(image_offset + desc.image_size, kOffloadAlignment);

  OffloadBinaryFrame f;
  f.image_size = desc.image_size;
  f.tail_padding = total - image_offset - desc.image_size;
  f.head.assign(image_offset, std::byte{0});
  std::byte* p = f.head.data();
  std::copy(kMagic.begin(), kMagic.end(), p);
  store_le<std::uint32_t>(p + 4, 1);
  store_le<std::uint64_t>(p + 8, total);
  store_le<std::uint64_t>(p + 16, kOffloadHeaderSize);
  store_le<std::uint64_t>(p + 24, kOffloadEntrySize);
  std::byte* e = p + kOffloadHeaderSize;
  store_le<std::uint16_t>(e, desc.image_kind);
  store_le<std::uint16_t>(e + 2, desc.offload_kind);
  store_le<std::uint32_t>(e + 4, desc.flags);
  store_le<std::uint64_t>(e + 8, string_entries);
  store_le<std::uint64_t>(e + 16, desc.strings.size());
  store_le<std::uint64_t>(e + 24, image_offset);
  store_le<std::uint64_t>(e + 32, desc.image_size);
  std::byte* s = p + string_entries;
  for (const OffloadString& str : desc.strings) {
    store_le<std::uint64_t>(s, strtab_offset + strtab.offset(str.key));
    store_le<std::uint64_t>(s + 8, strtab_offset + strtab.offset(str.value));
    s += kOffloadStringEntrySizeV1;
  }
  const std::string& table = strtab.data();
  std::transform(table.begin(), table.end(), p + strtab_offset, [](char c) { return static_cast<std::byte>(c); });
  return f;
}

OffloadBinaryFrame frame_offload_binary_v2(const std::vector<OffloadImageDesc>& descs) {
  ElfStringTable strtab;
  std::uint64_t records = 0, images = 0;
  for (const OffloadImageDesc& d : descs) {
    for (const OffloadString& s : d.strings) {
      strtab.add(s.key);
      strtab.add(s.value);
    }
    records += d.strings.size();
    if (d.image_size > UINT64_MAX / 2 - images)
      fail({}, "images of 0x{:x} bytes and more are too large for an offload binary", images);
    images += d.image_size;
  }
  strtab.finalize();

  const std::uint64_t entries_end = kOffloadHeaderSize + kOffloadEntrySize * descs.size();
  const std::uint64_t strtab_offset = entries_end + kOffloadStringEntrySizeV2 * records;
  const std::uint64_t image_offset = align_to(strtab_offset + strtab.size(), kOffloadAlignment);
  const std::uint64_t total = align_to(image_offset + images, kOffloadAlignment);

  OffloadBinaryFrame f;
  f.image_size = images;
  f.tail_padding = total - image_offset - images;
  f.head.assign(image_offset, std::byte{0});
  std::byte* p = f.head.data();
  std::copy(kMagic.begin(), kMagic.end(), p);
  store_le<std::uint32_t>(p + 4, 2);
  store_le<std::uint64_t>(p + 8, total);
  store_le<std::uint64_t>(p + 16, kOffloadHeaderSize);
  store_le<std::uint64_t>(p + 24, descs.size());
  std::uint64_t record = entries_end, image = image_offset;
  std::byte* s = p + entries_end;
  for (std::size_t i = 0; i < descs.size(); ++i) {
    const OffloadImageDesc& d = descs[i];
    std::byte* e = p + kOffloadHeaderSize + kOffloadEntrySize * i;
    store_le<std::uint16_t>(e, d.image_kind);
    store_le<std::uint16_t>(e + 2, d.offload_kind);
    store_le<std::uint32_t>(e + 4, d.flags);
    store_le<std::uint64_t>(e + 8, record);
    store_le<std::uint64_t>(e + 16, d.strings.size());
    store_le<std::uint64_t>(e + 24, image);
    store_le<std::uint64_t>(e + 32, d.image_size);
    for (const OffloadString& str : d.strings) {
      store_le<std::uint64_t>(s, strtab_offset + strtab.offset(str.key));
      store_le<std::uint64_t>(s + 8, strtab_offset + strtab.offset(str.value));
      store_le<std::uint64_t>(s + 16, str.value.size());
      s += kOffloadStringEntrySizeV2;
    }
    record += kOffloadStringEntrySizeV2 * d.strings.size();
    image += d.image_size;
  }
  const std::string& table = strtab.data();
  std::transform(table.begin(), table.end(), p + strtab_offset, [](char c) { return static_cast<std::byte>(c); });
  return f;
}

std::vector<std::byte> write_offload_binary_v1(OffloadImageDesc desc, Bytes image) {
  desc.image_size = image.size();
  OffloadBinaryFrame f = frame_offload_binary_v1(desc);
  std::vector<std::byte> out = std::move(f.head);
  out.insert(out.end(), image.begin(), image.end());
  out.resize(out.size() + f.tail_padding, std::byte{0});
  return out;
}

}  // namespace ot::formats
