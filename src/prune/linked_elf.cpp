#include "prune/kinds.h"
#include "support/error.h"

namespace ot::prune {

Report prune_linked_elf(const InputFile&, const Selection&, const std::string& file, const compress::Sink&) {
  fail_at({file, 0}, "shared libraries and executables are not pruned yet");
}

}  // namespace ot::prune
