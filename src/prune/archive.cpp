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
#include <array>
#include <bit>
#include <cstring>
#include <map>
#include <stdexcept>

#include "archive/ar_reader.h"
#include "contents/walker.h"
#include "formats/nv_fatbin.h"
#include "object/object_file.h"
#include "prune/kinds.h"
#include "prune/object_plan.h"
#include "support/error.h"

namespace ot::prune {
namespace {

constexpr std::uint64_t kHeaderSize = 60;

struct Part {
  archive::Member member;
  bool pruned = false;           // an object or a container with device code: planned
  std::uint64_t new_size = 0;    // its pruned size
  std::uint64_t new_header = 0;  // where its header lands in the output
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
// Only the front of the table holds offsets: that part is returned, rewritten;
// the rest (the names: 58 MB in libcublasLt_static.a) is the input's as it is.
std::vector<std::byte> remap_symbol_table(const archive::Member& m, bool second_linker_member,
                                          const std::map<std::uint64_t, std::uint64_t>& moved,
                                          const std::string& file) {
  const bool coff = m.kind == archive::Member::Kind::SymbolTable && second_linker_member;
  const bool gnu = !coff && (m.kind == archive::Member::Kind::SymbolTable || m.kind == archive::Member::Kind::SymbolTable64);
  const unsigned width = coff ? 4
                         : gnu ? (m.kind == archive::Member::Kind::SymbolTable ? 4 : 8)
                               : (m.name.starts_with("__.SYMDEF_64") ? 8 : 4);
  const std::endian order = gnu ? std::endian::big : std::endian::little;
  // The first word (a count, or the BSD array's bytes) says how far the offsets go.
  std::vector<std::byte> head(m.data.begin(), m.data.begin() + std::min<std::uint64_t>(width, m.data.size()));
  const std::uint64_t first = TableWords(m, head, width, order, file).load(0);
  if (!gnu && !coff && first % (2 * width) != 0)
    fail_at({file, m.offset}, "archive symbol table '{}' has an array of 0x{:x} bytes, not of whole pairs", m.name,
            first);
  const std::uint64_t stride = gnu || coff ? width : 2 * width;
  const std::uint64_t count = gnu || coff ? first : first / (2 * width);
  if (count > (m.data.size() - width) / stride)
    fail_at({file, m.offset}, "archive symbol table '{}' counts 0x{:x} members or symbols, more than it holds",
            m.name, count);
  const std::uint64_t prefix = width + count * stride;
  std::vector<std::byte> out(m.data.begin(), m.data.begin() + prefix);
  TableWords w(m, out, width, order, file);
  w.remap(gnu || coff ? width : 2 * width, count, stride, moved);  // BSD: each pair's second word
  return out;
}

}  // namespace

Report prune_archive(const InputFile& in, const Selection& selection, const std::string& file,
                     const codec::Sink& sink) {
  const Bytes data = in.bytes();
  if (archive::is_thin_archive(data))
    fail_at({file, 0}, "thin archives are not pruned (their members live in other files)");
  Report report{"ar archive", {}, data.size(), 0};
  // The NVIDIA fatbins' entries of every member: some must stay in the archive
  // (a member may keep none, as nvprune leaves it).
  Report fatbins{"NVIDIA fatbins of the archive's members", {}, 0, 0};
  // Objects with device code and containers are pruned; bitcode and host-only objects stay as they are.
  auto plan_member = [&](const archive::Member& m) -> std::optional<ObjectPlan> {
    const std::string name = fmt::format("{}({})", file, m.name);
    const object::ObjectKind kind = object::identify_object(m.data);
    if (m.kind != archive::Member::Kind::Regular) return std::nullopt;
    if ((kind == object::ObjectKind::Elf || kind == object::ObjectKind::Coff) && holds_container(m.data, name))
      return plan_object(in, m.offset, m.data, selection, name, fmt::format("member {}, ", m.name), true);
    if (kind == object::ObjectKind::NotObject && !contents::container_kind(m.data).empty()) {
      ObjectPlan plan;
      // A member of NVIDIA fatbins may keep nothing, as an object's may.
      Selection each = selection;
      const bool fatbins = formats::has_fatbin_magic(m.data);
      if (fatbins) each.allow_empty = true;
      plan.report = prune_container(m.data, each, name, [&](Bytes b) { plan.layout.bytes_of(in, b); });
      for (EntryReport& e : plan.report.entries) e.where = fmt::format("member {}", m.name);
      if (fatbins) plan.fatbin_entries.entries = plan.report.entries;
      return plan;
    }
    return std::nullopt;
  };
  // Done with a member: its pages may leave memory (read back from the file
  // when needed, mostly by copy_file_range, which maps nothing).
  auto release = [&](const archive::Member& m) {
    in.release(m.header_offset, m.offset + m.data.size() - m.header_offset);
  };

  // First pass: every member planned, so that everything is checked before
  // the first byte goes out; only each plan's size is kept. Keeping the plans
  // (and the pages they read) took 577 MB for libcublasLt_static.a (962 MB).
  std::vector<Part> parts;
  archive::MemberReader reader(data, file, true);
  while (auto m = reader.next()) {
    Part p{std::move(*m), false, 0, 0};
    if (std::optional<ObjectPlan> plan = plan_member(p.member)) {
      p.pruned = true;
      p.new_size = plan->layout.size();
      for (const EntryReport& e : plan->report.entries) report.entries.push_back(e);
      for (const EntryReport& e : plan->fatbin_entries.entries) fatbins.entries.push_back(e);
    }
    release(p.member);
    parts.push_back(std::move(p));
  }
  if (std::ranges::none_of(parts, &Part::pruned))
    fail_at({file, 0}, "no member of the archive holds device code (an object with it, a bundle, a compressed bundle, "
            "offload binaries)");
  check_not_empty(selection, fatbins, file);

  // Where each header lands: the members keep their order, only sizes change.
  std::map<std::uint64_t, std::uint64_t> moved;
  std::uint64_t at = 8;
  for (Part& p : parts) {
    p.new_header = at;
    moved[p.member.header_offset] = at;
    const std::uint64_t name_bytes = p.member.offset - p.member.header_offset - kHeaderSize;  // BSD "#1/" names
    const std::uint64_t size = name_bytes + (p.pruned ? p.new_size : p.member.data.size());
    at += kHeaderSize + size + size % 2;
  }
  report.size_after = at;

  // Second pass: the output, member by member, each pruned member planned
  // again (the same bytes give the same plan) and written at once.
  std::uint64_t written = 0;
  auto out = [&](Bytes b) {
    written += b.size();
    sink(b);
  };
  const std::byte newline[1] = {std::byte{'\n'}};
  out(data.first(8));
  bool seen_symbol_table = false;  // a second "/" is the COFF archive's second linker member
  for (const Part& p : parts) {
    const archive::Member& m = p.member;
    const std::uint64_t name_bytes = m.offset - m.header_offset - kHeaderSize;
    if (!p.pruned) {
      const bool symbols = m.kind == archive::Member::Kind::SymbolTable ||
                           m.kind == archive::Member::Kind::SymbolTable64 ||
                           m.kind == archive::Member::Kind::BsdSymbolTable || m.name.starts_with("__.SYMDEF");
      if (symbols) {
        out(data.subspan(m.header_offset, kHeaderSize + name_bytes));
        const std::vector<std::byte> front =
            remap_symbol_table(m, m.kind == archive::Member::Kind::SymbolTable && seen_symbol_table, moved, file);
        out(front);
        out(m.data.subspan(front.size()));
        seen_symbol_table = seen_symbol_table || m.kind == archive::Member::Kind::SymbolTable;
      } else {
        out(data.subspan(m.header_offset, kHeaderSize + name_bytes + m.data.size()));
      }
      if (m.data.size() % 2 != 0) out(newline);
      continue;
    }
    std::optional<ObjectPlan> plan = plan_member(m);
    if (!plan || plan->layout.size() != p.new_size)
      throw std::logic_error("prune_archive: a member's plan differs from the first pass");
    const std::uint64_t size = name_bytes + p.new_size;
    std::array<std::byte, kHeaderSize> header{};
    std::memcpy(header.data(), data.data() + m.header_offset, kHeaderSize);
    const std::string field = fmt::format("{:<10}", size);
    std::memcpy(header.data() + 48, field.data(), 10);
    out(header);
    if (name_bytes != 0) out(data.subspan(m.header_offset + kHeaderSize, name_bytes));
    plan->layout.emit(out);
    if (size % 2 != 0) out(newline);
    release(m);
  }
  if (written != report.size_after) throw std::logic_error("prune_archive: written size differs from plan");
  return report;
}

}  // namespace ot::prune
