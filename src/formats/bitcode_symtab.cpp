#include "formats/bitcode_symtab.h"

#include "formats/llvm_bitstream.h"

namespace ot::formats {
namespace {

constexpr std::uint64_t kStrtabBlock = 23, kSymtabBlock = 25, kBlobRecord = 1;

// The blob of the first BLOB record of a STRTAB or SYMTAB block.
std::optional<Bytes> read_blob_block(bitstream::Cursor& c, unsigned width, std::uint64_t id) {
  bitstream::Block b(c, width, id, nullptr);
  std::optional<Bytes> found;
  for (;;) {
    const bitstream::Entry e = b.next();
    if (e.kind == bitstream::Entry::EndBlock) return found;
    if (e.kind == bitstream::Entry::SubBlock) {
      b.skip_sub_block();
      continue;
    }
    bitstream::Record r = b.read_record(e.id);
    if (r.code == kBlobRecord && r.blob && !found) found = r.blob;
  }
}

std::uint32_t word(Bytes b, std::uint64_t off) { return load_le<std::uint32_t>(b.data() + off); }

}  // namespace

std::optional<BitcodeSymtab> read_bitcode_symtab(Bytes data, const std::string& file) {
  const auto [stream, base] = bitstream::bitcode_stream(data, file);
  bitstream::Cursor c(stream, file, base);
  c.fixed(32);  // magic
  bitstream::Block top(c, 2, ~std::uint64_t{0}, nullptr);
  std::optional<Bytes> symtab, strtab;
  // LLVM tolerates up to 3 bytes of trailing garbage after the last block.
  while (c.bits_left() >= 32) {
    const bitstream::Entry e = top.next();
    if (e.kind != bitstream::Entry::SubBlock) fail_at(c.here(), "bitcode top level holds something other than a block");
    if (e.id != kSymtabBlock && e.id != kStrtabBlock) {
      top.skip_sub_block();
      continue;
    }
    const unsigned width = top.enter_sub_block();
    std::optional<Bytes> blob = read_blob_block(c, width, e.id);
    if (e.id == kSymtabBlock && !symtab) {
      symtab = blob;
    } else if (e.id == kStrtabBlock && symtab && blob) {
      strtab = blob;
      break;
    }
  }
  if (!symtab || !strtab) return std::nullopt;

  // storage::Header: Version, Producer{off,size}, Modules, Comdats, Symbols,
  // Uncommons, TargetTriple, SourceFileName, COFFLinkerOpts, DependentLibraries
  // (ranges are {byte offset, count} into the symtab blob, strings into strtab).
  const Bytes st = *symtab, names = *strtab;
  const std::string where = file + " (bitcode symbol table)";
  if (st.size() < 4 + 8 * 4) fail_at({where, 0}, "truncated header (0x{:x} bytes)", st.size());
  auto str = [&](std::uint64_t at) {
    const std::uint64_t off = word(st, at), len = word(st, at + 4);
    if (range_exceeds(off, len, names.size()))
      fail_at({where, at}, "name (0x{:x} bytes at 0x{:x}) extends past the string table (0x{:x} bytes)", len, off,
              names.size());
    return std::string(as_chars(names.subspan(off, len)));
  };
  BitcodeSymtab out;
  out.version = word(st, 0);
  out.producer = str(4);
  const std::uint64_t sym_off = word(st, 28), sym_count = word(st, 32);
  constexpr std::uint64_t kSymbolSize = 24;  // Name, IRName, ComdatIndex, Flags
  if (sym_off > st.size() || sym_count > (st.size() - sym_off) / kSymbolSize)
    fail_at({where, 28}, "0x{:x} symbols at 0x{:x} extend past the end (0x{:x} bytes)", sym_count, sym_off, st.size());
  out.symbols.reserve(sym_count);
  for (std::uint64_t i = 0; i < sym_count; ++i) {
    const std::uint64_t s = sym_off + i * kSymbolSize;
    out.symbols.push_back({str(s), word(st, s + 20)});
  }
  return out;
}

}  // namespace ot::formats
