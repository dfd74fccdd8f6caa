// Pruning ar archives (see kinds.h): each relocatable object member pruned as
// prune_object does (prune/object.cpp), every other member (bundles, bitcode,
// objects without device code) copied as it is. The headers keep their fields
// but the size; the GNU symbol table ("/", "/SYM64/") keeps its symbols, with
// each member offset moved to where that member's header now starts; the
// long-name table ("//") is kept; so is a BSD symbol table ("__.SYMDEF"),
// its member offsets moved the same way. Thin archives are refused.
#include <algorithm>
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
  std::optional<ObjectPlan> plan;  // set when the member is pruned
  std::uint64_t new_header = 0;    // where its header lands in the output
};

// The symbol table `m` with its member offsets (big-endian words of `width`
// bytes after a count of the same width) moved through `moved`.
std::vector<std::byte> remap_symbol_table(const archive::Member& m, unsigned width,
                                          const std::map<std::uint64_t, std::uint64_t>& moved,
                                          const std::string& file) {
  std::vector<std::byte> out(m.data.begin(), m.data.end());
  auto load = [&](std::uint64_t at) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i) v = v << 8 | static_cast<std::uint8_t>(out[at + i]);
    return v;
  };
  if (out.size() < width) fail_at({file, m.offset}, "archive symbol table '{}' is shorter than its count", m.name);
  const std::uint64_t count = load(0);
  if (count > (out.size() - width) / width)
    fail_at({file, m.offset}, "archive symbol table '{}' counts 0x{:x} symbols, more than it holds", m.name, count);
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t at = width + k * width;
    auto it = moved.find(load(at));
    if (it == moved.end())
      fail_at({file, m.offset + at}, "archive symbol {} points at 0x{:x}, not at a member header", k, load(at));
    std::uint64_t v = it->second;
    for (unsigned i = width; i-- > 0; v >>= 8) out[at + i] = std::byte{static_cast<std::uint8_t>(v & 0xff)};
  }
  return out;
}

// A BSD symbol table ("__.SYMDEF", "__.SYMDEF_64", " SORTED" or not): the
// byte size of an array of (name offset, member offset) pairs, the pairs, then
// the names; little-endian words of `width` bytes. The member offsets move.
std::vector<std::byte> remap_bsd_table(const archive::Member& m, unsigned width,
                                       const std::map<std::uint64_t, std::uint64_t>& moved, const std::string& file) {
  std::vector<std::byte> out(m.data.begin(), m.data.end());
  auto load = [&](std::uint64_t at) {
    std::uint64_t v = 0;
    for (unsigned i = width; i-- > 0;) v = v << 8 | static_cast<std::uint8_t>(out[at + i]);
    return v;
  };
  if (out.size() < width) fail_at({file, m.offset}, "archive symbol table '{}' is shorter than its size field", m.name);
  const std::uint64_t bytes = load(0);
  if (bytes % (2 * width) != 0 || bytes > out.size() - width)
    fail_at({file, m.offset}, "archive symbol table '{}' has an array of 0x{:x} bytes, which it does not hold", m.name,
            bytes);
  for (std::uint64_t at = width + width; at < width + bytes; at += 2 * width) {
    auto it = moved.find(load(at));
    if (it == moved.end())
      fail_at({file, m.offset + at}, "archive symbol {} points at 0x{:x}, not at a member header",
              (at - width) / (2 * width), load(at));
    std::uint64_t v = it->second;
    for (unsigned i = 0; i < width; ++i, v >>= 8) out[at + i] = std::byte{static_cast<std::uint8_t>(v & 0xff)};
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
    // Objects with device code are pruned; bitcode, bundles and host-only objects stay as they are.
    const std::string name = fmt::format("{}({})", file, p.member.name);
    const object::ObjectKind kind = object::identify_object(p.member.data);
    if (p.member.kind == archive::Member::Kind::Regular &&
        (kind == object::ObjectKind::Elf || kind == object::ObjectKind::Coff) &&
        holds_container(p.member.data, name))
      p.plan = plan_object(in, p.member.offset, p.member.data, selection, name,
                           fmt::format("member {}, ", p.member.name));
    if (p.plan)
      for (const EntryReport& e : p.plan->report.entries) report.entries.push_back(e);
    parts.push_back(std::move(p));
  }

  if (std::ranges::none_of(parts, [](const Part& p) { return p.plan.has_value(); }))
    fail_at({file, 0}, "no member of the archive is an object holding device code");

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
  for (Part& p : parts) {
    const archive::Member& m = p.member;
    const Bytes header = data.subspan(m.header_offset, kHeaderSize);
    const std::uint64_t name_bytes = m.offset - m.header_offset - kHeaderSize;
    if (!p.plan) {
      const bool bsd = m.kind == archive::Member::Kind::BsdSymbolTable || m.name.starts_with("__.SYMDEF");
      if (m.kind == archive::Member::Kind::SymbolTable || m.kind == archive::Member::Kind::SymbolTable64) {
        out.bytes_of(in, header);
        out.bytes(remap_symbol_table(m, m.kind == archive::Member::Kind::SymbolTable ? 4 : 8, moved, file));
      } else if (bsd) {
        out.bytes_of(in, data.subspan(m.header_offset, kHeaderSize + name_bytes));
        out.bytes(remap_bsd_table(m, m.name.starts_with("__.SYMDEF_64") ? 8 : 4, moved, file));
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
