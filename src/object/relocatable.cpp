#include "object/relocatable.h"

#include <cstring>

#include "support/output_file.h"

namespace ot::object {

void ObjectBytes::write_to(OutputFile& out) const {
  for (const Chunk& c : chunks) {
    if (c.file)
      out.copy_from(*c.file, c.file_offset, c.file_size);
    else if (!c.bytes.empty())
      out.write(Bytes(c.bytes));
  }
}

std::vector<std::byte> ObjectBytes::flatten() const {
  std::vector<std::byte> v;
  v.reserve(size());
  for (const Chunk& c : chunks) {
    if (c.file) {
      Bytes b = c.file->bytes().subspan(c.file_offset, c.file_size);
      v.insert(v.end(), b.begin(), b.end());
    } else {
      v.insert(v.end(), c.bytes.begin(), c.bytes.end());
    }
  }
  return v;
}

}  // namespace ot::object
