#include "archive/ar_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "support/error.h"

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

// LLVM's raw_ostream::write_escaped: '\\', '\t', '\n' and '"' escaped, other
// unprintable bytes as three octal digits.
std::string llvm_escaped(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\{:03o}", c);
    }
  }
  return out;
}

// LLVM 19's archive reader (object::Archive, as clang-offload-bundler reports
// it) for the same defects; tests/cli/bundler_archive_errors_test.py compares.
// LLVM 22's texts are the same but for a space 19 lacks ("offset 0not terminated").
namespace llvm19 {
constexpr std::string_view kNotArchive = "file too small to be an archive";
constexpr std::string_view kInvalidData = "Invalid data was encountered while parsing the file";
std::string malformed(std::string_view what) { return fmt::format("truncated or malformed archive ({})", what); }
}  // namespace llvm19

bool is_index(std::string_view raw_name) {
  const std::string_view n = rtrim(raw_name, ' ');
  return n == "/" || n == "/SYM64/" || n == "//" || n == "__.SYMDEF" || n == "__.SYMDEF SORTED" ||
         n == "__.SYMDEF_64" || n == "__.SYMDEF_64 SORTED";
}

// The long name at `at` of a GNU name table ("//"), which ends in "/\n";
// nullopt when it does not.
std::optional<std::string_view> long_name_at(std::string_view names, std::uint64_t at) {
  const std::string_view name = names.substr(at);
  const std::size_t end = name.find('\n');
  if (end == std::string_view::npos || end == 0 || name[end - 1] != '/') return std::nullopt;
  return name.substr(0, end - 1);
}

// How LLVM 19 points at a member whose header it rejects: "for <name>" where
// its reader can still make out the member's name, else "at offset <off>".
std::string llvm_member_label(std::string_view raw_name, std::string_view names, Bytes data, std::uint64_t off) {
  const std::string at_offset = fmt::format("at offset {}", off);
  const std::string_view trimmed = rtrim(raw_name, ' ');
  if (trimmed == "/" || trimmed == "//") return fmt::format("for {}", trimmed);
  if (raw_name.starts_with("#1/")) {  // BSD: the name opens the member's data
    const auto len = decimal(raw_name.substr(3));
    const std::uint64_t start = off + kHeaderSize;
    if (!len || start > data.size() || *len > data.size() - start) return at_offset;
    return fmt::format("for {}", as_chars(data.subspan(start, *len)));
  }
  if (raw_name[0] == '/') {  // a GNU long name
    const auto at = decimal(raw_name.substr(1));
    if (!at || *at >= names.size()) return at_offset;
    const auto name = long_name_at(names, *at);
    return name ? fmt::format("for {}", *name) : at_offset;
  }
  const std::size_t slash = trimmed.find('/');
  return fmt::format("for {}", slash == std::string_view::npos ? trimmed : trimmed.substr(0, slash));
}

}  // namespace

bool is_archive(Bytes data) { return starts_with(data, kMagic); }
bool is_thin_archive(Bytes data) { return starts_with(data, kThinMagic); }

MemberReader::MemberReader(Bytes archive, std::string file, bool with_indexes, target::LlvmRelease llvm)
    : data_(archive), file_(std::move(file)), with_indexes_(with_indexes), llvm_(llvm) {
  if (is_thin_archive(data_)) fail(file_, "thin archives are not supported (their members live in other files)");
  if (!is_archive(data_))
    throw Error({file_, 0}, "not an archive (no \"!<arch>\\n\" magic)", std::string(llvm19::kNotArchive));
  off_ = kMagic.size();
}

std::optional<Member> MemberReader::next() {
  const Bytes data = data_;
  const std::string& file = file_;
  // LLVM's text for a defect, where LLVM reports it (see returned_one_).
  const auto llvm = [this](std::string text) { return returned_one_ ? std::string() : text; };
  while (off_ < data.size()) {
    const std::uint64_t off = off_;
    // A lone '\n' pads the last member to an even size.
    if (data.size() - off == 1 && static_cast<char>(data[off]) == '\n') break;
    if (data.size() - off < kHeaderSize)
      throw Error({file, off},
                  fmt::format("truncated archive member header (0x{:x} bytes left, a header needs 0x{:x})",
                              data.size() - off, kHeaderSize),
                  llvm(llvm19::malformed(fmt::format(
                      "remaining size of archive too small for next archive member header at offset {}", off))));
    const std::string_view h = as_chars(data.subspan(off, kHeaderSize));
    const std::string_view raw_name = h.substr(0, 16);
    if (h.substr(58, 2) != "`\n")
      throw Error({file, off}, "archive member header does not end in \"`\\n\"",
                  llvm(llvm19::malformed(fmt::format(
                      "terminator characters in archive member \"{}\" not the correct \"`\\n\" values for the "
                      "archive member header {}",
                      llvm_escaped(h.substr(58, 2)), llvm_member_label(raw_name, names_, data, off)))));
    const auto size = decimal(h.substr(48, 10));
    if (!size)
      throw Error({file, off + 48},
                  fmt::format("archive member size field '{}' is not a decimal number", rtrim(h.substr(48, 10), ' ')),
                  llvm(llvm19::malformed(fmt::format("characters in size field in archive member header are not all "
                                                "decimal numbers: '{}' for the archive member header at offset {}",
                                                rtrim(h.substr(48, 10), ' '), off))));
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
      if (!with_indexes_) continue;
      m.kind = Member::Kind::LongNames;
      m.name = "//";
      return m;
    }
    if (is_index(raw_name)) {
      if (!with_indexes_) continue;
      m.name = std::string(rtrim(raw_name, ' '));
      m.kind = m.name == "/" ? Member::Kind::SymbolTable
               : m.name == "/SYM64/" ? Member::Kind::SymbolTable64
                                     : Member::Kind::BsdSymbolTable;
      return m;
    }
    if (raw_name.starts_with("#1/")) {  // BSD: the name opens the data
      const auto len = decimal(raw_name.substr(3));
      if (!len || *len > m.data.size()) {
        // LLVM reads the length up to the first space.
        const std::string_view digits = raw_name.substr(3, raw_name.substr(3).find(' '));
        throw Error({file, m.header_offset},
                    fmt::format("archive member name length '{}' is bad or exceeds the member", rtrim(raw_name.substr(3), ' ')),
                    llvm(llvm19::malformed(
                        !len ? fmt::format("long name length characters after the #1/ are not all decimal numbers: "
                                           "'{}' for archive member header at offset {}",
                                           digits, off)
                             : fmt::format("long name length: {} extends past the end of the member or archive for "
                                           "archive member header at offset {}",
                                           *len, off))));
      }
      m.name = std::string(rtrim(as_chars(m.data.first(*len)), '\0'));
      m.data = m.data.subspan(*len);
      m.offset += *len;
    } else if (raw_name.size() > 1 && raw_name[0] == '/' && raw_name[1] >= '0' && raw_name[1] <= '9') {
      const auto at = decimal(raw_name.substr(1));
      if (!at || *at >= names_.size())
        throw Error({file, m.header_offset},
                    fmt::format("archive member long-name offset '{}' is outside the name table (0x{:x} bytes)",
                                rtrim(raw_name.substr(1), ' '), names_.size()),
                    llvm(names_.empty() || !at
                             ? std::string(llvm19::kInvalidData)
                             : llvm19::malformed(fmt::format(
                                   "long name offset {} past the end of the string table for archive member header "
                                   "at offset {}",
                                   *at, off))));
      const auto name = long_name_at(names_, *at);
      if (!name)
        throw Error({file, m.header_offset},
                    fmt::format("archive member long name at 0x{:x} of the name table is not terminated by \"/\\n\"", *at),
                    // [sic]: LLVM 19 prints no space before "not".
                    llvm(llvm19::malformed(fmt::format("string table at long name offset {}{}not terminated", *at,
                                                        llvm_ == target::LlvmRelease::Llvm19 ? "" : " "))));
      m.name = std::string(*name);
    } else if (raw_name[0] == '/' && raw_name.substr(1, raw_name.find(' ') - 1) != "") {
      // "/" and "//" are indexes (above); "/<digits>" a long name; "/ 1" is
      // "/" to LLVM. Anything else LLVM refuses.
      throw Error({file, m.header_offset},
                  fmt::format("archive member name '{}' is neither a symbol table, the name table nor a long-name "
                              "reference (\"/<offset>\")",
                              rtrim(raw_name, ' ')),
                  llvm(std::string(llvm19::kInvalidData)));
    } else {
      std::string_view name = rtrim(raw_name, ' ');
      if (name.ends_with('/')) name.remove_suffix(1);
      m.name = std::string(name);
    }
    returned_one_ = true;
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
