#include "formats/llvm_bitstream.h"

#include "formats/offload_binary.h"

namespace ot::formats::bitstream {
namespace {

constexpr std::uint64_t kEndBlock = 0, kEnterSubblock = 1, kDefineAbbrev = 2, kUnabbrevRecord = 3;
constexpr std::uint64_t kBlockInfoSetBid = 1;

Abbrev read_abbrev(Cursor& c) {
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
    AbbrevOp& op = a.back();
    if ((op.kind == AbbrevOp::Fixed || op.kind == AbbrevOp::Vbr) && op.value == 0) op = {AbbrevOp::Literal, 0};
    if (op.kind == AbbrevOp::Fixed && op.value > 64) fail_at(c.here(), "bitcode fixed field of {} bits", op.value);
    if (op.kind == AbbrevOp::Vbr && op.value > 32) fail_at(c.here(), "bitcode vbr field of {} bits", op.value);
  }
  return a;
}

std::uint64_t scalar(Cursor& c, const AbbrevOp& op) {
  switch (op.kind) {
    case AbbrevOp::Literal: return op.value;
    case AbbrevOp::Fixed: return c.fixed(static_cast<unsigned>(op.value));
    case AbbrevOp::Vbr: return c.vbr(static_cast<unsigned>(op.value));
    case AbbrevOp::Char6: {
      static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._";
      return static_cast<unsigned char>(kChars[c.fixed(6)]);
    }
    case AbbrevOp::Array:
    case AbbrevOp::Blob: break;
  }
  fail_at(c.here(), "bitcode array or blob used as an array element");
}

}  // namespace

std::uint64_t Cursor::fixed(unsigned width) {
  if (width > 64) fail_at(here(), "bitcode field width {} is larger than 64", width);
  if (width > bits_left()) fail_at(here(), "bitcode stream ends inside a field");
  std::uint64_t v = 0;
  for (unsigned got = 0; got < width;) {
    const unsigned in_byte = static_cast<unsigned>(bit_ % 8);
    const unsigned take = std::min(8 - in_byte, width - got);
    const auto byte = static_cast<std::uint8_t>(d_[bit_ / 8]);
    v |= static_cast<std::uint64_t>((byte >> in_byte) & ((1u << take) - 1)) << got;
    got += take;
    bit_ += take;
  }
  return v;
}

std::uint64_t Cursor::vbr(unsigned width) {
  if (width < 2 || width > 32) fail_at(here(), "bad bitcode vbr width {}", width);
  const std::uint64_t hi = 1ull << (width - 1);
  std::uint64_t v = 0;
  for (unsigned shift = 0;; shift += width - 1) {
    const std::uint64_t piece = fixed(width);
    if (shift >= 64) fail_at(here(), "bitcode vbr value does not fit in 64 bits");
    v |= (piece & (hi - 1)) << shift;
    if (!(piece & hi)) return v;
  }
}

void Cursor::align32() {
  const std::uint64_t to = (bit_ + 31) / 32 * 32;
  if (to > size_bits()) fail_at(here(), "bitcode stream ends inside padding");
  bit_ = to;
}

void Cursor::skip_bits(std::uint64_t bits) {
  if (bits > bits_left()) fail_at(here(), "bitcode block of 0x{:x} words extends past the end", bits / 32);
  bit_ += bits;
}

Bytes Cursor::bytes(std::uint64_t n) {
  if (bit_ % 8 != 0 || n > bits_left() / 8) fail_at(here(), "bitcode blob of 0x{:x} bytes extends past the end", n);
  Bytes out = d_.subspan(bit_ / 8, n);
  bit_ += n * 8;
  return out;
}

Block::Block(Cursor& c, unsigned abbrev_width, std::uint64_t block_id, const BlockInfo* info)
    : c_(c), width_(abbrev_width), id_(block_id) {
  if (width_ < 1 || width_ > 32) fail_at(c.here(), "bad bitcode abbreviation width {}", width_);
  if (info)
    if (auto it = info->find(block_id); it != info->end()) abbrevs_ = it->second;
}

Entry Block::next() {
  for (;;) {
    const std::uint64_t id = c_.fixed(width_);
    if (id == kEndBlock) {
      c_.align32();
      return {Entry::EndBlock, 0};
    }
    if (id == kEnterSubblock) return {Entry::SubBlock, c_.vbr(8)};
    if (id == kDefineAbbrev) {
      abbrevs_.push_back(read_abbrev(c_));
      continue;
    }
    return {Entry::Record, id};
  }
}

unsigned Block::enter_sub_block() {
  const auto width = static_cast<unsigned>(c_.vbr(4));
  c_.align32();
  c_.fixed(32);  // length in words: not needed when reading the block through
  return width;
}

void Block::skip_sub_block() {
  c_.vbr(4);
  c_.align32();
  c_.skip_bits(c_.fixed(32) * 32);
}

Record Block::read_record(std::uint64_t abbrev_id, const std::function<void(std::uint64_t)>& element) {
  Record r;
  bool have_code = false;
  auto take = [&](std::uint64_t v) {
    if (!have_code) {
      r.code = v;
      have_code = true;
    } else if (element) {
      element(v);
    } else {
      r.ops.push_back(v);
    }
  };
  if (abbrev_id == kUnabbrevRecord) {
    take(c_.vbr(6));
    const std::uint64_t n = c_.vbr(6);
    for (std::uint64_t k = 0; k < n; ++k) take(c_.vbr(6));
    return r;
  }
  if (abbrev_id - 4 >= abbrevs_.size()) fail_at(c_.here(), "bitcode record uses undefined abbreviation {}", abbrev_id);
  const Abbrev& a = abbrevs_[abbrev_id - 4];
  for (std::size_t i = 0; i < a.size(); ++i) {
    const AbbrevOp& op = a[i];
    if (op.kind == AbbrevOp::Array) {
      if (i + 2 != a.size()) fail_at(c_.here(), "bitcode array is not the next-to-last operand");
      const std::uint64_t n = c_.vbr(6);
      for (std::uint64_t k = 0; k < n; ++k) take(scalar(c_, a[i + 1]));
      break;
    }
    if (op.kind == AbbrevOp::Blob) {
      const std::uint64_t n = c_.vbr(6);
      c_.align32();
      r.blob = c_.bytes(n);
      c_.align32();
      continue;
    }
    take(scalar(c_, op));
  }
  if (!have_code) fail_at(c_.here(), "bitcode record without a code");
  return r;
}

void read_block_info(Cursor& c, unsigned width, BlockInfo& info) {
  // DEFINE_ABBREV records here belong to the block named by the last SETBID.
  if (width < 1 || width > 32) fail_at(c.here(), "bad bitcode abbreviation width {}", width);
  std::optional<std::uint64_t> current;
  for (;;) {
    const std::uint64_t id = c.fixed(width);
    if (id == kEndBlock) {
      c.align32();
      return;
    }
    if (id == kEnterSubblock) {
      c.vbr(8);
      c.vbr(4);
      c.align32();
      c.skip_bits(c.fixed(32) * 32);
    } else if (id == kDefineAbbrev) {
      if (!current) fail_at(c.here(), "bitcode BLOCKINFO defines an abbreviation before SETBID");
      info[*current].push_back(read_abbrev(c));
    } else if (id == kUnabbrevRecord) {
      const std::uint64_t code = c.vbr(6), n = c.vbr(6);
      std::uint64_t first = 0;
      for (std::uint64_t k = 0; k < n; ++k) {
        const std::uint64_t v = c.vbr(6);
        if (k == 0) first = v;
      }
      if (code == kBlockInfoSetBid) {
        if (n == 0) fail_at(c.here(), "bitcode SETBID without a block ID");
        current = first;
      }
    } else {
      fail_at(c.here(), "bitcode BLOCKINFO record uses abbreviation {}", id);
    }
  }
}

std::pair<Bytes, std::uint64_t> bitcode_stream(Bytes data, const std::string& file) {
  std::uint64_t base = 0;
  if (data.size() >= 4 && as_chars(data.first(4)) == "\xDE\xC0\x17\x0B") {
    if (data.size() < 20) fail_at({file, 0}, "truncated bitcode wrapper header");
    const std::uint64_t off = load_le<std::uint32_t>(data.data() + 8), size = load_le<std::uint32_t>(data.data() + 12);
    if (range_exceeds(off, size, data.size()))
      fail_at({file, 8}, "bitcode wrapper range (0x{:x} bytes at 0x{:x}) extends past the end of the file", size, off);
    base = off;
    data = data.subspan(off, size);
  }
  if (!is_llvm_bitcode(data) || as_chars(data.first(2)) != "BC") fail_at({file, base}, "not an LLVM bitcode file");
  return {data, base};
}

}  // namespace ot::formats::bitstream
