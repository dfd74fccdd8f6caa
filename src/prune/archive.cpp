// Pruning ar archives (see kinds.h): each relocatable object member pruned as
// prune_object does (prune/object.cpp), each member that is a container
// (binary or text bundle, CCOB, offload binaries) as prune_container does for
// such a file, every other member (bitcode, objects without device code)
// copied as it is. The headers keep their fields
// but the size; the GNU symbol table ("/", "/SYM64/") keeps its symbols, with
// each member offset moved to where that member's header now starts; the
// long-name table ("//") is kept; COFF archives' second linker member (a
// second "/") and BSD symbol tables ("__.SYMDEF") have their member offsets
// moved the same way. Thin archives are refused.
#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <stdexcept>

#include "archive/ar_reader.h"
#include "object/object_file.h"
#include "prune/kinds.h"
#include "prune/object_plan.h"
#include "support/error.h"

namespace ot::prune {
namespace {

constexpr std::uint64_t kHeaderSize = 60;

struct Part {
  archive::Member member;
  std::optional<ObjectPlan> plan;  // set when the member is pruned (an object or a container)
  std::uint64_t new_header = 0;    // where its header lands in the output
};

// A symbol table's words: `width` bytes each, in `order`, at offsets into
// the table's bytes `out`. Errors name the table and the offset in `file`.
class TableWords {
 public:
  TableWords(const archive::Member& m, std::vector<std::byte>& out, unsigned width, std::endian order,
             const std::string& file)
      : m_(m), out_(out), width_(width), order_(order), file_(file) {}

  std::uint64_t load(std::uint64_t at) const {
    if (at > out_.size() || width_ > out_.size() - at)
      fail_at({file_, m_.offset + at}, "archive symbol table '{}' ends inside a field", m_.name);
    std::uint64_t v = 0;
    for (unsigned i = 0; i < width_; ++i)
      v = v << 8 | static_cast<std::uint8_t>(out_[at + (order_ == std::endian::big ? i : width_ - 1 - i)]);
    return v;
  }
  // Moves the member offsets of `count` words from `first`, `stride` apart.
  void remap(std::uint64_t first, std::uint64_t count, std::uint64_t stride,
             const std::map<std::uint64_t, std::uint64_t>& moved) {
    if (count > out_.size() / stride)
      fail_at({file_, m_.offset}, "archive symbol table '{}' counts 0x{:x} members or symbols, more than it holds",
              m_.name, count);
    for (std::uint64_t k = 0; k < count; ++k) {
      const std::uint64_t at = first + k * stride;
      auto it = moved.find(load(at));
      if (it == moved.end())
        fail_at({file_, m_.offset + at}, "archive symbol table '{}' entry {} points at 0x{:x}, not at a member header",
                m_.name, k, load(at));
      std::uint64_t v = it->second;
      for (unsigned i = 0; i < width_; ++i, v >>= 8)
        out_[at + (order_ == std::endian::big ? width_ - 1 - i : i)] = std::byte{static_cast<std::uint8_t>(v & 0xff)};
    }
  }

 private:
  const archive::Member& m_;
  std::vector<std::byte>& out_;
  unsigned width_;
  std::endian order_;
  const std::string& file_;
};

// The symbol table `m` with its member offsets moved through `moved`:
//   GNU "/", "/SYM64/"  a count, then a member offset per symbol (big-endian, 4 or 8 bytes), the names
//   COFF's second "/"   a member count, an offset per member, a symbol count, ... (little-endian, 4 bytes)
//   BSD "__.SYMDEF"     the byte size of an array of (name offset, member offset) pairs, the pairs, the
//                       names (little-endian; 8 bytes in "__.SYMDEF_64")
std::vector<std::byte> remap_symbol_table(const archive::Member& m, bool second_linker_member,
                                          const std::map<std::uint64_t, std::uint64_t>& moved,
                                          const std::string& file) {
  std::vector<std::byte> out(m.data.begin(), m.data.end());
  if (m.kind == archive::Member::Kind::SymbolTable && second_linker_member) {
    TableWords w(m, out, 4, std::endian::little, file);
    w.remap(4, w.load(0), 4, moved);
  } else if (m.kind == archive::Member::Kind::SymbolTable || m.kind == archive::Member::Kind::SymbolTable64) {
    const unsigned width = m.kind == archive::Member::Kind::SymbolTable ? 4 : 8;
    TableWords w(m, out, width, std::endian::big, file);
    w.remap(width, w.load(0), width, moved);
  } else {
    const unsigned width = m.name.starts_with("__.SYMDEF_64") ? 8 : 4;
    TableWords w(m, out, width, std::endian::little, file);
    const std::uint64_t bytes = w.load(0);
    if (bytes % (2 * width) != 0)
      fail_at({file, m.offset}, "archive symbol table '{}' has an array of 0x{:x} bytes, not of whole pairs", m.name,
              bytes);
    w.remap(2 * width, bytes / (2 * width), 2 * width, moved);
  }
  return out;
}

}  // namespace

Report prune_archive(const InputFile& in, const Selection& selection, const std::string& file,
                     const compress::Sink& sink) {
  const Bytes data = in.bytes();
  if (archive::is_thin_archive(data))
    fail_at({file, 0}, "thin archives are not pruned (their members live in other files)");
  Report report{"ar archive", {}, data.size(), 0};
  std::vector<Part> parts;
  archive::MemberReader reader(data, file, true);
  while (auto m = reader.next()) {
    Part p{std::move(*m), std::nullopt, 0};
    // Objects with device code and containers are pruned; bitcode and host-only objects stay as they are.
    const std::string name = fmt::format("{}({})", file, p.member.name);
    const object::ObjectKind kind = object::identify_object(p.member.data);
    const bool regular = p.member.kind == archive::Member::Kind::Regular;
    if (regular && (kind == object::ObjectKind::Elf || kind == object::ObjectKind::Coff) &&
        holds_container(p.member.data, name)) {
      p.plan = plan_object(in, p.member.offset, p.member.data, selection, name,
                           fmt::format("member {}, ", p.member.name));
    } else if (regular && kind == object::ObjectKind::NotObject && !container_kind(p.member.data).empty()) {
      ObjectPlan plan;
      plan.report = prune_container(p.member.data, selection, name, [&](Bytes b) { plan.layout.bytes_of(in, b); });
      for (EntryReport& e : plan.report.entries) e.where = fmt::format("member {}", p.member.name);
      p.plan = std::move(plan);
    }
    if (p.plan)
      for (const EntryReport& e : p.plan->report.entries) report.entries.push_back(e);
    parts.push_back(std::move(p));
  }

  if (std::ranges::none_of(parts, [](const Part& p) { return p.plan.has_value(); }))
    fail_at({file, 0}, "no member of the archive holds device code (an object with it, a bundle, a compressed bundle, "
            "offload binaries)");

  // Where each header lands: the members keep their order, only sizes change.
  std::map<std::uint64_t, std::uint64_t> moved;
  std::uint64_t at = 8;
  for (Part& p : parts) {
    p.new_header = at;
    moved[p.member.header_offset] = at;
    const std::uint64_t name_bytes = p.member.offset - p.member.header_offset - kHeaderSize;  // BSD "#1/" names
    const std::uint64_t size = name_bytes + (p.plan ? p.plan->layout.size() : p.member.data.size());
    at += kHeaderSize + size + size % 2;
  }
  report.size_after = at;

  object::Layout out;
  out.bytes_of(in, data.first(8));
  bool seen_symbol_table = false;  // a second "/" is the COFF archive's second linker member
  for (Part& p : parts) {
    const archive::Member& m = p.member;
    const Bytes header = data.subspan(m.header_offset, kHeaderSize);
    const std::uint64_t name_bytes = m.offset - m.header_offset - kHeaderSize;
    if (!p.plan) {
      const bool symbols = m.kind == archive::Member::Kind::SymbolTable ||
                           m.kind == archive::Member::Kind::SymbolTable64 ||
                           m.kind == archive::Member::Kind::BsdSymbolTable || m.name.starts_with("__.SYMDEF");
      if (symbols) {
        out.bytes_of(in, data.subspan(m.header_offset, kHeaderSize + name_bytes));
        out.bytes(remap_symbol_table(m, m.kind == archive::Member::Kind::SymbolTable && seen_symbol_table, moved, file));
        seen_symbol_table = seen_symbol_table || m.kind == archive::Member::Kind::SymbolTable;
      } else {
        out.bytes_of(in, data.subspan(m.header_offset, kHeaderSize + name_bytes + m.data.size()));
      }
      if (m.data.size() % 2 != 0) out.bytes({std::byte{'\n'}});
      continue;
    }
    const std::uint64_t size = name_bytes + p.plan->layout.size();
    std::vector<std::byte> h(header.begin(), header.end());
    const std::string field = fmt::format("{:<10}", size);
    std::memcpy(h.data() + 48, field.data(), 10);
    out.bytes(std::move(h));
    if (name_bytes != 0) out.bytes_of(in, data.subspan(m.header_offset + kHeaderSize, name_bytes));
    out.append(std::move(p.plan->layout));
    if (size % 2 != 0) out.bytes({std::byte{'\n'}});
  }
  if (out.size() != report.size_after) throw std::logic_error("prune_archive: layout size differs from plan");
  out.emit(sink);
  return report;
}

}  // namespace ot::prune
