#include "packager/find_binaries.h"

#include <algorithm>

#include "archive/ar_reader.h"
#include "formats/bitcode_embedded.h"
#include "object/object_file.h"
#include "support/mapped_file.h"

namespace ot::packager {
namespace {

constexpr std::uint32_t SHT_LLVM_OFFLOADING = 0x6fff4c0b;
constexpr int kMaxArchiveNesting = 16;

// identify_magic's ELF types that extractOffloadBinaries opens: relocatable,
// executable, shared object (core files and unknown types are skipped).
bool elf_with_offloading_type(Bytes data) {
  if (data.size() < 18 || as_chars(data.first(4)) != "\x7f" "ELF") return false;
  const bool msb = static_cast<std::uint8_t>(data[5]) == 2;
  const auto high = static_cast<std::uint8_t>(data[msb ? 16 : 17]);
  const auto low = static_cast<std::uint8_t>(data[msb ? 17 : 16]);
  return high == 0 && low >= 1 && low <= 3;
}

class Walker {
 public:
  Walker(std::shared_ptr<const InputFile> in, Diagnostics d, target::LlvmRelease release, std::vector<FoundImage>& out)
      : in_(std::move(in)), diag_(d), release_(release), out_(out) {}

  // `data` is a whole named item (the input or an archive member) starting at
  // `file_off` of the input; errors name it and count offsets from its start.
  void walk(Bytes data, std::uint64_t file_off, const std::string& name, const std::string& origin,
            const std::string& prefix, int depth) {
    if (formats::has_offload_binary_magic(data)) {
      binaries(data, 0, file_off, name, origin, prefix + "raw", in_);
    } else if (formats::is_llvm_bitcode(data)) {
      const auto objects = formats::read_bitcode_embedded_objects(data, name);
      for (std::size_t i = 0; i < objects.size(); ++i) {
        const std::string global = fmt::format("bitcode global {} in .llvm.offloading", i);
        std::shared_ptr<const InputFile> decoded = InputFile::from_memory(name + " (" + global + ")", objects[i]);
        binaries(decoded->bytes(), 0, 0, decoded->path(), origin, prefix + global, decoded);
      }
    } else if (elf_with_offloading_type(data)) {
      for (const object::SectionInfo& s : object::read_sections(data, name))
        if (s.type == SHT_LLVM_OFFLOADING && s.has_data)
          binaries(data.subspan(s.offset, s.size), s.offset, file_off + s.offset, name, origin,
                   prefix + "section " + s.name, in_);
    } else if (object::identify_object(data) == object::ObjectKind::Coff) {
      for (const object::SectionInfo& s : object::read_sections(data, name))
        if (s.name.starts_with(".llvm.offloading") && s.has_data)
          binaries(data.subspan(s.offset, s.size), s.offset, file_off + s.offset, name, origin,
                   prefix + "section " + s.name, in_);
    } else if (archive::is_archive(data) || archive::is_thin_archive(data)) {
      if (depth >= kMaxArchiveNesting) fail(name, "archives nested more than {} deep", kMaxArchiveNesting);
      for (const archive::Member& m : archive::read_members(data, name)) {
        const std::string member = fmt::format("{}({})", name, m.name);
        walk(m.data, file_off + m.offset, member, m.name, member + ", ", depth + 1);
      }
    }
  }

  // The binaries filling `section` (at `named_off` inside the named item, at
  // `file_off` inside `source`), one after another as LLVM 19 reads them.
  void binaries(Bytes section, std::uint64_t named_off, std::uint64_t file_off, const std::string& name,
                const std::string& origin, const std::string& container,
                const std::shared_ptr<const InputFile>& source) {
    for (std::uint64_t off = 0; off < section.size();) {
      if (diag_ == Diagnostics::Llvm19) {
        const auto verdict = formats::llvm_verdict(section.subspan(off), release_);
        if (verdict != formats::Llvm19Verdict::Accepted)
          throw LlvmError(std::string(formats::llvm19_verdict_text(verdict)));
      }
      const formats::OffloadBinary b = formats::read_offload_binary(section, off, name, named_off);
      for (std::size_t i = 0; i < b.entries.size(); ++i) {
        FoundImage f;
        f.origin = origin;
        f.container = container;
        f.source = source;
        f.version = b.version;
        f.binary_offset = file_off + off;
        f.binary_size = b.size;
        f.entry_index = i;
        f.entry = b.entries[i];
        f.entry.image_offset += file_off;
        out_.push_back(std::move(f));
      }
      off += b.size;
    }
  }

 private:
  std::shared_ptr<const InputFile> in_;
  Diagnostics diag_;
  target::LlvmRelease release_;
  std::vector<FoundImage>& out_;
};

}  // namespace

std::vector<FoundImage> find_offload_images(const std::shared_ptr<const InputFile>& in, Diagnostics diagnostics,
                                            target::LlvmRelease release) {
  std::vector<FoundImage> out;
  Walker(in, diagnostics, release, out)
      .walk(in->bytes(), 0, in->path(), in->path() == "-" ? "<stdin>" : in->path(), "", 0);
  return out;
}

std::vector<FoundImage> find_nested_images(const FoundImage& outer, Diagnostics diagnostics,
                                           target::LlvmRelease release) {
  std::vector<FoundImage> out;
  const std::uint64_t at = outer.entry.image_offset;
  const Bytes image = outer.source->bytes().subspan(at, outer.entry.image_size);
  Walker(outer.source, diagnostics, release, out)
      .binaries(image, at, at, outer.source->path(), outer.origin,
                fmt::format("{}, entry {} nested", outer.container, outer.entry_index), outer.source);
  return out;
}

}  // namespace ot::packager
