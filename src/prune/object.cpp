// Pruning relocatable objects and ar archives: not yet (see kinds.h).
#include "prune/kinds.h"
#include "support/error.h"

namespace ot::prune {

Report prune_object(const InputFile&, const Selection&, const std::string& file, const compress::Sink&) {
  fail_at({file, 0}, "relocatable objects are not pruned yet");
}

Report prune_archive(const InputFile&, const Selection&, const std::string& file, const compress::Sink&) {
  fail_at({file, 0}, "ar archives are not pruned yet");
}

}  // namespace ot::prune
