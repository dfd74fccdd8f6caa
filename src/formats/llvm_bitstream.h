// LLVM's bitstream container (the framing of bitcode files): bits taken least
// significant first, abbreviation-driven records, nested blocks with their
// length in words, BLOCKINFO-defined abbreviations. Only reading; every field
// is bounds-checked and errors name the file and byte offset.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot::formats::bitstream {

struct AbbrevOp {
  enum Kind { Literal, Fixed, Vbr, Array, Char6, Blob } kind;
  std::uint64_t value = 0;  // literal value or field width
};
using Abbrev = std::vector<AbbrevOp>;

// Abbreviations BLOCKINFO defines for each block ID.
using BlockInfo = std::map<std::uint64_t, std::vector<Abbrev>>;

class Cursor {
 public:
  Cursor(Bytes data, const std::string& file, std::uint64_t base) : d_(data), file_(file), base_(base) {}

  std::uint64_t bit() const { return bit_; }
  std::uint64_t size_bits() const { return d_.size() * 8; }
  std::uint64_t bits_left() const { return size_bits() - bit_; }
  Where here() const { return {file_, base_ + bit_ / 8}; }

  std::uint64_t fixed(unsigned width);
  std::uint64_t vbr(unsigned width);
  void align32();
  void skip_bits(std::uint64_t bits);
  Bytes bytes(std::uint64_t n);  // at a byte boundary

 private:
  Bytes d_;
  const std::string& file_;
  std::uint64_t base_;
  std::uint64_t bit_ = 0;
};

// A record as read: its code, its scalar operands (array elements included)
// and its blob, if any.
struct Record {
  std::uint64_t code = 0;
  std::vector<std::uint64_t> ops;
  std::optional<Bytes> blob;
};

// What a block holds next.
struct Entry {
  enum Kind { EndBlock, SubBlock, Record } kind;
  std::uint64_t id = 0;  // sub-block ID, or the abbreviation ID of a record
};

// Reads the contents of one block (entered already, or the top level with
// abbreviation width 2).
class Block {
 public:
  Block(Cursor& c, unsigned abbrev_width, std::uint64_t block_id, const BlockInfo* info);

  // The next entry; DEFINE_ABBREV records are absorbed.
  Entry next();
  // After SubBlock: enter it (returns its abbreviation width) or skip it.
  unsigned enter_sub_block();
  void skip_sub_block();
  // After Record: read it. A record may be very long (an embedded image): when
  // `element` is set, every scalar operand after the code goes there instead
  // of into Record::ops.
  struct Record read_record(std::uint64_t abbrev_id, const std::function<void(std::uint64_t)>& element = {});

  Cursor& cursor() { return c_; }
  std::uint64_t id() const { return id_; }

 private:
  Cursor& c_;
  unsigned width_;
  std::uint64_t id_;
  std::vector<Abbrev> abbrevs_;
};

// Reads a BLOCKINFO block (entered already, abbreviation width `width`) into `info`.
void read_block_info(Cursor& c, unsigned width, BlockInfo& info);

// Strips the bitcode wrapper header if present and checks the "BC" 0xC0DE
// magic; returns the bitstream proper and its offset in `data`.
std::pair<Bytes, std::uint64_t> bitcode_stream(Bytes data, const std::string& file);

}  // namespace ot::formats::bitstream
