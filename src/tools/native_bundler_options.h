// Option plumbing shared by the native bundle, unbundle and list applets:
// "<target>=<file>" pairs, file-type inference, and the common Config wiring.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bundler/offload_bundler.h"
#include "cli/applets.h"

namespace ot::tools {

// Split "<bundle id>=<path>" at the last '=' (IDs never contain '=').
std::pair<std::string, std::string> split_target_pair(const std::string& spec, const std::string& prog);

// The bundler file type of a path from its extension (".bc" -> "bc", ".o" -> "o",
// ".hipfb" -> "o"...), or "" when unknown.
std::string type_from_extension(const std::string& path);

// The type of an existing bundle from its content: CCOB and binary bundles -> "bc",
// objects -> "o", archives -> "a", text bundles -> the type of their comment style; "" if unknown.
std::string type_from_content(const InputFile& in);

// A Config whose out/err go to stdout/stderr.
bundler::Config make_config();

}  // namespace ot::tools
