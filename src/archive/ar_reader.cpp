#include "archive/ar_reader.h"

#include <algorithm>
#include <optional>

namespace ot::archive {
namespace {

constexpr std::string_view kMagic = "!<arch>\n", kThinMagic = "!<thin>\n";
constexpr std::uint64_t kHeaderSize = 60;

bool starts_with(Bytes data, std::string_view magic) {
  return data.size() >= magic.size() && as_chars(data.first(magic.size())) == magic;
}

std::string_view rtrim(std::string_view s, char c) {
  while (!s.empty() && s.back() == c) s.remove_suffix(1);
  return s;
}

// A decimal header field padded with spaces (LLVM accepts nothing else).
std::optional<std::uint64_t> decimal(std::string_view field) {
  field = rtrim(field, ' ');
  if (field.empty() || field.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : field) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

bool is_index(std::string_view raw_name) {
  const std::string_view n = rtrim(raw_name, ' ');
  return n == "/" || n == "/SYM64/" || n == "//" || n == "__.SYMDEF" || n == "__.SYMDEF SORTED" ||
         n == "__.SYMDEF_64" || n == "__.SYMDEF_64 SORTED";
}

}  // namespace

bool is_archive(Bytes data) { return starts_with(data, kMagic); }
bool is_thin_archive(Bytes data) { return starts_with(data, kThinMagic); }

MemberReader::MemberReader(Bytes archive, std::string file) : data_(archive), file_(std::move(file)) {
  if (is_thin_archive(data_)) fail(file_, "thin archives are not supported (their members live in other files)");
  if (!is_archive(data_)) fail_at({file_, 0}, "not an archive (no \"!<arch>\\n\" magic)");
  off_ = kMagic.size();
}

std::optional<Member> MemberReader::next() {
  const Bytes data = data_;
  const std::string& file = file_;
  while (off_ < data.size()) {
    const std::uint64_t off = off_;
    // A lone '\n' pads the last member to an even size.
    if (data.size() - off == 1 && static_cast<char>(data[off]) == '\n') break;
    if (data.size() - off < kHeaderSize)
      fail_at({file, off}, "truncated archive member header (0x{:x} bytes left, a header needs 0x{:x})",
              data.size() - off, kHeaderSize);
    const std::string_view h = as_chars(data.subspan(off, kHeaderSize));
    if (h.substr(58, 2) != "`\n") fail_at({file, off}, "archive member header does not end in \"`\\n\"");
    const std::string_view raw_name = h.substr(0, 16);
    const auto size = decimal(h.substr(48, 10));
    if (!size) fail_at({file, off + 48}, "archive member size field '{}' is not a decimal number", rtrim(h.substr(48, 10), ' '));
    const std::uint64_t data_off = off + kHeaderSize;
    if (*size > data.size() - data_off)
      fail_at({file, off}, "archive member of 0x{:x} bytes extends past the end of the archive (0x{:x} bytes left)",
              *size, data.size() - data_off);
    Member m;
    m.header_offset = off;
    m.offset = data_off;
    m.data = data.subspan(data_off, *size);
    off_ = data_off + *size + (*size % 2);

    if (rtrim(raw_name, ' ') == "//") {
      names_ = as_chars(m.data);
      continue;
    }
    if (is_index(raw_name)) continue;
    if (raw_name.starts_with("#1/")) {  // BSD: the name opens the data
      const auto len = decimal(raw_name.substr(3));
      if (!len || *len > m.data.size())
        fail_at({file, m.header_offset}, "archive member name length '{}' is bad or exceeds the member", rtrim(raw_name.substr(3), ' '));
      m.name = std::string(rtrim(as_chars(m.data.first(*len)), '\0'));
      m.data = m.data.subspan(*len);
      m.offset += *len;
    } else if (raw_name.size() > 1 && raw_name[0] == '/' && raw_name[1] >= '0' && raw_name[1] <= '9') {
      const auto at = decimal(raw_name.substr(1));
      if (!at || *at >= names_.size())
        fail_at({file, m.header_offset}, "archive member long-name offset '{}' is outside the name table (0x{:x} bytes)",
                rtrim(raw_name.substr(1), ' '), names_.size());
      std::string_view name = names_.substr(*at);
      const std::size_t end = name.find('\n');
      if (end == std::string_view::npos || end == 0 || name[end - 1] != '/')
        fail_at({file, m.header_offset}, "archive member long name at 0x{:x} of the name table is not terminated by \"/\\n\"", *at);
      m.name = std::string(name.substr(0, end - 1));
    } else {
      std::string_view name = rtrim(raw_name, ' ');
      if (name.ends_with('/')) name.remove_suffix(1);
      m.name = std::string(name);
    }
    return m;
  }
  off_ = data.size();
  return std::nullopt;
}

std::vector<Member> read_members(Bytes data, const std::string& file) {
  MemberReader reader(data, file);
  std::vector<Member> out;
  while (auto m = reader.next()) out.push_back(std::move(*m));
  return out;
}

}  // namespace ot::archive
