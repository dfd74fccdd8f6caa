#include "prune/packing.h"

namespace ot::prune {

Bytes OwnedBytes::keep(Bytes b) {
  if (b.size() < kInMemory) return memory_.emplace_back(b.begin(), b.end());
  if (!file_) file_.emplace(OutputFile::scratch_beside(near_));
  const std::uint64_t at = file_->written();
  file_->write(b);
  // Mapped from the file as written so far (a dup of its descriptor, closed
  // with the InputFile; the mapping outlives it): nothing resident until read.
  std::unique_ptr<InputFile::Range> r = file_->read_back(near_ + " (pruned)")->map_range(at, b.size());
  const Bytes view = r->bytes();
  stored_.emplace(view.data(), std::move(r));
  return view;
}

void OwnedBytes::release(Bytes b) const {
  auto it = stored_.find(b.data());
  if (it != stored_.end()) it->second->release(0, b.size());
}

Report prune_item(const InputFile& in, Item& it, Bytes section, std::uint64_t off, bool fatbin,
                  const Selection& selection, const std::string& file, OwnedBytes& owned) {
  const Bytes data = in.bytes();
  Report r = rebase_errors(off + it.offset, [&] {
    const codec::Sink keep = [&](Bytes piece) {
      if (piece.empty()) return;
      if (piece.data() >= data.data() && piece.data() + piece.size() <= data.data() + data.size()) {
        it.pieces.push_back(piece);
      } else {
        it.pieces.push_back(owned.keep(piece));
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
