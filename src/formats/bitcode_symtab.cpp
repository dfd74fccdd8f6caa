#include "formats/bitcode_symtab.h"

#include "formats/offload_binary.h"

namespace ot::formats {
namespace {

// LLVM bitstream: bits are taken least significant first from little-endian
// 32-bit words; abbreviation IDs 0-3 are END_BLOCK, ENTER_SUBBLOCK,
// DEFINE_ABBREV and UNABBREV_RECORD.
constexpr std::uint32_t kEndBlock = 0, kEnterSubblock = 1, kDefineAbbrev = 2, kUnabbrevRecord = 3;
constexpr std::uint64_t kStrtabBlock = 23, kSymtabBlock = 25, kBlobRecord = 1;

class BitCursor {
 public:
  BitCursor(Bytes data, const std::string& file, std::uint64_t base) : d_(data), file_(file), base_(base) {}

  std::uint64_t bit() const { return bit_; }
  std::uint64_t size_bits() const { return d_.size() * 8; }
  bool at_end() const { return bit_ >= size_bits(); }
  Where here() const { return {file_, base_ + bit_ / 8}; }

  std::uint64_t fixed(unsigned width) {
    if (width > 64) fail_at(here(), "bitcode field width {} is larger than 64", width);
    if (width > size_bits() - std::min(bit_, size_bits()))
      fail_at(here(), "bitcode stream ends inside a field");
    std::uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i, ++bit_) {
      auto byte = static_cast<std::uint8_t>(d_[bit_ / 8]);
      v |= static_cast<std::uint64_t>((byte >> (bit_ % 8)) & 1u) << i;
    }
    return v;
  }

  std::uint64_t vbr(unsigned width) {
    if (width < 2 || width > 32) fail_at(here(), "bad bitcode vbr width {}", width);
    const std::uint64_t hi = 1ull << (width - 1);
    std::uint64_t v = 0;
    for (unsigned shift = 0;; shift += width - 1) {
      std::uint64_t piece = fixed(width);
      if (shift >= 64) fail_at(here(), "bitcode vbr value does not fit in 64 bits");
      v |= (piece & (hi - 1)) << shift;
      if (!(piece & hi)) return v;
    }
  }

  void align32() {
    bit_ = (bit_ + 31) / 32 * 32;
    if (bit_ > size_bits()) fail_at(here(), "bitcode stream ends inside padding");
  }

  void skip_words(std::uint64_t words) {
    if (words > (size_bits() - bit_) / 32) fail_at(here(), "bitcode block of 0x{:x} words extends past the end", words);
    bit_ += words * 32;
  }

  Bytes bytes(std::uint64_t n) {
    if (bit_ % 8 != 0 || n > (size_bits() - bit_) / 8) fail_at(here(), "bitcode blob of 0x{:x} bytes extends past the end", n);
    Bytes out = d_.subspan(bit_ / 8, n);
    bit_ += n * 8;
    return out;
  }

 private:
  Bytes d_;
  const std::string& file_;
  std::uint64_t base_;
  std::uint64_t bit_ = 0;
};

struct AbbrevOp {
  enum Kind { Literal, Fixed, Vbr, Array, Char6, Blob } kind;
  std::uint64_t value = 0;
};
using Abbrev = std::vector<AbbrevOp>;

Abbrev read_abbrev(BitCursor& c) {
  Abbrev a;
  const std::uint64_t n = c.vbr(5);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (c.fixed(1)) {
      a.push_back({AbbrevOp::Literal, c.vbr(8)});
      continue;
    }
    const std::uint64_t enc = c.fixed(3);
    switch (enc) {
      case 1: a.push_back({AbbrevOp::Fixed, c.vbr(5)}); break;
      case 2: a.push_back({AbbrevOp::Vbr, c.vbr(5)}); break;
      case 3: a.push_back({AbbrevOp::Array}); break;
      case 4: a.push_back({AbbrevOp::Char6}); break;
      case 5: a.push_back({AbbrevOp::Blob}); break;
      default: fail_at(c.here(), "bad bitcode abbreviation encoding {}", enc);
    }
    // A zero-width fixed or vbr field always reads as 0.
    if ((a.back().kind == AbbrevOp::Fixed || a.back().kind == AbbrevOp::Vbr) && a.back().value == 0)
      a.back() = {AbbrevOp::Literal, 0};
  }
  return a;
}

std::uint64_t read_scalar(BitCursor& c, const AbbrevOp& op) {
  switch (op.kind) {
    case AbbrevOp::Literal: return op.value;
    case AbbrevOp::Fixed: return c.fixed(static_cast<unsigned>(op.value));
    case AbbrevOp::Vbr: return c.vbr(static_cast<unsigned>(op.value));
    case AbbrevOp::Char6: return c.fixed(6);
    case AbbrevOp::Array:
    case AbbrevOp::Blob: break;
  }
  fail_at(c.here(), "bitcode array or blob used as an element");
}

// One abbreviated record; returns its code and, when it has one, its blob.
std::pair<std::uint64_t, std::optional<Bytes>> read_record(BitCursor& c, const Abbrev& a) {
  std::optional<std::uint64_t> code;
  std::optional<Bytes> blob;
  auto take = [&](std::uint64_t v) {
    if (!code) code = v;
  };
  for (std::size_t i = 0; i < a.size(); ++i) {
    const AbbrevOp& op = a[i];
    if (op.kind == AbbrevOp::Array) {
      if (i + 2 != a.size()) fail_at(c.here(), "bitcode array is not the next-to-last operand");
      const std::uint64_t n = c.vbr(6);
      for (std::uint64_t k = 0; k < n; ++k) take(read_scalar(c, a[i + 1]));
      break;
    }
    if (op.kind == AbbrevOp::Blob) {
      const std::uint64_t n = c.vbr(6);
      c.align32();
      blob = c.bytes(n);
      c.align32();
      continue;
    }
    take(read_scalar(c, op));
  }
  if (!code) fail_at(c.here(), "bitcode record without a code");
  return {*code, blob};
}

// The blob of the first BLOB record of a STRTAB or SYMTAB block (entered already).
std::optional<Bytes> read_blob_block(BitCursor& c, unsigned width) {
  std::vector<Abbrev> abbrevs;
  std::optional<Bytes> found;
  for (;;) {
    const std::uint64_t id = c.fixed(width);
    if (id == kEndBlock) {
      c.align32();
      return found;
    }
    if (id == kEnterSubblock) {
      c.vbr(8);
      c.vbr(4);
      c.align32();
      c.skip_words(c.fixed(32));
    } else if (id == kDefineAbbrev) {
      abbrevs.push_back(read_abbrev(c));
    } else if (id == kUnabbrevRecord) {
      c.vbr(6);
      const std::uint64_t n = c.vbr(6);
      for (std::uint64_t k = 0; k < n; ++k) c.vbr(6);
    } else {
      if (id - 4 >= abbrevs.size()) fail_at(c.here(), "bitcode record uses undefined abbreviation {}", id);
      auto [code, blob] = read_record(c, abbrevs[id - 4]);
      if (code == kBlobRecord && blob && !found) found = blob;
    }
  }
}

std::uint32_t word(Bytes b, std::uint64_t off) { return load_le<std::uint32_t>(b.data() + off); }

}  // namespace

std::optional<BitcodeSymtab> read_bitcode_symtab(Bytes data, const std::string& file) {
  std::uint64_t base = 0;
  if (data.size() >= 4 && as_chars(data.first(4)) == "\xDE\xC0\x17\x0B") {
    // Wrapper header: magic, version, offset, size, cputype.
    if (data.size() < 20) fail_at({file, 0}, "truncated bitcode wrapper header");
    const std::uint64_t off = word(data, 8), size = word(data, 12);
    if (range_exceeds(off, size, data.size()))
      fail_at({file, 8}, "bitcode wrapper range (0x{:x} bytes at 0x{:x}) extends past the end of the file", size, off);
    base = off;
    data = data.subspan(off, size);
  }
  if (!is_llvm_bitcode(data) || as_chars(data.first(2)) != "BC") fail_at({file, base}, "not an LLVM bitcode file");

  BitCursor c(data, file, base);
  c.fixed(32);  // magic
  std::optional<Bytes> symtab, strtab;
  // LLVM tolerates up to 3 bytes of trailing garbage after the last block.
  while (c.size_bits() - c.bit() >= 32) {
    const std::uint64_t id = c.fixed(2);
    if (id != kEnterSubblock) fail_at(c.here(), "bitcode top level holds abbreviation id {} instead of a block", id);
    const std::uint64_t block = c.vbr(8);
    const unsigned width = static_cast<unsigned>(c.vbr(4));
    c.align32();
    const std::uint64_t words = c.fixed(32);
    if (block != kSymtabBlock && block != kStrtabBlock) {
      c.skip_words(words);
      continue;
    }
    if (width < 1 || width > 32) fail_at(c.here(), "bad bitcode abbreviation width {}", width);
    std::optional<Bytes> blob = read_blob_block(c, width);
    if (block == kSymtabBlock && !symtab) {
      symtab = blob;
    } else if (block == kStrtabBlock && symtab && blob) {
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
