#include "archive/ar_reader.h"

#include <archive.h>
#include <archive_entry.h>

#include <functional>
#include <memory>

namespace ot::archive {
namespace {

struct ReadDeleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
using ReadHandle = std::unique_ptr<struct archive, ReadDeleter>;

bool starts_with(Bytes data, std::string_view magic) {
  return data.size() >= magic.size() && as_chars(data.first(magic.size())) == magic;
}

bool is_index_member(std::string_view name) {
  return name == "/" || name == "//" || name == "/SYM64/" || name == "__.SYMDEF" || name == "__.SYMDEF SORTED" ||
         name == "__.SYMDEF_64" || name == "__.SYMDEF_64 SORTED";
}

[[noreturn]] void fail_archive(struct archive* a, const std::string& file) {
  const char* why = archive_error_string(a);
  fail(file, "malformed archive: {}", why ? why : "unknown libarchive error");
}

}  // namespace

bool is_archive(Bytes data) { return starts_with(data, "!<arch>\n"); }
bool is_thin_archive(Bytes data) { return starts_with(data, "!<thin>\n"); }

std::vector<Member> read_members(Bytes data, const std::string& file) {
  if (is_thin_archive(data))
    fail(file, "thin archives are not supported (their members live in other files)");
  if (!is_archive(data)) fail_at({file, 0}, "not an archive (no \"!<arch>\\n\" magic)");

  ReadHandle a(archive_read_new());
  if (!a) throw std::bad_alloc();
  archive_read_support_format_ar(a.get());
  // archive_read_open_memory takes a non-const pointer but only reads.
  if (archive_read_open_memory(a.get(), const_cast<std::byte*>(data.data()), data.size()) != ARCHIVE_OK)
    fail_archive(a.get(), file);

  const auto base = reinterpret_cast<std::uintptr_t>(data.data());
  std::vector<Member> out;
  for (;;) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) fail_archive(a.get(), file);
    const char* path = archive_entry_pathname(e);
    Member m;
    m.name = path ? path : "";
    const la_int64_t size = archive_entry_size(e);
    // Reading from memory, libarchive hands out the member as one block that
    // points into `data`; anything else would mean a copy we do not keep.
    const void* block = nullptr;
    std::size_t block_size = 0;
    la_int64_t block_offset = 0;
    std::uint64_t seen = 0;
    while ((r = archive_read_data_block(a.get(), &block, &block_size, &block_offset)) == ARCHIVE_OK) {
      const auto p = reinterpret_cast<std::uintptr_t>(block);
      if (seen != 0 || block_offset != 0 || p < base || p - base > data.size() || block_size > data.size() - (p - base))
        fail(file, "archive member '{}' is not stored contiguously", m.name);
      m.offset = p - base;
      m.data = data.subspan(m.offset, block_size);
      seen += block_size;
    }
    if (r != ARCHIVE_EOF) fail_archive(a.get(), file);
    if (size < 0 || seen != static_cast<std::uint64_t>(size))
      fail(file, "archive member '{}' is truncated (0x{:x} of 0x{:x} bytes)", m.name, seen, size);
    if (is_index_member(m.name)) continue;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace ot::archive
