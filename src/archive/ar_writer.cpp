#include "archive/ar_writer.h"

#include <map>
#include <memory>
#include <vector>

#include "archive/member_symbols.h"
#include "support/mapped_file.h"
#include "support/output_file.h"

namespace ot::archive {
namespace {

constexpr std::string_view kMagic = "!<arch>\n";
constexpr std::uint64_t kHeaderSize = 60;
constexpr std::uint64_t kMaxMemberSize = 9999999999;  // ten decimal digits
constexpr std::uint64_t kBatchBytes = 1u << 20;
constexpr std::uint64_t kKernelCopyBytes = 1u << 20;

// name(16) mtime(12) uid(6) gid(6) mode(8) size(10) "`\n"
std::string member_header(std::string_view name_field, std::string_view mode, std::uint64_t size) {
  return fmt::format("{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", name_field, 0, 0, 0, mode, size);
}

bool needs_long_name(std::string_view name) { return name.size() >= 16 || name.find('/') != std::string_view::npos; }

void put_be(std::string& out, std::uint64_t v, unsigned bytes) {
  for (unsigned i = bytes; i-- > 0;) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

struct Layout {
  std::string header;
  std::uint64_t size = 0;
  std::uint64_t padding = 0;
  std::vector<std::string> symbols;
  std::uint64_t total() const { return header.size() + size + padding; }
};

}  // namespace

std::uint64_t write_gnu_archive(OutputFile& out, std::span<const NewMember> members, const WriteOptions& options) {
  // Member headers and the long-name table (a repeated long name is stored once).
  std::string names;
  std::map<std::string, std::uint64_t, std::less<>> name_offsets;
  std::vector<Layout> layout(members.size());
  std::string symbol_names;
  std::uint64_t num_symbols = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const NewMember& m = members[i];
    Layout& l = layout[i];
    l.size = m.data.size();
    if (l.size > kMaxMemberSize) fail({}, "archive member {} is too large (0x{:x} bytes)", m.name, l.size);
    l.padding = l.size % 2;
    std::string field;
    if (needs_long_name(m.name)) {
      auto [it, inserted] = name_offsets.try_emplace(m.name, names.size());
      if (inserted) names.append(m.name).append("/\n");
      field = fmt::format("/{}", it->second);
    } else {
      field = fmt::format("{}/", m.name);
    }
    l.header = member_header(field, "644", l.size);
    if (options.symbol_table) {
      l.symbols = m.symbols ? *m.symbols : archive_symbols(m.data, m.name);
      for (const std::string& s : l.symbols) symbol_names.append(s).push_back('\0');
      num_symbols += l.symbols.size();
    }
  }

  std::string name_table;
  if (!names.empty()) {
    const std::uint64_t pad = names.size() % 2;
    name_table = fmt::format("{:<48}{:<10}`\n{}", "//", names.size() + pad, names);
    if (pad) name_table.push_back('\n');
  }

  // The symbol table: count, one member offset per symbol, the NUL-terminated
  // names, NUL padding to an even size. Offsets are those of member headers.
  std::string symtab;
  if (options.symbol_table && num_symbols > 0) {
    std::uint64_t last_header = 0, end = 0;
    for (const Layout& l : layout) {
      last_header = end;
      end += l.total();
    }
    auto table_size = [&](unsigned word) {
      std::uint64_t s = word + num_symbols * word + symbol_names.size();
      return s + s % 2;
    };
    unsigned word = 4;
    std::uint64_t headers = kMagic.size() + kHeaderSize + table_size(word) + name_table.size();
    if (headers + last_header >= options.sym64_threshold) {
      word = 8;
      headers = kMagic.size() + kHeaderSize + table_size(word) + name_table.size();
    }
    const std::uint64_t size = table_size(word);
    symtab = member_header(word == 8 ? "/SYM64/" : "/", "0", size);
    put_be(symtab, num_symbols, word);
    std::uint64_t pos = headers;
    for (const Layout& l : layout) {
      for (std::size_t k = 0; k < l.symbols.size(); ++k) put_be(symtab, pos, word);
      pos += l.total();
    }
    symtab += symbol_names;
    if (symbol_names.size() % 2 != 0) symtab.push_back('\0');
  }

  // Headers and payloads go to the kernel together (writev) in batches of
  // about kBatchBytes, not one by one through the output's buffer. Payloads of
  // a source file from kKernelCopyBytes up are copied by the kernel instead
  // (copy_file_range).
  const std::uint64_t start = out.written();
  std::vector<Bytes> pieces{as_bytes(kMagic), as_bytes(symtab), as_bytes(name_table)};
  std::uint64_t batch = 0;
  // options.read_sources: the batch's payloads, read; a batch ends once it
  // holds kBatchBytes, so it never holds more than twice that.
  std::unique_ptr<std::byte[]> read_buffer;  // not zeroed first: pread fills what is used
  std::uint64_t read_used = 0;
  auto write_batch = [&] {
    out.write_gather(pieces);
    pieces.clear();
    batch = 0;
    read_used = 0;
  };
  for (std::size_t i = 0; i < members.size(); ++i) {
    const NewMember& m = members[i];
    pieces.push_back(as_bytes(layout[i].header));
    if (m.source && m.data.size() >= kKernelCopyBytes) {
      out.write_gather(pieces);
      pieces.clear();
      read_used = 0;
      out.copy_from(*m.source, static_cast<std::uint64_t>(m.data.data() - m.source->bytes().data()), m.data.size());
    } else if (options.read_sources && m.source && m.source->fd() >= 0 && !m.data.empty()) {
      if (!read_buffer) read_buffer.reset(new std::byte[2 * kBatchBytes]);
      const std::uint64_t at = static_cast<std::uint64_t>(m.data.data() - m.source->bytes().data());
      std::byte* to = read_buffer.get() + read_used;
      m.source->read_at(at, to, m.data.size());
      pieces.push_back(Bytes(to, m.data.size()));
      read_used += m.data.size();
      batch += m.data.size();
    } else {
      pieces.push_back(m.data);
      batch += m.data.size();
    }
    if (layout[i].padding) pieces.push_back(as_bytes(std::string_view("\n")));
    if (batch >= kBatchBytes) write_batch();
  }
  write_batch();
  return out.written() - start;
}

}  // namespace ot::archive
