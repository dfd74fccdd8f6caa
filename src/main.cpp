#include "cli/applets.h"
#include "support/signals.h"

int main(int argc, char** argv) {
  ot::signals::install();
  return ot::cli::dispatch(argc, argv);
}
