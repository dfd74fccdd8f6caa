// An output planned before it is written: pieces in order, each a range of an
// input file (streamed with copy_from, or handed on as a span of its bytes),
// bytes of its own (headers, tables) or zero padding. Laid out first, written
// once; the object editors (bundle_sections.cpp) and the pruners build on it.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "support/bytes.h"
#include "support/mapped_file.h"
#include "support/output_file.h"

namespace ot::object {

class Layout {
 public:
  std::uint64_t size() const { return size_; }

  // Each returns the offset the piece starts at.
  std::uint64_t copy(const InputFile& in, std::uint64_t off, std::uint64_t len) {
    return add({&in, off, len, {}});
  }
  std::uint64_t bytes(std::vector<std::byte> b) {
    const std::uint64_t n = b.size();
    return add({nullptr, 0, n, std::move(b)});
  }
  // `b` as a range of `in` when it lies inside in.bytes(), else a copy of it.
  std::uint64_t bytes_of(const InputFile& in, Bytes b) {
    const Bytes all = in.bytes();
    const std::less<const std::byte*> before;
    if (!b.empty() && !before(b.data(), all.data()) && !before(all.data() + all.size(), b.data() + b.size()))
      return copy(in, static_cast<std::uint64_t>(b.data() - all.data()), b.size());
    return bytes(std::vector<std::byte>(b.begin(), b.end()));
  }
  // Another layout's pieces, appended.
  std::uint64_t append(Layout other) {
    const std::uint64_t at = size_;
    for (Piece& p : other.pieces_) add(std::move(p));
    return at;
  }
  // A buffer whose contents are known only after the layout: fill() later.
  std::size_t reserve(std::uint64_t len) {
    add({nullptr, 0, len, std::vector<std::byte>(len)});
    return pieces_.size() - 1;
  }
  void fill(std::size_t piece, std::vector<std::byte> b) {
    if (b.size() != pieces_[piece].len) throw std::logic_error("object layout: filled piece changed size");
    pieces_[piece].data = std::move(b);
  }
  void pad_to(std::uint64_t align) { pad_to_remainder(align, 0); }
  // Pads to the next offset that is `remainder` modulo `align` (a power of two).
  void pad_to_remainder(std::uint64_t align, std::uint64_t remainder) {
    const std::uint64_t gap = (remainder - size_) & (align - 1);
    if (gap != 0) add({nullptr, 0, gap, std::vector<std::byte>(gap)});
  }

  void write(OutputFile& out) const {
    const std::uint64_t start = out.written();
    for (const Piece& p : pieces_) {
      if (p.in != nullptr)
        out.copy_from(*p.in, p.off, p.len);
      else
        out.write(Bytes(p.data));
    }
    if (out.written() - start != size_) throw std::logic_error("object layout: written size differs from layout");
  }
  // Hands the pieces to `sink` in order; ranges of inputs as spans of their bytes.
  void emit(const std::function<void(Bytes)>& sink) const {
    for (const Piece& p : pieces_) sink(p.in != nullptr ? p.in->bytes().subspan(p.off, p.len) : Bytes(p.data));
  }

 private:
  struct Piece {
    const InputFile* in;
    std::uint64_t off, len;
    std::vector<std::byte> data;
  };
  std::uint64_t add(Piece p) {
    const std::uint64_t at = size_;
    size_ += p.len;
    if (p.len != 0) pieces_.push_back(std::move(p));
    return at;
  }
  std::vector<Piece> pieces_;
  std::uint64_t size_ = 0;
};

}  // namespace ot::object
