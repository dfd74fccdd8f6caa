// offloadtool size: which GPU costs what. Bytes of device code per target
// (canonical target ID) over every file given, through any container the
// walker knows, sorted by the bytes they take in the files, largest first.
//
// Columns: target, entries, file bytes, share of all file bytes, uncompressed
// bytes; sizes as people read them (support/human_size.h: 1.7 MiB), or exact
// with --bytes. An entry stored plainly takes its size in the file; an entry inside a
// compressed bundle (CCOB) is charged its share of the CCOB's bytes in the
// file (header and padding included), in proportion to its uncompressed size
// among the bundle's entries (the CCOB compresses the whole bundle as one
// stream, so no exact per-entry figure exists). An NVIDIA fatbin entry takes
// its stored (compressed or plain) size, and counts its declared uncompressed
// size as uncompressed. Entries in a
// compressed tar/zip/... member are counted uncompressed there: the archive's
// compression is not attributed.
//
// --per-file and --per-bundle add the same table per file / per container.
// A directory is read file by file (contents/tree.h); with --per-file it also
// gets its own table, after a line of what the install takes on disk: "what
// does this install cost per GPU".
// --json prints ONE object, schema json::Schema::Size (support/json_schemas.cpp
// documents its members; offloadtool-json(7)).
// --html writes one self-contained page (tools/size_html.h) that draws the
// object --json --per-file --per-bundle prints, embedded in it as it is.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cmath>
#include <iterator>
#include <map>
#include <memory>
#include <optional>

#include <sys/stat.h>

#include "cli/diagnostics.h"
#include "compat/code_object.h"
#include "contents/per_gpu.h"
#include "contents/tree.h"
#include "contents/walker.h"
#include "support/json.h"
#include "support/json_schemas.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "support/printable.h"
#include "tools/size_html.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

struct SizeOptions {
  std::vector<std::string> inputs;
  bool per_file = false, per_bundle = false, json = false, html = false;
  std::string output = "-";
  SizeStyle sizes = SizeStyle::Human;
  contents::Limits limits;
  Progress::Mode progress = Progress::Mode::Auto;
};

struct Row {
  std::uint64_t entries = 0;
  double file_bytes = 0;  // fractional while CCOB bytes are shared out
  std::uint64_t uncompressed = 0;
  // A directory's per-GPU files of the target (contents/per_gpu.h): not device code, counted apart.
  std::uint64_t per_gpu_files = 0, per_gpu_bytes = 0;
};
using Table = std::map<std::string, Row>;

// `payload`: the sum of the sizes of the entries of e's container. The whole
// CCOB (header, bundle header and padding included) is shared out among them.
double file_bytes_of(const contents::Entry& e, std::uint64_t payload) {
  if (!e.compressed || e.ccob_size == 0) return static_cast<double>(e.size);  // a fatbin entry: as stored
  if (payload == 0) return 0;
  return static_cast<double>(e.size) * static_cast<double>(e.ccob_size) / static_cast<double>(payload);
}

void add(Table& t, const contents::Entry& e, std::uint64_t payload) {
  Row& r = t[e.target];
  ++r.entries;
  r.file_bytes += file_bytes_of(e, payload);
  r.uncompressed += e.uncompressed_size;
}

std::vector<std::pair<std::string, Row>> sorted(const Table& t) {
  std::vector<std::pair<std::string, Row>> rows(t.begin(), t.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::llround(a.second.file_bytes) > std::llround(b.second.file_bytes);
  });
  return rows;
}

double total_of(const Table& t) {
  double sum = 0;
  for (const auto& [k, r] : t) sum += std::llround(r.file_bytes);
  return sum;
}

// `per_gpu`: a directory's table, with a column of its per-GPU files' bytes.
std::string text_table(const Table& t, const std::string& indent, SizeStyle sizes, bool per_gpu = false) {
  auto rows = sorted(t);
  double total = total_of(t);
  std::size_t w = 6, fw = 12, uw = 12, pw = 13;
  for (const auto& [k, r] : rows) {
    w = std::max(w, printable(k).size());
    fw = std::max(fw, size_cell(static_cast<std::uint64_t>(std::llround(r.file_bytes)), sizes).size());
    uw = std::max(uw, size_cell(r.uncompressed, sizes).size());
    pw = std::max(pw, size_cell(r.per_gpu_bytes, sizes).size());
  }
  std::string out = fmt::format("{}{:<{}}  {:>7}  {:>{}}  {:>6}  {:>{}}", indent, "target", w, "entries",
                                "file bytes", fw, "share", "uncompressed", uw);
  out += per_gpu ? fmt::format("  {:>{}}\n", "per-GPU files", pw) : "\n";
  for (const auto& [k, r] : rows) {
    auto fb = std::llround(r.file_bytes);
    out += fmt::format("{}{:<{}}  {:>7}  {:>{}}  {:>5.1f}%  {:>{}}", indent, printable(k), w, r.entries,
                       size_cell(static_cast<std::uint64_t>(fb), sizes), fw,
                       total > 0 ? 100.0 * static_cast<double>(fb) / total : 0.0, size_cell(r.uncompressed, sizes), uw);
    out += per_gpu ? fmt::format("  {:>{}}\n", size_cell(r.per_gpu_bytes, sizes), pw) : "\n";
  }
  return out;
}

std::string json_rows(const Table& t, bool per_gpu = false) {
  std::string out;
  double total = total_of(t);
  for (const auto& [k, r] : sorted(t)) {
    auto fb = std::llround(r.file_bytes);
    out += fmt::format("{}{{\"target\": {}, \"entries\": {}, \"file_bytes\": {}, \"uncompressed_bytes\": {}, "
                       "\"share\": {:.4f}{}}}",
                       out.empty() ? "" : ", ", json::str(k), r.entries, fb, r.uncompressed,
                       total > 0 ? static_cast<double>(fb) / total : 0.0,
                       per_gpu ? fmt::format(", \"per_gpu_files\": {}, \"per_gpu_bytes\": {}", r.per_gpu_files,
                                             r.per_gpu_bytes)
                               : "");
  }
  return "[" + out + "]";
}

// Adds each container's entries to the tables as the walk finds them:
// nothing of the walk is kept but one container's sizes (collecting every
// entry first was most of the page faults, and of the time, of `size` on a
// ROCm library).
struct Bundle {
  std::string file, name;
  std::vector<std::string> path;
  Table t;
};

class Sizer : public contents::Visitor {
 public:
  // `own_bytes_only`: a file of a directory, whose entries reached through a
  // kpack'd binary's records lie in archives the directory holds as files of
  // their own (counted there) or does not hold (not its bytes): not counted.
  Sizer(const std::string& file, Table& all, bool per_bundle, bool own_bytes_only = false)
      : file_(file), all_(all), per_bundle_(per_bundle), own_bytes_only_(own_bytes_only) {}

  // The file's own table and bundles: kept by the caller only when it was
  // read to its end (`all` is then put back as it was before the file).
  Table file_table;
  std::vector<Bundle> bundles;
  std::uint64_t found = 0;  // entries

  void container(const contents::Container& c) override {
    done();
    via_binary_ = !c.kpack_key.empty();
    if (per_bundle_) {
      name_ = c.name();
      path_ = c.path();
    }
  }
  // Targets come from the bundle IDs: the code objects' headers are not read.
  bool wants_code_object_headers() const override { return false; }
  // Sizes come from the bundle tables: a compressed bundle is decoded as far as its table.
  bool wants_payloads() const override { return false; }
  void entry(const contents::Container&, const contents::Entry& e) override {
    if (own_bytes_only_ && via_binary_) return;
    ++found;
    entries_.push_back(e);
    entries_.back().bytes = {};
    entries_.back().fatbin = nullptr;
  }
  // The last container's entries into the tables.
  void done() {
    std::uint64_t payload = 0;
    for (const contents::Entry& e : entries_) payload += e.size;
    Table bt;
    for (const contents::Entry& e : entries_) {
      add(all_, e, payload);
      add(file_table, e, payload);
      if (per_bundle_) add(bt, e, payload);
    }
    if (per_bundle_ && !entries_.empty()) bundles.push_back({file_, std::move(name_), std::move(path_), std::move(bt)});
    entries_.clear();
  }

 private:
  const std::string& file_;
  Table& all_;
  bool per_bundle_;
  bool own_bytes_only_;
  bool via_binary_ = false;  // the container was reached through a kpack'd binary's record
  std::vector<contents::Entry> entries_;  // the container's
  std::string name_;
  std::vector<std::string> path_;
};

// A directory given: what the install costs per GPU. Its files' tables
// summed, beside what the install takes on disk (regular files, a file with
// several hard links once) and what it holds besides them.
struct Tree {
  std::string root;
  std::uint64_t files = 0, bytes = 0, device_files = 0, symlinks = 0, hard_links = 0, special = 0;
  Table t;
  struct PerGpuFile {
    std::string file;
    std::string_view layout;
    std::string target;
    std::uint64_t bytes = 0;
  };
  std::vector<PerGpuFile> per_gpu;  // in path order
  // The files of each folder (as given) holding no device code and no per-GPU file.
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> other;  // folder -> (files, bytes)
};

// A file's bytes on disk, or nullopt when it is no regular file (standard input).
std::optional<std::uint64_t> regular_size(const std::string& file) {
  struct stat st {};
  if (file == "-" || ::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_size);
}

struct FileTable {
  std::string file;
  std::optional<std::uint64_t> bytes;
  Table t;
};

void merge(Table& into, const Table& from) {
  for (const auto& [k, r] : from) {
    Row& x = into[k];
    x.entries += r.entries;
    x.file_bytes += r.file_bytes;
    x.uncompressed += r.uncompressed;
    x.per_gpu_files += r.per_gpu_files;
    x.per_gpu_bytes += r.per_gpu_bytes;
  }
}

int size(const SizeOptions& o, const cli::Invocation& inv) {
  int rc = 0;
  Table all;
  std::vector<FileTable> per_file;
  std::vector<Bundle> per_bundle;
  std::vector<Tree> trees;
  std::uint64_t entries = 0;
  // Walks `file` into the tables; its own table, or nullopt when it failed
  // or (not `required`: a file of a directory) holds no device code.
  auto walk = [&](const std::string& file, bool required, std::optional<std::uint64_t> bytes) -> std::optional<Table> {
    Table before = all;  // a handful of targets
    Sizer sizer(file, all, o.per_bundle, !required);
    try {
      {
        Progress progress(o.progress, fmt::format("{} {}", inv.prog, printable(file)));
        contents::walk_file(file, sizer, with_progress(o.limits, progress));
      }
      sizer.done();
      if (sizer.found == 0) {
        if (!required) return std::nullopt;
        fail_no_device_code(file);
      }
    } catch (const Error& e) {
      all = std::move(before);  // a file that fails counts for nothing
      std::fflush(stdout);  // the error after what was listed before it
      cli::print_error(inv.prog, e.what());
      rc = 1;
      return std::nullopt;
    }
    entries += sizer.found;
    std::move(sizer.bundles.begin(), sizer.bundles.end(), std::back_inserter(per_bundle));
    if (o.per_file) per_file.push_back({file, bytes, sizer.file_table});
    return std::move(sizer.file_table);
  };
  for (const std::string& input : o.inputs) {
    if (!contents::is_directory(input)) {
      walk(input, true, regular_size(input));
      continue;
    }
    Tree tree;
    tree.root = input;
    std::vector<contents::TreeItem> items;
    try {
      items = contents::read_tree(input);
    } catch (const Error& e) {
      cli::print_error(inv.prog, e.what());
      rc = 1;
      continue;
    }
    // Per-GPU files (contents/per_gpu.h) are told by their folders, known once every file was walked.
    contents::PerGpuFiles per_gpu;
    std::vector<const contents::TreeItem*> without_code;
    for (const contents::TreeItem& item : items) {
      switch (item.kind) {
        case contents::TreeKind::Directory: break;
        case contents::TreeKind::Symlink: ++tree.symlinks; break;
        case contents::TreeKind::HardLink: ++tree.hard_links; break;
        case contents::TreeKind::Other: ++tree.special; break;
        case contents::TreeKind::File:
          ++tree.files;
          tree.bytes += static_cast<std::uint64_t>(item.st.st_size);
          if (std::optional<Table> t = walk(item.path, false, static_cast<std::uint64_t>(item.st.st_size))) {
            ++tree.device_files;
            merge(tree.t, *t);
            std::array<std::byte, compat::kBareCodeSniff> head{};
            if (contents::is_standalone_device_code(InputFile::open(item.path)->head(head)))
              per_gpu.add_device_code_file(item.relative);
          } else if (o.per_file) {
            without_code.push_back(&item);
          }
          break;
      }
    }
    for (const contents::TreeItem* item : without_code) {
      const auto bytes = static_cast<std::uint64_t>(item->st.st_size);
      if (std::optional<contents::PerGpuName> n = per_gpu.classify(item->relative)) {
        Row& r = tree.t[n->target];
        ++r.per_gpu_files;
        r.per_gpu_bytes += bytes;
        tree.per_gpu.push_back({item->path, n->layout->name, n->target, bytes});
      } else {
        auto& [files, sum] = tree.other[contents::tree_path(input, std::string(contents::folder_of(item->relative)))];
        ++files;
        sum += bytes;
      }
    }
    if (tree.device_files == 0) {
      cli::print_error(inv.prog, Error::render({input}, kNoDeviceCode));
      rc = 1;
      continue;
    }
    if (o.per_file) trees.push_back(std::move(tree));
  }
  std::uint64_t uncompressed = 0;
  for (const auto& [k, r] : all) uncompressed += r.uncompressed;
  std::string out;
  if (o.json || o.html) {
    out = fmt::format("{{\n  \"schema\": {},\n  \"file_bytes\": {},\n  \"uncompressed_bytes\": {},\n"
                      "  \"entries\": {},\n  \"targets\": {}",
                      json::str(json::schema_name(json::Schema::Size)), static_cast<std::uint64_t>(total_of(all)),
                      uncompressed, entries, json_rows(all));
    if (o.per_file) {
      std::string f;
      for (const FileTable& x : per_file)
        f += fmt::format("{}\n    {{\"file\": {}, \"bytes\": {}, \"targets\": {}}}", f.empty() ? "" : ",",
                         json::str(x.file), x.bytes ? fmt::format("{}", *x.bytes) : "null", json_rows(x.t));
      out += fmt::format(",\n  \"files\": [{}\n  ]", f);
      if (!trees.empty()) {
        std::string d;
        for (const Tree& x : trees) {
          std::string g, other;
          for (const Tree::PerGpuFile& p : x.per_gpu)
            g += fmt::format("{}\n      {{\"file\": {}, \"layout\": {}, \"target\": {}, \"bytes\": {}}}",
                             g.empty() ? "" : ",", json::str(p.file), json::str(p.layout), json::str(p.target), p.bytes);
          for (const auto& [folder, n] : x.other)
            other += fmt::format("{}\n      {{\"folder\": {}, \"files\": {}, \"bytes\": {}}}",
                                 other.empty() ? "" : ",", json::str(folder), n.first, n.second);
          d += fmt::format("{}\n    {{\"tree\": {}, \"files\": {}, \"bytes\": {}, \"device_files\": {}, "
                           "\"device_bytes\": {}, \"symlinks\": {}, \"hard_links\": {}, \"special_files\": {}, "
                           "\"targets\": {},\n     \"per_gpu\": [{}{}],\n     \"other\": [{}{}]}}",
                           d.empty() ? "" : ",", json::str(x.root), x.files, x.bytes, x.device_files,
                           static_cast<std::uint64_t>(total_of(x.t)), x.symlinks, x.hard_links, x.special,
                           json_rows(x.t, true), g, g.empty() ? "" : "\n     ", other,
                           other.empty() ? "" : "\n     ");
        }
        out += fmt::format(",\n  \"trees\": [{}\n  ]", d);
      }
    }
    if (o.per_bundle) {
      std::string b;
      for (const Bundle& x : per_bundle) {
        std::string path;
        for (const std::string& p : x.path) path += (path.empty() ? "" : ", ") + json::str(p);
        b += fmt::format("{}\n    {{\"file\": {}, \"path\": [{}], \"targets\": {}}}", b.empty() ? "" : ",",
                         json::str(x.file), path, json_rows(x.t));
      }
      out += fmt::format(",\n  \"bundles\": [{}\n  ]", b);
    }
    out += "\n}\n";
  } else if (entries > 0 || !o.inputs.empty()) {
    out = text_table(all, "", o.sizes);
    out += fmt::format("total: {} entries, {} in the files, {} uncompressed\n", entries,
                       size_text(static_cast<std::uint64_t>(total_of(all)), o.sizes), size_text(uncompressed, o.sizes));
    for (const FileTable& x : per_file)
      out += fmt::format("\n{}:\n{}", printable(x.file), text_table(x.t, "  ", o.sizes));
    for (const Tree& x : trees) {
      auto device = static_cast<std::uint64_t>(total_of(x.t));
      out += fmt::format("\n{}: {} file{}, {} (hard links once); device code {} ({:.1f}%) in {} file{}; {} "
                         "symbolic link{} (not followed), {} hard link{}, {} special file{} (skipped)\n{}",
                         printable(x.root), x.files, x.files == 1 ? "" : "s", size_text(x.bytes, o.sizes),
                         size_text(device, o.sizes),
                         x.bytes ? 100.0 * static_cast<double>(device) / static_cast<double>(x.bytes) : 0.0,
                         x.device_files, x.device_files == 1 ? "" : "s", x.symlinks, x.symlinks == 1 ? "" : "s",
                         x.hard_links, x.hard_links == 1 ? "" : "s", x.special, x.special == 1 ? "" : "s",
                         text_table(x.t, "  ", o.sizes, true));
    }
    for (const Bundle& x : per_bundle)
      out += fmt::format("\n{}:\n{}", printable(x.name), text_table(x.t, "  ", o.sizes));
  }
  // No partial output: a page or file only when every input was read.
  if (o.output == "-" && !o.html) {
    print(out);
    return rc;
  }
  if (rc != 0) return rc;
  OutputFile file(o.output);
  file.write(o.html ? size_html_page(out) : out);
  file.commit();
  return rc;
}

}  // namespace

cli::AppletBody define_size(CLI::App& app) {
  auto o = std::make_shared<SizeOptions>();
  app.description(
      "Bytes of device code per target (canonical target ID) over all files given, largest first, with each target's "
      "share: which GPU costs what. 'file bytes' are the bytes the entries take in the files: an entry inside a "
      "compressed bundle is charged the compressed bundle's bytes in proportion to its uncompressed size; "
      "'uncompressed' is the entries' own size. Sizes are in binary units with one decimal (1.7 MiB), exact with "
      "--bytes. Reads every container 'list' reads.");
  app.add_option("input", o->inputs,
                 "files to read ('-' for standard input); a directory is read file by file, symbolic links not "
                 "followed, a file with several hard links once")
      ->required();
  app.add_flag("--per-file", o->per_file,
               "also break the bytes down per file; for a directory, also what the install costs per GPU: its "
               "files' bytes on disk, the device code's share of them and the table of its targets");
  app.add_flag("--per-bundle", o->per_bundle, "also break the bytes down per bundle (container)");
  app.add_flag("--json", o->json,
               fmt::format("print one JSON object (schema {}; offloadtool-json(7))", json::schema_name(json::Schema::Size)));
  auto* html = app.add_flag("--html", o->html,
                            "write one self-contained HTML page instead (no network needed to view it): a treemap of "
                            "the files and folders by bytes, each GPU's device code in its colour, host code and "
                            "other files grey, per-GPU files in their GPU's colour; the table of targets; and what "
                            "prune --keep of one target would drop (docs/size-html.md). Implies --per-file and --per-bundle; the page "
                            "embeds the object --json --per-file --per-bundle prints, as it is");
  app.add_option("-o,--output", o->output, "write to this file (a temporary file renamed when complete; nothing "
                                           "when an input fails); '-' (the default) is standard output");
  html->excludes(app.get_option("--json"));
  add_bytes_flag(app, o->sizes);
  add_threads_option(app, o->limits);
  add_progress_option(app, o->progress);
  return [o](const cli::Invocation& inv) {
    if (o->html) o->per_file = o->per_bundle = true;
    return size(*o, inv);
  };
}

}  // namespace ot::tools
