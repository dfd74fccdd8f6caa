#include "tools/native_bundler_options.h"

#include "archive/ar_reader.h"
#include "cli/diagnostics.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_text.h"
#include "formats/compressed_bundle.h"
#include "formats/kpack.h"
#include "formats/nv_fatbin.h"
#include "object/object_file.h"
#include "support/mapped_file.h"
#include "tools/tools.h"

namespace ot::tools {

std::pair<std::string, std::string> split_target_pair(const std::string& spec, const std::string& prog) {
  auto eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw Error({}, fmt::format("'{}': expected <bundle id>=<file> (see '{} --help')", spec, prog));
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

std::string type_from_extension(const std::string& path) {
  auto dot = path.find_last_of('.');
  auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  for (const char* t : {"i", "ii", "cui", "hipi", "d", "ll", "bc", "s", "o", "a", "gch", "ast"})
    if (ext == t) return ext;
  if (ext == "hipfb" || ext == "obj") return "o";
  if (ext == "lib") return "a";
  return "";
}

std::string type_from_content(const InputFile& in) {
  Bytes data = in.bytes();
  if (archive::is_archive(data)) return "a";
  if (formats::has_ccob_magic(data) || formats::has_binary_bundle_magic(data)) return "bc";
  if (object::identify_object(data) != object::ObjectKind::NotObject) return "o";
  // No text bundle either in a fatbin or kpack archive (which would be looked for through the whole file,
  // a 3 GiB fatbin read in full before unbundle --extract-dir walked it).
  if (formats::has_fatbin_magic(data) || formats::has_kpack_magic(data)) return "";
  std::optional<std::string_view> comment = formats::find_text_comment(data);
  if (!comment) return "";
  return *comment == "//" ? "i" : *comment == "#" ? "s" : "ll";
}

bundler::Config make_config() {
  bundler::Config c;
  c.concatenated = true;
  c.out = [](std::string_view s) { print(s); };
  c.err = [](std::string_view s) { cli::print_raw(s); };
  return c;
}

}  // namespace ot::tools
