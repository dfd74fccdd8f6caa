// Man pages (roff, man macros) from the commands' descriptions (cli/docs_model.h):
// offloadtool(1), one page per native applet and one per personality, and
// offloadtool-json(7) from the table of --json schemas (support/json_schemas.h).
// The bytes depend only on the descriptions and the version: no date.
#pragma once

#include <string>
#include <vector>

#include "cli/docs_model.h"

namespace ot::cli::docs {

struct ManPage {
  std::string file;  // "offloadtool-bundle.1", "offloadtool-json.7": the section follows the last '.'
  std::string text;
};

// The pages for `root` (describe_offloadtool()): offloadtool.1 first, offloadtool-json.7 last.
std::vector<ManPage> man_pages(const CommandDoc& root);

}  // namespace ot::cli::docs
