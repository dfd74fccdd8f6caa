#include "prune/packing.h"

namespace ot::prune {

Report prune_item(const InputFile& in, Item& it, Bytes section, std::uint64_t off, bool fatbin,
                  const Selection& selection, const std::string& file, std::deque<std::vector<std::byte>>& owned) {
  const Bytes data = in.bytes();
  Report r = rebase_errors(off + it.offset, [&] {
    const codec::Sink keep = [&](Bytes piece) {
      if (piece.empty()) return;
      if (piece.data() >= data.data() && piece.data() + piece.size() <= data.data() + data.size()) {
        it.pieces.push_back(piece);
      } else {
        owned.emplace_back(piece.begin(), piece.end());
        it.pieces.push_back(owned.back());
      }
    };
    const Bytes bytes = section.subspan(it.offset, it.size);
    if (!fatbin) return prune_container(bytes, selection, file, keep);
    // Fatbin headers by pread: a library's thousands map none of its pages in.
    const ByteSource source(bytes, [&in, at = off + it.offset](std::uint64_t o, std::byte* to, std::uint64_t len) {
      in.read_at(at + o, to, len);
    });
    return prune_fatbin_container(source, selection, file, keep);
  });
  it.new_size = r.size_after;
  if (r.dropped() == 0) {  // as it was: a CCOB is not compressed again (at another level than its own)
    it.pieces = {section.subspan(it.offset, it.size)};
    it.new_size = it.size;
  }
  return r;
}

}  // namespace ot::prune
