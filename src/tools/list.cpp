// offloadtool list: every device-code entry of every file given, through any
// container contents/walker.h knows (bundles, CCOBs, offload binaries, ELF and
// COFF sections, ar, tar, zip, cpio, rpm, .deb), nested to any depth.
//
// Text: per container one header line (its chain and entry count), then one
// line per entry (index, ID, processor from the code object's header, size,
// offset in the named file); per file a total line.
//
// --json prints ONE object, schema "offloadtool-list/1" (fields are only ever
// added within a version):
//   {"schema": "offloadtool-list/1",
//    "files": [{"file": <as given>, "entries": n}],
//    "entries": [{"file", "path": [<file>, <member>..., "section .hip_fatbin", "bundle 3 at 0x2000"],
//                 "index", "id": <as stored>, "target": <canonical, or the ID as stored if it does not parse>,
//                 "processor": string|null, "offset": n|null, "size": n, "compressed": bool,
//                 "uri": "file://<absolute path>#offset=n&size=n" | null}]}
// offset (and uri) is null where the entry's bytes do not lie contiguous and
// uncompressed in the named file (inside a CCOB or a tar/zip/cpio/rpm member).
//
// A file without device code is an error ("no device code found"); the other
// files are still listed, and the exit code is 1.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string_view>

#include "cli/diagnostics.h"
#include "contents/uri.h"
#include "contents/walker.h"
#include "support/json.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

struct ListOptions {
  std::vector<std::string> inputs;
  bool json = false;
};

struct ListedFile {
  std::string file;
  std::vector<contents::FoundContainer> found;
  std::size_t entries = 0;
};

// The JSON form, written as it is made: a ROCm library has ~1000 entries, and
// building the whole text first (a string per entry, then one for all) was
// most of `list --json`'s time (copies and page faults of the growing string).
// What is the same for many entries (the file, its URI, a container's path) is
// made once.
void print_json(const std::vector<ListedFile>& listed) {
  fmt::memory_buffer out;
  auto flush = [&out] {
    print(std::string_view(out.data(), out.size()));
    out.clear();
  };
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{{\n  \"schema\": \"offloadtool-list/1\",\n  \"files\": [");
  const char* sep = "\n";
  for (const ListedFile& f : listed) {
    fmt::format_to(to, "{}    {{\"file\": {}, \"entries\": {}}}", sep, json::str(f.file), f.entries);
    sep = ",\n";
  }
  fmt::format_to(to, "\n  ],\n  \"entries\": [");
  sep = "\n";
  for (const ListedFile& f : listed) {
    std::string file = json::str(f.file);
    // No path to name for standard input: no offset either (uri is null exactly when offset is).
    bool addressable = f.file != "-";
    std::string uri = addressable ? contents::file_uri(f.file) : "";
    for (const contents::FoundContainer& c : f.found) {
      std::string path;
      for (const std::string& p : c.container.path()) path += (path.empty() ? "" : ", ") + json::str(p);
      for (const contents::Entry& e : c.entries) {
        fmt::format_to(to, "{}    {{\"file\": {}, \"path\": [{}], \"index\": {}, \"id\": {}, \"target\": {}, ", sep,
                       file, path, e.index, json::str(e.id), json::str(e.target));
        fmt::format_to(to, "\"processor\": {}, \"offset\": ", json::opt_str(e.processor));
        if (e.offset && addressable)
          fmt::format_to(to, "{}, \"size\": {}, \"compressed\": {}, \"uri\": {}}}", *e.offset, e.size,
                         json::boolean(e.compressed), json::str(contents::code_object_uri(uri, *e.offset, e.size)));
        else
          fmt::format_to(to, "null, \"size\": {}, \"compressed\": {}, \"uri\": null}}", e.size,
                         json::boolean(e.compressed));
        sep = ",\n";
        if (out.size() >= (1u << 16)) flush();
      }
    }
  }
  fmt::format_to(to, "\n  ]\n}}\n");
  flush();
}

std::string text_for(const std::string& file, const std::vector<contents::FoundContainer>& found) {
  std::string out;
  std::uint64_t entries = 0, bytes = 0;
  for (const contents::FoundContainer& c : found) {
    std::size_t id_width = 2, proc_width = 1;
    for (const contents::Entry& e : c.entries) {
      id_width = std::max(id_width, e.id.size());
      proc_width = std::max(proc_width, e.processor.value_or("-").size());
    }
    out += fmt::format("{}: {} {}\n", c.name(), c.entries.size(), c.entries.size() == 1 ? "entry" : "entries");
    for (const contents::Entry& e : c.entries) {
      std::string where = e.offset ? fmt::format("at 0x{:x}", *e.offset)
                                   : e.compressed ? "compressed" : fmt::format("at 0x{:x} of the member", e.local_offset);
      out += fmt::format("  {:>3}  {:<{}}  {:<{}}  {:>10}  {}\n", e.index, e.id, id_width, e.processor.value_or("-"),
                         proc_width, fmt::format("0x{:x}", e.size), where);
      ++entries;
      bytes += e.size;
    }
    for (const std::string& id : c.container.refused_duplicates)
      out += fmt::format("  the bundle stores '{}' twice: its entries are not read (run 'compat verify')\n", id);
  }
  out += fmt::format("{}: {} {} in {} {}, 0x{:x} bytes\n", file, entries, entries == 1 ? "entry" : "entries",
                     found.size(), found.size() == 1 ? "container" : "containers", bytes);
  return out;
}

int list(const ListOptions& o, const cli::Invocation& inv) {
  int rc = 0;
  std::vector<ListedFile> listed;  // --json: printed after all files are read (errors go first)
  for (const std::string& file : o.inputs) {
    std::vector<contents::FoundContainer> found;
    std::size_t n = 0;
    try {
      found = contents::collect_file(file);
      for (const contents::FoundContainer& c : found) n += c.entries.size() + c.container.refused_duplicates.size();
      if (n == 0)
        fail(file, "no device code found (no offload bundle, compressed bundle, offload binary or bundle section, "
                   "in any archive member)");
    } catch (const Error& e) {
      std::fflush(stdout);  // the error after what was listed before it
      cli::print_error(inv.prog, e.what());
      rc = 1;
      found.clear();
    }
    if (o.json) {
      ListedFile& f = listed.emplace_back(ListedFile{file, std::move(found)});
      for (const contents::FoundContainer& c : f.found) f.entries += c.entries.size();
    } else if (!found.empty()) {
      print(text_for(file, found));
    }
  }
  if (o.json) print_json(listed);
  return rc;
}

}  // namespace

cli::AppletBody define_list(CLI::App& app) {
  auto o = std::make_shared<ListOptions>();
  app.description(
      "List every device-code entry of every file given, through any container: binary and text bundles, compressed "
      "bundles (CCOB), offload binaries, ELF and COFF objects and libraries (__CLANG_OFFLOAD_BUNDLE__ sections, "
      ".hip_fatbin, .llvm.offloading), ar archives, tar (gzip, xz, zstd, bzip2), zip, cpio, rpm and .deb packages, "
      "nested to any depth. Per container a header line with its chain and entry count, then index, ID, processor "
      "(from the code object's header), size and offset in the file (where the bytes lie there uncompressed). A file "
      "without device code is an error (exit 1), after the others are listed.");
  app.add_option("input", o->inputs, "files to read ('-' for standard input)")->required();
  app.add_flag("--json", o->json, "print one JSON object (schema offloadtool-list/1)");
  return [o](const cli::Invocation& inv) { return list(*o, inv); };
}

}  // namespace ot::tools
