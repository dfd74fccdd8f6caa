#include "compat/entries.h"

#include <fmt/format.h>

#include "archive/ar_reader.h"
#include "compat/code_object.h"
#include "compress/codec.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_sequence.h"
#include "formats/bundle_text.h"
#include "formats/compressed_bundle.h"
#include "formats/offload_binary.h"
#include "object/object_file.h"
#include "support/mapped_file.h"

namespace ot::compat {
namespace {

constexpr std::string_view kSectionPrefix = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view kDup = "duplicate bundle entry id '";  // formats/bundle_binary.cpp's message

bool duplicate_id(const Error& e) { return e.message().starts_with(kDup); }

std::string code_object_of(Bytes payload) {
  auto t = amdgpu_code_object(payload);
  if (!t) return "";
  return t->target_id.empty() ? fmt::format("unknown processor (EF_AMDGPU_MACH 0x{:x})", t->mach) : t->target_id;
}


class Walker {
 public:
  explicit Walker(std::vector<FoundContainer>& out) : out_(out) {}

  void file(Bytes data, const std::string& name, bool in_archive) {
    if (archive::is_archive(data) || archive::is_thin_archive(data)) {
      if (in_archive) fail_at({name, 0}, "nested archive: archives inside archive members are not searched");
      for (const archive::Member& m : archive::read_members(data, name))
        file(m.data, fmt::format("{}({})", name, m.name), true);
      return;
    }
    object::ObjectKind kind = object::identify_object(data);
    if (kind == object::ObjectKind::Elf || kind == object::ObjectKind::Coff) {
      object_file(data, name);
      return;
    }
    if (formats::has_offload_binary_magic(data)) {
      offload_binaries(data, 0, name, name);
      return;
    }
    if (blob(data, 0, name, name)) return;
    text(data, name, name, false);
  }

 private:
  // Consecutive bundles and CCOBs; false when `data` does not start with one.
  bool blob(Bytes data, std::uint64_t base, const std::string& file, const std::string& where) {
    std::vector<formats::BundleSpan> spans;
    try {
      spans = rebase_errors(base, [&] { return formats::split_bundles(data, file); });
    } catch (const Error& e) {
      // The splitter reads every header, and the binary bundle reader refuses
      // one that stores an ID twice. When that is the first bundle, report it
      // (binary() records the duplicate) and nothing after it.
      if (!duplicate_id(e) || !formats::has_binary_bundle_magic(data)) throw;
      std::size_t before = out_.size();
      binary(data, base, file, fmt::format("{}, bundle at 0x{:x}", where, base), false);
      if (out_.size() == before || out_.back().refused_duplicates.empty()) throw;
      return true;
    }
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const formats::BundleSpan& s = spans[i];
      Bytes bytes = data.subspan(s.offset, s.size);
      std::uint64_t at = base + s.offset;
      std::string name = spans.size() == 1
                             ? fmt::format("{}, {}bundle at 0x{:x}", where, s.compressed ? "compressed " : "", at)
                             : fmt::format("{}, {}bundle {} at 0x{:x}", where, s.compressed ? "compressed " : "", i, at);
      if (s.compressed)
        ccob(bytes, at, file, name);
      else
        binary(bytes, at, file, name, false);
    }
    return !spans.empty();
  }

  void binary(Bytes data, std::uint64_t base, const std::string& file, const std::string& name, bool compressed) {
    FoundContainer c{name, {}, {}};
    std::vector<formats::BundleEntry> entries;
    try {
      entries = rebase_errors(base, [&] { return formats::read_binary_bundle(data, file); });
    } catch (const Error& e) {
      // The reader refuses a bundle storing one ID twice; that is a composition
      // fault `verify` reports, not a reason to stop reading the file.
      if (!duplicate_id(e)) throw;
      std::string id = e.message().substr(kDup.size());
      if (!id.empty()) id.pop_back();
      c.refused_duplicates.push_back(id);
      out_.push_back(std::move(c));
      return;
    }
    for (std::size_t i = 0; i < entries.size(); ++i)
      c.entries.push_back({entries[i].id, name, i, (compressed ? 0 : base) + entries[i].offset, entries[i].size, compressed,
                           code_object_of(data.subspan(entries[i].offset, entries[i].size))});
    out_.push_back(std::move(c));
  }

  void ccob(Bytes data, std::uint64_t base, const std::string& file, const std::string& name) {
    formats::CcobHeader h = rebase_errors(base, [&] { return formats::read_ccob_header(data, file); });
    Bytes payload = rebase_errors(base, [&] { return formats::ccob_payload(data, h); });
    std::string inner = fmt::format("{} (decompressed)", file);
    // A large bundle goes to a scratch file (memory stays flat): reading its
    // table and the code object headers touches a few of its pages.
    std::vector<std::byte> in_memory;
    std::shared_ptr<InputFile> spilled;
    try {
      if (h.uncompressed_size <= compress::kInMemoryLimit)
        in_memory = compress::decompress(h.method, payload, h.uncompressed_size);
      else
        spilled = compress::decompress_to_file(h.method, payload, h.uncompressed_size, "", inner);
    } catch (const Error& e) {
      fail_at({file, base}, "cannot decompress the compressed bundle: {}", e.message());
    }
    Bytes plain = spilled ? spilled->bytes() : Bytes(in_memory);
    if (formats::has_binary_bundle_magic(plain)) {
      binary(plain, 0, inner, name, true);
      return;
    }
    if (!text(plain, inner, name, true))
      fail_at({file, base}, "the compressed bundle holds neither a binary nor a text bundle");
  }

  bool text(Bytes data, const std::string& file, const std::string& name, bool compressed) {
    std::string_view chars = as_chars(data);
    for (std::string_view comment : {"//", "#", ";"}) {
      if (chars.find(formats::text_start_marker(comment)) == std::string_view::npos) continue;
      auto entries = formats::read_text_bundle(data, comment, file);
      FoundContainer c{fmt::format("{}, text bundle ('{}' comments)", name, comment), {}, {}};
      for (std::size_t i = 0; i < entries.size(); ++i)
        c.entries.push_back({entries[i].id, c.name, i, entries[i].offset, entries[i].size, compressed,
                             code_object_of(data.subspan(entries[i].offset, entries[i].size))});
      out_.push_back(std::move(c));
      return true;
    }
    return false;
  }

  void object_file(Bytes data, const std::string& name) {
    std::vector<object::SectionInfo> sections = object::read_sections(data, name);
    FoundContainer bundle_sections{fmt::format("{}, {} sections", name, kSectionPrefix), {}, {}};
    for (const object::SectionInfo& s : sections) {
      if (!s.has_data) continue;
      Bytes bytes = data.subspan(s.offset, s.size);  // read_sections checked the range
      if (s.name.starts_with(kSectionPrefix)) {
        bundle_sections.entries.push_back({s.name.substr(kSectionPrefix.size()), bundle_sections.name,
                                           bundle_sections.entries.size(), s.offset, s.size, false, code_object_of(bytes)});
      } else if (s.name.starts_with(".hip_fat")) {
        std::string where = fmt::format("{}, section {}", name, s.name);
        if (!bytes.empty() && !blob(bytes, s.offset, name, where))
          fail_at({name, s.offset}, "section {} holds no offload bundle", s.name);
      } else if (s.name == ".llvm.offloading") {
        offload_binaries(bytes, s.offset, name, fmt::format("{}, section {}", name, s.name));
      }
    }
    if (!bundle_sections.entries.empty()) out_.push_back(std::move(bundle_sections));
  }

  void offload_binaries(Bytes data, std::uint64_t base, const std::string& file, const std::string& where) {
    for (const formats::OffloadBinary& b : formats::read_offload_binaries(data, file, base)) {
      FoundContainer c{fmt::format("{}, offload binary at 0x{:x}", where, base + b.offset), {}, {}};
      for (const formats::OffloadEntry& e : b.entries) {
        std::string id = fmt::format("{}-{}-{}", formats::offload_kind_name(e.offload_kind), e.triple(), e.arch());
        c.entries.push_back({id, c.name, c.entries.size(), base + e.image_offset, e.image_size, false,
                             code_object_of(data.subspan(e.image_offset, e.image_size))});
      }
      out_.push_back(std::move(c));
    }
  }

  std::vector<FoundContainer>& out_;
};

}  // namespace

std::string FoundEntry::location() const { return fmt::format("{}, entry {}", container, index); }

std::vector<FoundContainer> find_containers(Bytes data, const std::string& file) {
  std::vector<FoundContainer> out;
  Walker(out).file(data, file, false);
  return out;
}

}  // namespace ot::compat
