// prune_package: see package.h.
#include "prune/package.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string_view>

#include "archive/ar_reader.h"
#include "archive/stream_reader.h"
#include "archive/stream_writer.h"
#include "compat/code_object.h"
#include "contents/walker.h"
#include "prune/prune.h"
#include "prune/per_gpu_rule.h"
#include "prune/tree.h"
#include "support/error.h"
#include "support/mapped_file.h"
#include "support/md5.h"
#include "support/output_file.h"
#include "support/sha256.h"

namespace ot::prune {
namespace {

constexpr std::size_t kSniffSize = compat::kBareCodeSniff;  // the prefix may_hold_device_code looks at
constexpr std::size_t kBlock = 256u << 10;       // the copy buffer
constexpr std::uint64_t kSmallMember = 64u << 20;  // RECORD, md5sums, control: read whole
constexpr std::uint64_t kReleaseStep = 4u << 20;   // input pages let go of every few MiB
constexpr std::uint64_t kBombFloor = 1u << 30;     // a member inflating past this is checked (package.h)

bool starts(Bytes p, std::string_view m) { return p.size() >= m.size() && as_chars(p.first(m.size())) == m; }

// "./usr/lib/x" -> "usr/lib/x": the name as md5sums and RECORD give it.
std::string_view plain_name(std::string_view n) {
  while (n.starts_with("./")) n.remove_prefix(2);
  return n;
}

// A name that would land outside the folder it is extracted into.
bool leaves_folder(std::string_view n) {
  if (n.starts_with('/')) return true;
  while (!n.empty()) {
    const std::size_t slash = n.find('/');
    const std::string_view part = n.substr(0, slash);
    if (part == "..") return true;
    if (slash == std::string_view::npos) break;
    n.remove_prefix(slash + 1);
  }
  return false;
}

std::string compression_name(archive::Compression c) {
  switch (c) {
    case archive::Compression::None: return "";
    case archive::Compression::Gzip: return "gzip";
    case archive::Compression::Bzip2: return "bzip2";
    case archive::Compression::Xz: return "xz";
    case archive::Compression::Zstd: return "zstd";
  }
  return "";
}

// What one rewritten archive did to its files, by plain name.
struct Changes {
  struct Changed {
    std::uint64_t old_size = 0;
    std::uint64_t new_size = 0;
    bool removed = false;
    bool added = false;  // a new member (PackageRewrite::added)
    std::string md5;     // of the new bytes, when asked for
    std::string sha256;  // of the new bytes ("sha256=..."), when asked for
  };
  std::map<std::string, Changed, std::less<>> changed;
  std::uint64_t added_dirs = 0;  // directory members added
  // Every regular member as read ("sha256=...", size), when asked for (a wheel's RECORD check).
  std::map<std::string, std::pair<std::string, std::uint64_t>, std::less<>> originals;
};

struct Hooks {
  bool md5 = false, sha256 = false;  // digests of the new bytes of changed files
  bool hash_originals = false;       // Changes::originals
  // Members whose whole (small) contents are replaced by `replace`.
  std::function<bool(std::string_view plain)> replaced = [](std::string_view) { return false; };
  std::function<std::string(std::string_view plain, std::string original, const Changes&)> replace;
  // Members left out (signatures, with --strip-signature).
  std::function<bool(std::string_view plain)> left_out = [](std::string_view) { return false; };
  // Another rewrite than prune's (package.h), for the archive of the package's files.
  const PackageRewrite* rewrite = nullptr;
};

// Digests of bytes as they pass.
struct Digests {
  bool md5_on, sha_on;
  Md5 md5;
  Sha256 sha;
  void update(Bytes b) {
    if (md5_on) md5.update(b);
    if (sha_on) sha.update(b);
  }
};

// Copies `len` bytes of a mapped file to the writer, letting its pages go behind.
void copy_mapped(const InputFile& f, archive::StreamWriter& w, Digests* d) {
  const Bytes all = f.bytes();
  for (std::uint64_t at = 0; at < all.size(); at += kBlock) {
    const Bytes piece = all.subspan(at, std::min<std::uint64_t>(kBlock, all.size() - at));
    w.data(piece);
    if (d) d->update(piece);
    if (at % (16u << 20) == 0 && at) f.release(0, at);
  }
  f.release(0, all.size());
}

// The current member's data, as StreamReader::read gives it, refused as a
// decompression bomb once past kBombFloor bytes it has inflated to more than
// `max_ratio` times the compressed bytes read for it (0: no bound). Checked
// at every block, so a bomb stops at about 1 GiB, not at its end; and at once
// where the size its header declares is past the floor and more than
// `max_ratio` times all of the `archive` bytes (compressed), which its data
// cannot come from without passing the bound.
class MemberData {
 public:
  MemberData(archive::StreamReader& r, const std::string& member, std::uint64_t max_ratio,
             std::optional<std::uint64_t> declared, std::uint64_t archive)
      : r_(r), member_(member), max_ratio_(max_ratio), start_(r.consumed()) {
    if (max_ratio_ && declared && *declared > kBombFloor && *declared / max_ratio_ > archive)
      refuse("would inflate", *declared, fmt::format("at most 0x{:x}", archive));
  }

  std::size_t read(std::span<std::byte> buf) {
    const std::size_t k = r_.read(buf);
    inflated_ += k;
    if (max_ratio_ && inflated_ > kBombFloor) {
      const std::uint64_t compressed = r_.consumed() - start_;
      if (inflated_ / max_ratio_ > compressed) refuse("inflates", inflated_, fmt::format("0x{:x}", compressed));
    }
    return k;
  }

 private:
  [[noreturn]] void refuse(std::string_view verb, std::uint64_t inflated, const std::string& compressed) const {
    fail(member_, "{} to more than {}:1 past 1 GiB (0x{:x} bytes from {} compressed): refused as a decompression "
         "bomb (--max-inflate-ratio raises the bound)", verb, max_ratio_, inflated, compressed);
  }

  archive::StreamReader& r_;
  const std::string& member_;
  std::uint64_t max_ratio_, start_, inflated_ = 0;
};

// The current member's first bytes, up to kSniffSize of them, into `buf`.
Bytes read_head(MemberData& data, std::span<std::byte> buf) {
  std::size_t got = 0;
  while (got < kSniffSize) {
    const std::size_t k = data.read(buf.subspan(got, kSniffSize - got));
    if (k == 0) break;
    got += k;
  }
  return Bytes(buf.data(), got);
}

// Per-GPU files follow their GPU (per_gpu_rule.h): the rule learns every
// member first, in a pass of its own over the archive (a member is streamed
// once, and whether a per-GPU file's GPU has device code may only show in a
// later member). Only archives that hold a member named as a per-GPU file
// pay for it: the pass runs when the first such member is met.
PerGpuRule learn_members(Bytes data, const std::string& errname, const PackageOptions& options) {
  PerGpuRule rule;
  archive::StreamReader r(data, errname, options.xz_threads);
  std::vector<std::byte> buf(kBlock);
  while (auto h = r.next()) {
    if (!h->regular) continue;
    const std::string member = fmt::format("{}({})", errname, h->name);
    MemberData member_data(r, member, options.max_ratio, h->size, data.size());  // bombs stop here too
    const Bytes prefix = read_head(member_data, buf);
    if (!prune_reads(prefix)) continue;
    OutputFile spool = OutputFile::scratch("");
    spool.write(prefix);
    while (std::size_t k = member_data.read(buf)) spool.write(Bytes(buf.data(), k));
    rule.learn(plain_name(h->name), *spool.map(member), member);
  }
  return rule;
}

// Rewrites the archive (tar or zip, possibly compressed) filling `data` into
// `sink`, each file pruned; `errname` names it in errors.
// `data` lies at `at` in `file` (whose pages read are let go of as the
// decompression moves on: a .deb's 90 MB of xz would otherwise stay resident).
struct Backing {
  const InputFile& file;
  std::uint64_t at = 0;
};

Changes rewrite_archive(const Backing& backing, Bytes data, const std::string& errname, const Selection& selection,
                        const Hooks& hooks, const PackageOptions& options, const std::function<void(Bytes)>& sink,
                        TreeReport& report, std::string* format_text = nullptr) {
  Changes changes;
  archive::StreamReader r(data, errname);
  std::uint64_t released = 0;
  auto release_read = [&](std::uint64_t step) {
    if (r.consumed() - released < step) return;
    released = r.consumed();
    backing.file.release(backing.at, released);
  };
  std::optional<archive::StreamWriter> w;
  std::vector<std::byte> buf(kBlock);
  std::set<std::string, std::less<>> removed;
  std::optional<PerGpuRule> per_gpu;
  auto rule_for = [&](std::string_view plain) -> const PerGpuRule* {
    if (hooks.rewrite || !PerGpuRule::may_apply(plain)) return nullptr;
    if (!per_gpu) per_gpu = learn_members(data, errname, options);
    return &*per_gpu;
  };
  // A member left out: its removal recorded for md5sums, RECORD and Installed-Size.
  auto remove_member = [&](const std::string& plain, std::uint64_t size) {
    Changes::Changed& c = changes.changed[plain];
    c.old_size = size;
    c.removed = true;
    removed.insert(plain);
  };
  // PackageRewrite::added's members, once: with the owner and times of the
  // first member written anew (`like`), its "./" or not.
  std::set<std::string, std::less<>> names;  // plain, without a final '/'
  std::unique_ptr<::archive_entry, void (*)(::archive_entry*)> like(nullptr, &archive::free_entry);
  std::string prefix_style;
  bool added = false;
  auto add_members = [&] {
    if (!hooks.rewrite || added) return;
    added = true;
    std::vector<PackageMember> more = hooks.rewrite->added();
    if (more.empty()) return;
    if (!like) fail(errname, "members to add, but no member rewritten to take their owner and times from");
    const bool zip = w->zip();
    for (const PackageMember& m : more) {
      // Its folders first (tar only: a zip names folders by its files).
      for (std::size_t slash = m.name.find('/'); !zip && slash != std::string::npos;
           slash = m.name.find('/', slash + 1))
        if (names.insert(m.name.substr(0, slash)).second) {
          w->new_header(like.get(), prefix_style + m.name.substr(0, slash + 1), true, 0755, 0);
          ++changes.added_dirs;
        }
      if (!names.insert(m.name).second) fail(fmt::format("{}({})", errname, m.name), "exists in the package: "
                                             "the new member would replace it");
      Digests d{hooks.md5, hooks.sha256, {}, {}};
      w->new_header(like.get(), prefix_style + m.name, false, 0644, m.bytes->size());
      copy_mapped(*m.bytes, *w, &d);
      Changes::Changed& c = changes.changed[m.name];
      c.new_size = m.bytes->size();
      c.added = true;
      if (hooks.md5) c.md5 = d.md5.hex();
      if (hooks.sha256) c.sha256 = d.sha.record_hash();
    }
  };
  bool first = true;
  while (auto h = r.next()) {
    release_read(0);
    const std::string member = fmt::format("{}({})", errname, h->name);
    MemberData member_data(r, member, options.max_ratio, h->size, data.size());
    if (first) {
      first = false;
      const std::optional<archive::Compression> c = r.compression();
      if (!c)
        fail(errname, "packages are rewritten only in tar or zip, plain or compressed with gzip, bzip2, xz or zstd");
      const int format = archive::copy_format(r.format_code());
      if (format == 0) fail(errname, "{} archives are not rewritten (tar and zip are)", r.format_name());
      if (archive::is_zip_format(format) && *c != archive::Compression::None)
        fail(errname, "a compressed zip is not rewritten");
      if (format_text) {
        *format_text = r.format_name();
        if (*c != archive::Compression::None) *format_text = compression_name(*c) + ", " + *format_text;
      }
      archive::WriteSpec spec{format, *c, 0, options.xz_threads};
      // dpkg-deb's and gzip's default level for gzip is 6 as libarchive's, dpkg-deb's xz -6 and zstd -3 too.
      w.emplace(spec, sink, errname);
    }
    if (leaves_folder(h->name))
      fail(member, "the member's name leaves the folder it is extracted into: not rewritten");
    if (!h->hardlink.empty()) {
      if (leaves_folder(h->hardlink))
        fail(member, "the hard link's target '{}' leaves the folder it is extracted into: not rewritten", h->hardlink);
      if (removed.contains(plain_name(h->hardlink)))
        fail(member, "a hard link to '{}', which the pruning removes", h->hardlink);
    }
    const std::string plain(plain_name(h->name));
    {
      std::string_view n = plain;
      while (n.ends_with('/')) n.remove_suffix(1);
      names.emplace(n);
    }
    if (hooks.left_out(plain)) {
      while (member_data.read(buf) != 0) {
      }
      continue;
    }
    const bool stored = r.format_name().find("uncompressed") != std::string::npos;  // a zip member's method
    if (!h->regular) {
      w->header(r.entry(), 0, stored);
      while (std::size_t k = member_data.read(buf)) w->data(Bytes(buf.data(), k));
      continue;
    }
    if (hooks.replaced(plain)) {
      add_members();  // before a wheel's RECORD, which lists them
      std::string text;
      while (std::size_t k = member_data.read(buf)) {
        if (text.size() + k > kSmallMember) fail(member, "larger than 0x{:x} bytes: not rewritten", kSmallMember);
        text.append(reinterpret_cast<const char*>(buf.data()), k);
      }
      if (hooks.hash_originals) {
        Sha256 s;
        s.update(as_bytes(text));
        changes.originals[plain] = {s.record_hash(), text.size()};
      }
      const std::string out = hooks.replace(plain, std::move(text), changes);
      w->header(r.entry(), out.size(), stored);
      w->data(as_bytes(out));
      continue;
    }
    // The first bytes decide: streamed through, or spooled and pruned.
    const Bytes prefix = read_head(member_data, buf);
    const std::size_t got = prefix.size();
    Sha256 original;
    if (!prune_reads(prefix)) {
      // The header needs the size: a member without one (a zip's streamed
      // entry) is spooled like the others.
      std::optional<FileOutcome> per_gpu_outcome;
      if (h->size)
        if (const PerGpuRule* rule = rule_for(plain)) per_gpu_outcome = rule->decide(plain, *h->size, selection);
      if (per_gpu_outcome) {
        report.files.push_back({h->name, per_gpu_outcome->action, std::move(per_gpu_outcome->report),
                                std::move(per_gpu_outcome->per_gpu)});
        if (report.files.back().action == FileAction::Remove) {
          if (hooks.hash_originals) original.update(prefix);
          while (std::size_t k = member_data.read(buf)) {
            release_read(kReleaseStep);
            if (hooks.hash_originals) original.update(Bytes(buf.data(), k));
          }
          if (hooks.hash_originals) changes.originals[plain] = {original.record_hash(), *h->size};
          remove_member(plain, *h->size);
          continue;
        }
      }
      if (h->size) {
        w->header(r.entry(), *h->size, stored);
        w->data(prefix);
        std::uint64_t total = got;
        if (hooks.hash_originals) original.update(prefix);
        while (std::size_t k = member_data.read(buf)) {
          release_read(kReleaseStep);
          w->data(Bytes(buf.data(), k));
          if (hooks.hash_originals) original.update(Bytes(buf.data(), k));
          total += k;
        }
        if (hooks.hash_originals) changes.originals[plain] = {original.record_hash(), total};
        continue;
      }
    }
    OutputFile spool = OutputFile::scratch("");
    spool.write(prefix);
    if (hooks.hash_originals) original.update(prefix);
    std::vector<std::byte> more(kBlock);
    while (std::size_t k = member_data.read(more)) {
      release_read(kReleaseStep);
      spool.write(Bytes(more.data(), k));
      if (hooks.hash_originals) original.update(Bytes(more.data(), k));
    }
    std::shared_ptr<InputFile> in = spool.map(member);
    if (hooks.hash_originals) changes.originals[plain] = {original.record_hash(), in->size()};
    OutputFile pruned = OutputFile::scratch("");
    FileOutcome o{FileAction::Copy, {}};
    if (hooks.rewrite) {
      o = hooks.rewrite->file(in, member, plain, PieceWriter(pruned, *in));
      if (o.action != FileAction::Copy && added)
        fail(member, "comes after RECORD, which lists the members added: not rewritten");
      if (o.action == FileAction::Write && !like) {
        like.reset(archive::clone_entry(r.entry()));
        if (h->name.starts_with("./")) prefix_style = "./";
      }
    } else if (prune_reads(prefix))
      // Pieces of the spooled file itself (kept payloads) are copied by the
      // kernel, not read through its mapping: the kept code objects of a
      // 1.3 GB library would otherwise stay resident.
      o = prune_tree_file(*in, selection, member, PieceWriter(pruned, *in), rule_for(plain), plain);
    else if (const PerGpuRule* rule = rule_for(plain))  // a member without device code and without a size
      if (std::optional<FileOutcome> p = rule->decide(plain, in->size(), selection)) o = std::move(*p);
    if (!hooks.rewrite && o.action == FileAction::Write && o.report.dropped() == 0) o.action = FileAction::Copy;
    FileReport pf{h->name, o.action, std::move(o.report), std::move(o.per_gpu)};  // the path as stored; errors name the chain
    switch (o.action) {
      case FileAction::Copy:
        w->header(r.entry(), in->size(), stored);
        copy_mapped(*in, *w, nullptr);
        pf.report.size_after = in->size();
        break;
      case FileAction::Write: {
        std::shared_ptr<InputFile> out = pruned.map(member);
        Digests d{hooks.md5, hooks.sha256, {}, {}};
        w->header(r.entry(), out->size(), stored);
        copy_mapped(*out, *w, &d);
        pf.report.size_after = out->size();
        Changes::Changed& c = changes.changed[plain];
        c.old_size = in->size();
        c.new_size = out->size();
        if (hooks.md5) c.md5 = d.md5.hex();
        if (hooks.sha256) c.sha256 = d.sha.record_hash();
        break;
      }
      case FileAction::Remove:
        remove_member(plain, in->size());
        break;
    }
    if (!pf.report.entries.empty() || !pf.report.notes.empty() || pf.action != FileAction::Copy)
      report.files.push_back(std::move(pf));
  }
  if (!w) fail(errname, "an empty archive: nothing to prune");
  add_members();
  w->finish();
  release_read(0);
  return changes;
}

// ---- Python wheels ----------------------------------------------------------

bool is_dist_info_file(std::string_view plain, std::string_view base) {
  const std::size_t slash = plain.rfind('/');
  if (slash == std::string_view::npos || plain.substr(slash + 1) != base) return false;
  const std::string_view dir = plain.substr(0, slash);
  return dir.find('/') == std::string_view::npos && dir.ends_with(".dist-info");
}

// One CSV field of a RECORD line (RFC 4180 quoting, as Python's csv module writes it).
std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        out.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

std::string csv_field(const std::string& f) {
  if (f.find_first_of(",\"\r\n") == std::string::npos) return f;
  std::string out = "\"";
  for (char ch : f) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

// A RECORD line naming a file not read yet: checked at the end.
struct PendingLine {
  std::string record;  // names RECORD in errors
  std::size_t line_no = 0;
  std::string path, hash, size;
};

// A wheel's RECORD after the pruning; `file` names it in errors. Every line
// with a hash must match the member as read (pip checks the same); lines for
// files not read yet go to `pending`.
std::string rewrite_record(const std::string& file, std::string_view text, const Changes& changes,
                           const std::set<std::string, std::less<>>& signatures, std::vector<PendingLine>& pending) {
  std::string out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    const std::string_view eol = line.ends_with('\r') ? "\r\n" : "\n";
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty()) {
      out.append(line).append(eol);
      continue;
    }
    std::vector<std::string> f = csv_fields(line);
    if (f.size() != 3) fail(file, "line {}: not 'path,hash,size'", line_no);
    if (signatures.contains(f[0])) continue;
    if (!f[1].empty()) {
      auto o = changes.originals.find(f[0]);
      if (o == changes.originals.end()) {
        pending.push_back({file, line_no, f[0], f[1], f[2]});
        out.append(line).append(eol);
        continue;
      }
      if (o->second.first != f[1] || (!f[2].empty() && f[2] != std::to_string(o->second.second)))
        fail(file, "line {}: the hash or size of '{}' does not match the member ({}, {})", line_no, f[0],
             o->second.first, o->second.second);
    }
    auto c = changes.changed.find(f[0]);
    if (c == changes.changed.end()) {
      out.append(line).append(eol);
      continue;
    }
    if (c->second.removed) continue;
    if (c->second.added) fail(file, "line {}: '{}' is a member added, not one of the wheel", line_no, f[0]);
    out += fmt::format("{},{},{}{}", csv_field(f[0]), c->second.sha256, c->second.new_size, eol);
  }
  const std::string_view eol = out.ends_with("\r\n") ? "\r\n" : "\n";
  for (const auto& [name, c] : changes.changed)
    if (c.added) {
      if (!out.empty() && !out.ends_with('\n')) out += eol;
      out += fmt::format("{},{},{}{}", csv_field(name), c.sha256, c.new_size, eol);
    }
  return out;
}

TreeReport prune_wheel(const InputFile& in, const Selection& selection, const std::string& file,
                          const codec::Sink& sink, const PackageOptions& options, const PackageRewrite* rewrite) {
  TreeReport report{"zip archive", {}, in.size(), 0};
  std::set<std::string, std::less<>> signatures;
  bool record_written = false;
  std::vector<PendingLine> pending;
  Hooks hooks;
  hooks.sha256 = true;
  hooks.hash_originals = true;
  hooks.rewrite = rewrite;
  hooks.left_out = [&](std::string_view plain) {
    if (!is_dist_info_file(plain, "RECORD.jws") && !is_dist_info_file(plain, "RECORD.p7s")) return false;
    if (!options.strip_signatures)
      fail(fmt::format("{}({})", file, plain),
           "{}", rewrite ? "the wheel is signed: rewriting it would break the signature"
                   : "the wheel is signed: pruning would break the signature (--strip-signature leaves it out)");
    signatures.emplace(plain);
    report.notes.push_back(fmt::format("the signature {} was left out", plain));
    return true;
  };
  hooks.replaced = [&](std::string_view plain) { return is_dist_info_file(plain, "RECORD"); };
  hooks.replace = [&](std::string_view plain, std::string text, const Changes& changes) {
    if (record_written) fail(fmt::format("{}({})", file, plain), "a second RECORD");
    record_written = true;
    report.container = "Python wheel";
    return rewrite_record(fmt::format("{}({})", file, plain), text, changes, signatures, pending);
  };
  std::uint64_t written = 0;
  Changes changes = rewrite_archive({in, 0}, in.bytes(), file, selection, hooks, options, [&](Bytes b) {
    written += b.size();
    sink(b);
  }, report);
  // Lines for files after RECORD (wheels put it last; some tools sort) are
  // checked now: nothing is committed yet. Such a file cannot have changed.
  for (const PendingLine& p : pending) {
    auto o = changes.originals.find(p.path);
    if (o == changes.originals.end())
      fail(p.record, "line {}: '{}' is no file of the wheel", p.line_no, p.path);
    if (o->second.first != p.hash || (!p.size.empty() && p.size != std::to_string(o->second.second)))
      fail(p.record, "line {}: the hash or size of '{}' does not match the member ({}, {})", p.line_no, p.path,
           o->second.first, o->second.second);
    if (changes.changed.contains(p.path))
      fail(p.record, "line {}: '{}' comes after RECORD in the wheel and was pruned: RECORD, already written, "
           "cannot say so", p.line_no, p.path);
  }
  report.size_after = written;
  return report;
}

// ---- tarballs ---------------------------------------------------------------

TreeReport prune_tarball(const InputFile& in, const Selection& selection, const std::string& file,
                            const codec::Sink& sink, const PackageOptions& options, const PackageRewrite* rewrite) {
  TreeReport report{"tarball", {}, in.size(), 0};
  std::uint64_t written = 0;
  std::string format;
  Hooks hooks;
  hooks.rewrite = rewrite;
  rewrite_archive({in, 0}, in.bytes(), file, selection, hooks, options, [&](Bytes b) {
    written += b.size();
    sink(b);
  }, report, &format);
  report.container = fmt::format("tarball ({})", format);
  report.size_after = written;
  return report;
}

// ---- Debian packages --------------------------------------------------------

std::uint64_t kib(std::uint64_t size) { return (size + 1023) / 1024; }

std::string rewrite_md5sums(const std::string& file, std::string_view text, const Changes& data) {
  std::string out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    // "<32 hex>  <path>" (md5sum's text mode; " *" binary mode is read too)
    if (line.size() < 35 || line[32] != ' ' || (line[33] != ' ' && line[33] != '*'))
      fail(file, "line {}: not '<md5>  <path>'", line_no);
    auto c = data.changed.find(plain_name(line.substr(34)));
    if (c == data.changed.end()) {
      out.append(line).append("\n");
    } else if (c->second.added) {
      fail(file, "line {}: '{}' is a member added, not one of the package", line_no, line.substr(34));
    } else if (!c->second.removed) {
      out += fmt::format("{}{}\n", c->second.md5, line.substr(32));
    }
  }
  for (const auto& [name, c] : data.changed)
    if (c.added) out += fmt::format("{}  {}\n", c.md5, name);
  return out;
}

std::string rewrite_control(const std::string& file, std::string_view text, const Changes& data,
                            std::string& installed_note) {
  std::string out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const std::string_view end = nl == std::string_view::npos ? "" : "\n";
    constexpr std::string_view kField = "Installed-Size:";
    if (!line.starts_with(kField)) {
      out.append(line).append(end);
      continue;
    }
    std::string_view v = line.substr(kField.size());
    while (v.starts_with(' ') || v.starts_with('\t')) v.remove_prefix(1);
    std::uint64_t size = 0;
    if (v.empty() || v.size() > 15 || !std::ranges::all_of(v, [](char ch) { return ch >= '0' && ch <= '9'; }))
      fail(file, "Installed-Size '{}' is not a number", v);
    for (char ch : v) size = size * 10 + static_cast<std::uint64_t>(ch - '0');
    std::uint64_t now = size;
    for (const auto& [name, c] : data.changed) {
      now -= std::min(now, kib(c.old_size));
      if (!c.removed) now += kib(c.new_size);
    }
    now += data.added_dirs;
    installed_note = fmt::format("Installed-Size {} -> {} KiB", size, now);
    out += fmt::format("Installed-Size: {}{}", now, end);
  }
  return out;
}

TreeReport prune_deb(const InputFile& in, const Selection& selection, const std::string& file,
                        const codec::Sink& sink, const PackageOptions& options, const PackageRewrite* rewrite) {
  const Bytes all = in.bytes();
  TreeReport report{"Debian package", {}, all.size(), 0};
  std::vector<archive::Member> members = archive::read_members(all, file);
  const archive::Member* control = nullptr;
  const archive::Member* data = nullptr;
  std::vector<const archive::Member*> kept;
  for (const archive::Member& m : members) {
    if (m.name.starts_with("_gpg")) {
      if (!options.strip_signatures)
        fail(fmt::format("{}({})", file, m.name),
             "{}", rewrite ? "the package is signed: rewriting it would break the signature"
                     : "the package is signed: pruning would break the signature (--strip-signature leaves it out)");
      report.notes.push_back(fmt::format("the signature {} was left out", m.name));
      continue;
    }
    if (m.name.starts_with("control.tar")) {
      if (control) fail(file, "a second control member '{}'", m.name);
      control = &m;
    } else if (m.name.starts_with("data.tar")) {
      if (data) fail(file, "a second data member '{}'", m.name);
      data = &m;
    }
    kept.push_back(&m);
  }
  if (!control || !data) fail(file, "no control.tar or data.tar member: not a Debian binary package");

  // data.tar first (into a scratch file): control.tar's md5sums and
  // Installed-Size follow from what it did, and control.tar comes first.
  OutputFile data_out = OutputFile::scratch("");
  const std::string data_name = fmt::format("{}({})", file, data->name);
  Hooks data_hooks;
  data_hooks.md5 = true;
  data_hooks.rewrite = rewrite;
  Changes changes = rewrite_archive({in, data->offset}, data->data, data_name, selection, data_hooks, options,
                                    [&](Bytes b) { data_out.write(b); }, report);
  report.container = fmt::format("Debian package ({})", data->name);
  in.release(data->offset, data->data.size());

  std::string control_bytes, installed_note;
  Hooks control_hooks;
  control_hooks.replaced = [](std::string_view plain) { return plain == "md5sums" || plain == "control"; };
  control_hooks.replace = [&](std::string_view plain, std::string text, const Changes&) {
    const std::string name = fmt::format("{}({})({})", file, control->name, plain);
    return plain == "md5sums" ? rewrite_md5sums(name, text, changes)
                              : rewrite_control(name, text, changes, installed_note);
  };
  TreeReport control_report;
  rewrite_archive({in, control->offset}, control->data, fmt::format("{}({})", file, control->name), selection,
                  control_hooks, options,
                  [&](Bytes b) { control_bytes.append(reinterpret_cast<const char*>(b.data()), b.size()); },
                  control_report);
  if (!installed_note.empty()) report.notes.push_back(installed_note);

  // The ar layer: each member's header as it was, the size field patched.
  std::shared_ptr<InputFile> data_in = data_out.map(data_name);
  std::uint64_t written = 0;
  auto out = [&](Bytes b) {
    written += b.size();
    sink(b);
  };
  out(all.first(8));
  const std::byte newline[1] = {std::byte{'\n'}};
  for (const archive::Member* m : kept) {
    const std::uint64_t name_bytes = m->offset - m->header_offset - 60;  // BSD "#1/" names
    Bytes body = m->data;
    if (m == control) body = as_bytes(control_bytes);
    if (m == data) body = data_in->bytes();
    std::array<std::byte, 60> header{};
    std::memcpy(header.data(), all.data() + m->header_offset, header.size());
    const std::uint64_t size = name_bytes + body.size();
    if (size > 9999999999) fail(file, "member {} would be too large for ar (0x{:x} bytes)", m->name, size);
    const std::string field = fmt::format("{:<10}", size);
    std::memcpy(header.data() + 48, field.data(), 10);
    out(header);
    if (name_bytes) out(all.subspan(m->header_offset + 60, name_bytes));
    for (std::uint64_t at = 0; at < body.size(); at += kBlock) {
      out(body.subspan(at, std::min<std::uint64_t>(kBlock, body.size() - at)));
      if (m == data && at % (16u << 20) == 0 && at) data_in->release(0, at);
    }
    if (size % 2) out(newline);
  }
  report.size_after = written;
  return report;
}

}  // namespace

PackageKind package_kind(Bytes data) {
  if (starts(data, "\xed\xab\xee\xdb")) return PackageKind::Rpm;
  if (archive::is_archive(data)) {
    try {
      archive::MemberReader r(data, "");
      std::optional<archive::Member> m = r.next();
      return m && m->name == "debian-binary" ? PackageKind::Deb : PackageKind::None;
    } catch (const Error&) {
      return PackageKind::None;  // prune_file says what is wrong with it
    }
  }
  if (starts(data, "PK\x03\x04")) return PackageKind::Wheel;
  if (data.size() >= 262 && as_chars(data.subspan(257, 5)) == "ustar") return PackageKind::Tarball;
  if (archive::has_compression_magic(data) && !archive::is_compressed_file_only(data)) return PackageKind::Tarball;
  return PackageKind::None;
}

TreeReport prune_package(const InputFile& in, const Selection& selection, const std::string& file,
                         const codec::Sink& sink, const PackageOptions& options) {
  TreeReport r;
  switch (package_kind(in.bytes())) {
    case PackageKind::Rpm:
      fail(file, "rpm packages are not pruned: the header signs and digests the payload");
    case PackageKind::Deb: r = prune_deb(in, selection, file, sink, options, nullptr); break;
    case PackageKind::Tarball: r = prune_tarball(in, selection, file, sink, options, nullptr); break;
    case PackageKind::Wheel: r = prune_wheel(in, selection, file, sink, options, nullptr); break;
    case PackageKind::None: fail(file, "not a package (.deb, tarball, wheel)");
  }
  // As for a directory: a package without device code is an error unless allowed; as for a single file:
  // one left without any device code it had.
  check_found(selection, r, file);
  Report all{r.container, {}, r.size_before, r.size_after};
  for (const FileReport& f : r.files)
    for (const EntryReport& e : f.report.entries) all.entries.push_back(e);
  check_not_empty(selection, all, file);
  return r;
}

TreeReport rewrite_package(const InputFile& in, const PackageRewrite& rewrite, const std::string& file,
                           const codec::Sink& sink, const PackageOptions& options) {
  const Selection unused{};  // the rewrite decides each file
  switch (package_kind(in.bytes())) {
    case PackageKind::Rpm:
      fail(file, "rpm packages are not rewritten: the header signs and digests the payload");
    case PackageKind::Deb: return prune_deb(in, unused, file, sink, options, &rewrite);
    case PackageKind::Tarball: return prune_tarball(in, unused, file, sink, options, &rewrite);
    case PackageKind::Wheel: return prune_wheel(in, unused, file, sink, options, &rewrite);
    case PackageKind::None: break;
  }
  fail(file, "not a package (.deb, tarball, wheel)");
}

}  // namespace ot::prune
