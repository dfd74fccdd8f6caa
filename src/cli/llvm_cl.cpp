#include "cli/llvm_cl.h"

#include "support/edit_distance.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "formats/llvm_densemap_order.h"
#include "support/error.h"
#include "support/llvm_stringmap.h"
#include "support/mapped_file.h"

namespace ot::cli::llvmcl {

// ---------------------------------------------------------------------------
// Values

std::optional<bool> parse_bool(std::string_view text) {
  if (text.empty() || text == "true" || text == "TRUE" || text == "True" || text == "1") return true;
  if (text == "false" || text == "FALSE" || text == "False" || text == "0") return false;
  return std::nullopt;
}

// LLVM picks the radix from the prefix: 0x/0X, 0b/0B, 0o (lower case only),
// a 0 followed by a digit (octal), else decimal; the digits must then cover
// the rest of the text and fit in 64 bits.
std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  unsigned radix = 10;
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    radix = 16, text.remove_prefix(2);
  } else if (text.size() >= 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    radix = 2, text.remove_prefix(2);
  } else if (text.size() >= 2 && text[0] == '0' && text[1] == 'o') {
    radix = 8, text.remove_prefix(2);
  } else if (text.size() >= 2 && text[0] == '0' && text[1] >= '0' && text[1] <= '9') {
    radix = 8, text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    unsigned digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'z') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'Z') digit = c - 'A' + 10;
    else return std::nullopt;
    if (digit >= radix) return std::nullopt;
    if (value > (UINT64_MAX - digit) / radix) return std::nullopt;
    value = value * radix + digit;
  }
  return value;
}

std::optional<std::int64_t> parse_signed(std::string_view text) {
  if (text.empty() || text[0] != '-') {
    auto v = parse_unsigned(text);
    if (!v || *v > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<std::int64_t>(*v);
  }
  auto v = parse_unsigned(text.substr(1));
  if (!v || *v > static_cast<std::uint64_t>(INT64_MAX) + 1) return std::nullopt;
  return static_cast<std::int64_t>(0 - *v);
}

namespace {

std::optional<std::uint32_t> parse_uint32(std::string_view text) {
  auto v = parse_unsigned(text);
  if (!v || *v > UINT32_MAX) return std::nullopt;
  return static_cast<std::uint32_t>(*v);
}

std::optional<std::int32_t> parse_int32(std::string_view text) {
  auto v = parse_signed(text);
  if (!v || *v < INT32_MIN || *v > INT32_MAX) return std::nullopt;
  return static_cast<std::int32_t>(*v);
}

}  // namespace

// ---------------------------------------------------------------------------
// Response files

std::vector<std::string> tokenize_gnu(std::string_view src, bool keep_empty_quoted) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  std::vector<std::string> tokens;
  std::string token;
  bool quoted = false;  // the token so far had quotes ("" is a token of its own in 23)
  for (std::size_t i = 0, e = src.size(); i < e; ++i) {
    if (token.empty() && !quoted) {
      while (i < e && is_space(src[i])) ++i;
      if (i == e) break;
    }
    char c = src[i];
    if (c == '\\' && i + 1 < e) {  // a backslash escapes the next character
      token += src[++i];
      continue;
    }
    if (c == '"' || c == '\'') {  // quoted: backslash still escapes; no closing quote = to the end
      quoted = keep_empty_quoted;
      for (++i; i < e && src[i] != c; ++i) {
        if (src[i] == '\\' && i + 1 < e) ++i;
        token += src[i];
      }
      if (i == e) break;
      continue;
    }
    if (is_space(c)) {
      if (!token.empty() || quoted) tokens.push_back(std::move(token));
      token.clear();
      quoted = false;
      continue;
    }
    token += c;
  }
  if (!token.empty() || quoted) tokens.push_back(std::move(token));
  // The tokens become C strings: an embedded NUL ends one.
  for (std::string& t : tokens) t.resize(std::min(t.size(), t.find('\0')));
  return tokens;
}

namespace {

// The text of a response file: UTF-16 (either byte order, by its BOM) is
// converted to UTF-8, a UTF-8 BOM is dropped. nullopt when the UTF-16 is
// malformed (odd size, unpaired surrogate).
std::optional<std::string> response_text(Bytes data) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(data[i]); };
  bool le = data.size() >= 2 && byte(0) == 0xFF && byte(1) == 0xFE;
  bool be = data.size() >= 2 && byte(0) == 0xFE && byte(1) == 0xFF;
  if (!le && !be) {
    std::size_t skip = data.size() >= 3 && byte(0) == 0xEF && byte(1) == 0xBB && byte(2) == 0xBF ? 3 : 0;
    return std::string(reinterpret_cast<const char*>(data.data()) + skip, data.size() - skip);
  }
  if (data.size() % 2 != 0) return std::nullopt;
  auto unit = [&](std::size_t i) -> std::uint32_t {
    return le ? byte(2 * i) | byte(2 * i + 1) << 8 : byte(2 * i) << 8 | byte(2 * i + 1);
  };
  std::string out;
  for (std::size_t i = 1, n = data.size() / 2; i < n; ++i) {  // unit 0 is the BOM
    std::uint32_t cp = unit(i);
    if (cp >= 0xDC00 && cp <= 0xDFFF) return std::nullopt;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (i + 1 >= n || unit(i + 1) < 0xDC00 || unit(i + 1) > 0xDFFF) return std::nullopt;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (unit(++i) - 0xDC00);
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | cp >> 6);
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | cp >> 12);
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | cp >> 18);
      out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

// Expands `@file` arguments, depth first, file names relative to the current
// directory (also inside response files). A file that does not exist leaves
// the argument as it is. Other failures: LLVM 14 leaves the argument as it
// is; LLVM 19 reports them and abandons the whole parse.
class Expander {
 public:
  explicit Expander(Dialect dialect) : dialect_(dialect) {
    std::vector<char> buf(PATH_MAX + 1);
    if (::getcwd(buf.data(), buf.size())) cwd_ = buf.data();
  }

  bool expand(const std::vector<std::string>& in, std::vector<std::string>& out) {
    for (const std::string& arg : in) {
      if (arg.empty() || arg[0] != '@' || (dialect_ == Dialect::Llvm14 && arg.size() == 1)) {
        out.push_back(arg);
        continue;
      }
      std::string path = absolute(arg.substr(1));
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) {
        out.push_back(arg);
        continue;
      }
      auto open = std::find_if(stack_.begin(), stack_.end(),
                               [&](const OpenFile& f) { return f.dev == st.st_dev && f.ino == st.st_ino; });
      if (open != stack_.end()) {
        if (dialect_ == Dialect::Llvm14) {
          out.push_back(arg);
          continue;
        }
        error_ = "recursive expansion of: '" + open->path + "'";
        return false;
      }
      std::optional<std::string> text;
      try {
        text = response_text(InputFile::open(path)->bytes());
      } catch (const Error& e) {
        if (dialect_ == Dialect::Llvm14) {
          out.push_back(arg);
          continue;
        }
        error_ = "cannot not open file " + e.message();  // sic: LLVM's wording
        return false;
      }
      if (!text) {
        if (dialect_ == Dialect::Llvm14) {
          out.push_back(arg);
          continue;
        }
        error_ = "Could not convert UTF16 to UTF8";
        return false;
      }
      stack_.push_back({st.st_dev, st.st_ino, path});
      if (!expand(tokenize_gnu(*text, dialect_ == Dialect::Llvm23), out)) return false;
      stack_.pop_back();
    }
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  struct OpenFile {
    dev_t dev;
    ino_t ino;
    std::string path;
  };

  // LLVM 19 prints this form (the current directory joined with the name as typed).
  std::string absolute(const std::string& name) const {
    if (!name.empty() && name[0] == '/') return name;
    if (name.empty()) return cwd_;
    return cwd_ + (cwd_.ends_with('/') ? "" : "/") + name;
  }

  Dialect dialect_;
  std::string cwd_;
  std::vector<OpenFile> stack_;
  std::string error_;
};

// ---------------------------------------------------------------------------
// The option table: the generic options every LLVM tool has, plus the tool's.

enum class Action : std::uint8_t { None, Help, HelpHidden, HelpList, HelpListHidden, Version };

struct Generic {
  Option option;
  Action action;
};

constexpr Generic kGeneric[] = {
    {{.name = "help", .kind = Kind::Flag, .help = "Display available options (--help-hidden for more)"}, Action::Help},
    {{.name = "help-hidden", .kind = Kind::Flag, .help = "Display all available options", .visibility = Visibility::Hidden},
     Action::HelpHidden},
    // Hidden from the plain lists; the categorized help shows it (LLVM unhides it there).
    {{.name = "help-list",
      .kind = Kind::Flag,
      .help = "Display list of available options (--help-list-hidden for more)",
      .visibility = Visibility::Hidden},
     Action::HelpList},
    {{.name = "help-list-hidden",
      .kind = Kind::Flag,
      .help = "Display list of all available options",
      .visibility = Visibility::Hidden},
     Action::HelpListHidden},
    // Accepted and without effect: these tools never call cl::PrintOptionValues.
    {{.name = "print-all-options",
      .kind = Kind::Flag,
      .help = "Print all option values after command line parsing",
      .visibility = Visibility::Hidden},
     Action::None},
    {{.name = "print-options",
      .kind = Kind::Flag,
      .help = "Print non-default options after command line parsing",
      .visibility = Visibility::Hidden},
     Action::None},
    {{.name = "version", .kind = Kind::Flag, .help = "Display the version of this program"}, Action::Version},
};

constexpr std::string_view kGenericCategory = "Generic Options";

// Categories libLLVM 14 registers; its --help-hidden lists them although
// HideUnrelatedOptions left them empty. (LLVM 19 skips empty categories.)
struct Category {
  std::string_view name;
  std::string_view description;
};
constexpr Category kLlvm14EmptyCategories[] = {
    {"Color Options", ""},
    {"General options", ""},
    {"GlobalISel Combiner",
     "Control the rules which are enabled. These options all take a comma separated list of rules to disable and may "
     "be specified by number or number range (e.g. 1-10)."},
    {"Polly Options", "Configure the polly loop optimizer"},
};

enum class ValueExpected : std::uint8_t { Optional, Required, Disallowed };

std::string_view value_name(const Option& o) {
  if (!o.value_name.empty()) return o.value_name;
  switch (o.kind) {
    case Kind::UInt: return "uint";
    case Kind::Int: return "int";
    case Kind::Enum: return "value";
    default: return "string";
  }
}

struct Entry {
  const Option* option;
  Action action = Action::None;
  bool generic = false;
  std::uint32_t bucket = 0;  // home bucket in the tool's option map
  unsigned count = 0;        // occurrences so far

  std::string_view name() const { return option->name; }
  bool is_list() const { return option->kind == Kind::List || option->kind == Kind::CommaList; }
  bool has_value() const {
    return option->kind != Kind::Flag && option->kind != Kind::HelpFlag;
  }
  ValueExpected expected() const {
    if (action != Action::None) return ValueExpected::Disallowed;
    return has_value() ? ValueExpected::Required : ValueExpected::Optional;
  }
  std::string_view value_name() const { return llvmcl::value_name(*option); }
};

// Whether help lists an option: --help (categorized) also shows --help-list.
bool listed(const Option& o, Action action, bool categorized, bool hidden) {
  if (categorized && action == Action::HelpList) return true;
  return o.visibility == Visibility::Shown || (hidden && o.visibility == Visibility::Hidden);
}

// "-o" for one letter, else "--name": how LLVM prints an option name.
std::string dashed(std::string_view name) { return (name.size() == 1 ? "-" : "--") + std::string(name); }


std::string spaces(std::size_t n) { return std::string(n, ' '); }

// The hash of the map cl keeps options in, by name: a StringMap up to LLVM 21
// (djbHash in 14, xxh3 from 17), a DenseMap<StringRef> from 22 (hash_value:
// CityHash-style in 22, xxh3 in 23). Both probe
// quadratically and iterate in bucket order.
std::uint32_t option_map_hash(Dialect dialect, std::string_view name) {
  switch (dialect) {
    case Dialect::Llvm14: return stringmap_hash(name, StringMapHash::Djb0);
    case Dialect::Llvm19: return stringmap_hash(name, StringMapHash::Xxh3);
    case Dialect::Llvm22: return static_cast<std::uint32_t>(formats::llvm_hash_value(name));
    case Dialect::Llvm23: return static_cast<std::uint32_t>(formats::llvm23_hash_value(name));
  }
  return 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// The parser

class Parser {
 public:
  Parser(const Tool& tool, const Invocation& inv, Output& output) : tool_(tool), inv_(inv), output_(output) {
    auto slash = inv.argv0.find_last_of('/');
    prog_ = slash == std::string::npos ? inv.argv0 : inv.argv0.substr(slash + 1);
    for (const Generic& g : kGeneric) entries_.push_back({&g.option, g.action, true});
    for (const Option& o : tool.options) entries_.push_back({&o});
    for (Entry& e : entries_) e.bucket = option_map_hash(tool.dialect, e.name()) & (tool.option_map_buckets - 1);
    // The map's iteration order: by home bucket. (Probing could move a key
    // past another's bucket; it does not for these tools' option names.)
    std::stable_sort(entries_.begin(), entries_.end(),
                     [](const Entry& a, const Entry& b) { return a.bucket < b.bucket; });
    parsed_.tool_ = &tool;
  }

  std::variant<Parsed, int> run();
  std::string help_list() const { return help(false, false); }

 private:
  Entry* find(std::string_view name) {
    for (Entry& e : entries_)
      if (e.name() == name) return &e;
    return nullptr;
  }

  Entry* lookup_long(std::string_view& name, std::optional<std::string_view>& value);
  Entry* prefixed_or_grouped(std::string_view& name, std::optional<std::string_view>& value);
  Entry* longest_prefix(std::string_view name, std::size_t& length, bool grouping_only);
  void provide(Entry& e, std::string_view arg_name, std::optional<std::string_view> value, std::size_t& i);
  bool add_occurrence(Entry& e, std::string_view arg_name, std::string_view value, bool more, std::size_t pos);
  std::string nearest(std::string_view name) const;
  void unknown(const std::string& arg, const std::string& suggestion);
  void error(std::string_view arg_name, std::string_view message);
  std::string help(bool categorized, bool hidden) const;

  const Tool& tool_;
  const Invocation& inv_;
  Output& output_;
  std::string prog_;
  std::vector<Entry> entries_;  // in StringMap iteration order
  std::vector<std::string> args_;
  Parsed parsed_;
  bool failed_ = false;
  bool exit_ = false;  // a --help or --version action ran
};

void Parser::error(std::string_view arg_name, std::string_view message) {
  output_.err += prog_ + ": for the " + dashed(arg_name) + " option: " + std::string(message) + "\n";
  failed_ = true;
}

void Parser::unknown(const std::string& arg, const std::string& suggestion) {
  output_.err += prog_ + ": Unknown command line argument '" + arg + "'.  Try: '" + inv_.argv0 + " --help'\n";
  if (!suggestion.empty()) output_.err += prog_ + ": Did you mean '" + dashed(suggestion) + "'?\n";
  failed_ = true;
}

// `name` or `name=value`; the name must be spelled in full.
Entry* Parser::lookup_long(std::string_view& name, std::optional<std::string_view>& value) {
  auto eq = name.find('=');
  if (eq == std::string_view::npos) return find(name);
  Entry* e = find(name.substr(0, eq));
  if (!e) return nullptr;
  value = name.substr(eq + 1);
  name = name.substr(0, eq);
  return e;
}

// The longest leading part of `name` that names a grouping (one-letter) option
// or, unless grouping_only, a prefix option.
Entry* Parser::longest_prefix(std::string_view name, std::size_t& length, bool grouping_only) {
  for (std::size_t n = name.size(); n >= 1; --n) {
    Entry* e = find(name.substr(0, n));
    if (e && (n == 1 || (!grouping_only && e->option->prefix))) {
      length = n;
      return e;
    }
  }
  return nullptr;
}

// `-gpsize4` (prefix option) or `-hW` (a group of one-letter options). On
// failure `name` is left as the part LLVM then looks up "Did you mean" for.
Entry* Parser::prefixed_or_grouped(std::string_view& name, std::optional<std::string_view>& value) {
  if (name.size() == 1) return nullptr;
  std::size_t length = 0;
  Entry* e = longest_prefix(name, length, false);
  while (e) {
    std::optional<std::string_view> rest;
    if (length < name.size()) rest = name.substr(length);
    name = name.substr(0, length);
    if (!rest || e->option->prefix) {
      value = rest;
      return e;
    }
    if ((*rest)[0] == '=') {
      value = rest->substr(1);
      return e;
    }
    if (e->expected() == ValueExpected::Required) {
      error(name, "may not occur within a group!");
      return nullptr;
    }
    std::size_t no_steal = args_.size();
    provide(*e, name, std::nullopt, no_steal);
    name = *rest;
    e = longest_prefix(name, length, true);
  }
  return nullptr;
}

void Parser::provide(Entry& e, std::string_view arg_name, std::optional<std::string_view> value, std::size_t& i) {
  switch (e.expected()) {
    case ValueExpected::Required:
      if (!value) {
        if (i + 1 >= args_.size()) return error(arg_name, "requires a value!");
        value = args_[++i];
      }
      break;
    case ValueExpected::Disallowed:
      if (value) return error(arg_name, "does not allow a value! '" + std::string(*value) + "' specified.");
      break;
    case ValueExpected::Optional:
      break;
  }
  // A CommaList occurrence is one value per piece; the pieces after the first
  // do not count as occurrences. The first failing piece ends it.
  std::string_view v = value.value_or("");
  bool more = false;
  for (auto comma = v.find(','); e.option->kind == Kind::CommaList && comma != std::string_view::npos;
       comma = v.find(',')) {
    if (!add_occurrence(e, arg_name, v.substr(0, comma), more, i)) return;
    v.remove_prefix(comma + 1);
    more = true;
  }
  add_occurrence(e, arg_name, v, more, i);
}

bool Parser::add_occurrence(Entry& e, std::string_view arg_name, std::string_view value, bool more,
                            std::size_t pos) {
  auto fail = [&](const std::string& message) {
    error(arg_name, message);
    return false;
  };
  if (!e.option->alias_of.empty()) {  // LLVM reports these under the aliased option's name
    Entry* target = find(e.option->alias_of);
    if (!target) throw std::logic_error("llvmcl: alias of unknown option '" + std::string(e.option->alias_of) + "'");
    return add_occurrence(*target, target->name(), value, more, pos);
  }
  if (!more) ++e.count;
  // LLVM 14 enforces the occurrence counts of scalar options; LLVM 15+ lets
  // the last occurrence win.
  if (tool_.dialect == Dialect::Llvm14 && !e.is_list() && e.count > 1)
    return fail(e.option->required ? "must occur exactly one time!" : "may only occur zero or one times!");
  std::string quoted = "'" + std::string(value) + "'";
  switch (e.option->kind) {
    case Kind::Flag:
    case Kind::HelpFlag:
      if (!parse_bool(value)) return fail(quoted + " is invalid value for boolean argument! Try 0 or 1");
      break;
    case Kind::UInt:
      if (!parse_uint32(value)) return fail(quoted + " value invalid for uint argument!");
      break;
    case Kind::Int:
      if (!parse_int32(value)) return fail(quoted + " value invalid for integer argument!");
      break;
    case Kind::Enum:
      if (std::none_of(e.option->values.begin(), e.option->values.end(),
                       [&](const EnumValue& v) { return v.name == value; }))
        return fail("Cannot find option named " + quoted + "!");
      break;
    default:
      break;
  }
  switch (e.action) {
    case Action::None:
      parsed_.occurrences_.push_back({e.name(), std::string(value), pos});
      return true;
    case Action::Help: output_.out += help(true, false); break;
    case Action::HelpHidden: output_.out += help(true, true); break;
    case Action::HelpList: output_.out += help(false, false); break;
    case Action::HelpListHidden: output_.out += help(false, true); break;
    case Action::Version:
      // LLVM's text, then one line naming offloadtool and the release it impersonates.
      output_.out += fmt::format("{}\noffloadtool " OT_VERSION " as LLVM {} ({})\n", tool_.version,
                                 target::traits(inv_.release).major, inv_.release_why);
      break;
  }
  exit_ = true;  // LLVM prints and exits at once, in the middle of parsing
  return true;
}

// LLVM's nearest option: smallest edit distance to the name (to the part
// before '=' for options that take a value); ties go to the first in the
// option map's iteration order; ReallyHidden options are never suggested.
std::string Parser::nearest(std::string_view name) const {
  auto eq = name.find('=');
  std::string_view lhs = name.substr(0, eq);
  std::string_view rhs = eq == std::string_view::npos ? std::string_view() : name.substr(eq + 1);
  const Entry* best = nullptr;
  std::size_t best_distance = 0;
  std::string suggestion;
  for (const Entry& e : entries_) {
    if (e.option->visibility == Visibility::ReallyHidden) continue;
    bool permits_value = e.expected() != ValueExpected::Disallowed;
    std::size_t d = edit_distance(e.name(), permits_value ? lhs : name);
    if (!best || d < best_distance) {
      best = &e;
      best_distance = d;
      suggestion = std::string(e.name());
      if (!rhs.empty() && permits_value) suggestion += "=" + std::string(rhs);
    }
  }
  return suggestion;
}

std::string Parser::help(bool categorized, bool hidden) const {
  auto shown = [&](const Entry& e) { return listed(*e.option, e.action, categorized, hidden); };
  std::vector<const Entry*> list;
  for (const Entry& e : entries_)
    if (shown(e)) list.push_back(&e);
  std::stable_sort(list.begin(), list.end(), [](const Entry* a, const Entry* b) { return a->name() < b->name(); });

  // An Enum option's values are listed under it as "    =<value>" (cl::values).
  auto value_width = [](const EnumValue& v) { return 5 + v.name.size(); };
  auto width = [&](const Entry& e) {
    std::size_t w = 2 + (e.name().size() == 1 ? 1 : 2) + e.name().size();
    if (e.has_value()) w += e.value_name().size() + 3;
    for (const EnumValue& v : e.option->values) w = std::max(w, value_width(v));
    return w;
  };
  auto arg_width = [](const Entry& e) {
    std::size_t w = 2 + (e.name().size() == 1 ? 1 : 2) + e.name().size();
    return e.has_value() ? w + e.value_name().size() + 3 : w;
  };
  std::size_t max_width = 0;
  for (const Entry* e : list) max_width = std::max(max_width, width(*e));

  auto line = [&](const Entry& e) {
    std::string s = "  " + dashed(e.name());
    if (e.has_value()) {
      bool spaced = tool_.dialect != Dialect::Llvm14 && e.name().size() == 1;  // "-o <file>" (19+), "-o=<file>" (14)
      s += (spaced ? " <" : "=<") + std::string(e.value_name()) + ">";
    }
    std::string_view text = e.option->help;
    auto nl = text.find('\n');
    s += spaces(max_width - arg_width(e)) + " - " + std::string(text.substr(0, nl)) + "\n";
    while (nl != std::string_view::npos && nl + 1 < text.size()) {
      text.remove_prefix(nl + 1);
      nl = text.find('\n');
      s += spaces(max_width + 3) + std::string(text.substr(0, nl)) + "\n";
    }
    for (const EnumValue& v : e.option->values)
      s += "    =" + std::string(v.name) + spaces(max_width - value_width(v)) + " -   " + std::string(v.help) + "\n";
    return s;
  };

  std::string s;
  if (!tool_.overview.empty()) s += "OVERVIEW: " + std::string(tool_.overview) + "\n";
  s += "USAGE: " + prog_ + " [options]";
  if (tool_.positionals != Positionals::None) s += " " + std::string(tool_.positional_help);
  s += "\n\nOPTIONS:\n";
  if (!categorized) {
    for (const Entry* e : list) s += line(*e);
    return s + std::string(tool_.extra_help);
  }

  struct Group {
    std::string_view name, description;
    std::vector<const Entry*> entries;
  };
  std::vector<Group> groups = {{kGenericCategory, "", {}}, {tool_.category, "", {}}};
  for (const Entry* e : list) groups[e->generic ? 0 : 1].entries.push_back(e);
  bool show_empty = hidden && tool_.dialect == Dialect::Llvm14;
  if (show_empty)
    for (const Category& c : kLlvm14EmptyCategories) groups.push_back({c.name, c.description, {}});
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.name < b.name; });
  for (const Group& g : groups) {
    if (g.entries.empty() && !show_empty) continue;
    s += "\n" + std::string(g.name) + ":\n";
    s += g.description.empty() ? "\n" : std::string(g.description) + "\n\n";
    if (g.entries.empty()) s += "  This option category has no options.\n";
    for (const Entry* e : g.entries) s += line(*e);
  }
  return s + std::string(tool_.extra_help);
}

std::variant<Parsed, int> Parser::run() {
  Expander expander(tool_.dialect);
  if (!expander.expand(inv_.args, args_)) {
    // LLVM 19's ParseCommandLineOptions returns false here without exiting and
    // the tools ignore that: they go on with every option at its default.
    output_.err += expander.error() + "\n";
    return std::move(parsed_);
  }

  std::vector<std::size_t> positional_args;
  bool dash_dash = false;
  for (std::size_t i = 0; i < args_.size() && !exit_; ++i) {
    const std::string& arg = args_[i];
    if (dash_dash || arg.size() < 2 || arg[0] != '-') {
      if (tool_.positionals != Positionals::None) positional_args.push_back(i);
      else unknown(arg, "");
      continue;
    }
    if (arg == "--") {
      dash_dash = true;
      continue;
    }
    std::string_view name = std::string_view(arg).substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string_view> value;
    Entry* e = lookup_long(name, value);
    if (!e) e = prefixed_or_grouped(name, value);
    if (exit_) break;
    if (!e) {
      unknown(arg, nearest(name));
      continue;
    }
    provide(*e, name, value, i);
  }
  if (exit_) return 0;

  if (tool_.positionals == Positionals::OneOrMore && positional_args.empty()) {
    output_.err += prog_ + ": Not enough positional command line arguments specified!\n" +
                   "Must specify at least 1 positional argument: See: " + inv_.argv0 + " --help\n";
    failed_ = true;
  } else if (tool_.positionals == Positionals::AtMostOne && positional_args.size() > 1) {
    output_.err += prog_ + ": Too many positional arguments specified!\n" +
                   "Can specify at most 1 positional arguments: See: " + inv_.argv0 + " --help\n";
    failed_ = true;
  } else {
    for (std::size_t i : positional_args) parsed_.occurrences_.push_back({{}, args_[i], i});
  }
  for (const Entry& e : entries_)
    if (e.option->required && e.count == 0) error(e.name(), "must be specified at least once!");
  if (failed_) return 1;

  std::stable_sort(parsed_.occurrences_.begin(), parsed_.occurrences_.end(),
                   [](const Occurrence& a, const Occurrence& b) { return a.position < b.position; });
  for (const Option& o : tool_.options) {
    if (o.kind == Kind::HelpFlag && parsed_.flag(o.name)) {
      output_.out += help(false, false);
      return 0;
    }
  }
  return std::move(parsed_);
}

// ---------------------------------------------------------------------------
// Entry points and results

std::variant<Parsed, int> parse(const Tool& tool, const Invocation& inv, Output& output) {
  return Parser(tool, inv, output).run();
}

std::string help_list_text(const Tool& tool, const Invocation& inv) {
  Output unused;
  return Parser(tool, inv, unused).help_list();
}

// Written here rather than through cli/diagnostics.h: cl's messages have their
// own shapes, and this file then links into the unit tests on its own.
std::variant<Parsed, int> parse(const Tool& tool, const Invocation& inv) {
  Output output;
  auto result = parse(tool, inv, output);
  std::fwrite(output.err.data(), 1, output.err.size(), stderr);
  std::fflush(stderr);
  std::fwrite(output.out.data(), 1, output.out.size(), stdout);
  return result;
}

std::vector<ListedOption> list_options(const Tool& tool) {
  std::vector<ListedOption> out;
  auto add = [&](const Option& o, Action action) {
    bool flag = o.kind == Kind::Flag || o.kind == Kind::HelpFlag;
    out.push_back({&o, dashed(o.name), flag ? "" : std::string(value_name(o)), listed(o, action, true, false)});
  };
  for (const Generic& g : kGeneric) add(g.option, g.action);
  for (const Option& o : tool.options) add(o, Action::None);
  std::stable_sort(out.begin(), out.end(),
                   [](const ListedOption& a, const ListedOption& b) { return a.option->name < b.option->name; });
  return out;
}

namespace {

const Option& find_option(const Tool* tool, std::string_view name) {
  if (tool)
    for (const Option& o : tool->options)
      if (o.name == name) return o;
  throw std::logic_error("llvmcl: no option named '" + std::string(name) + "'");
}

}  // namespace

bool Parsed::given(std::string_view name) const {
  find_option(tool_, name);
  return std::any_of(occurrences_.begin(), occurrences_.end(), [&](const Occurrence& o) { return o.option == name; });
}

std::vector<std::string> Parsed::values(std::string_view name) const {
  find_option(tool_, name);
  std::vector<std::string> out;
  for (const Occurrence& o : occurrences_)
    if (o.option == name) out.push_back(o.value);
  return out;
}

std::optional<std::string> Parsed::value(std::string_view name) const {
  find_option(tool_, name);
  for (auto it = occurrences_.rbegin(); it != occurrences_.rend(); ++it)
    if (it->option == name) return it->value;
  return std::nullopt;
}

bool Parsed::flag(std::string_view name) const {
  auto v = value(name);
  return v && parse_bool(*v).value_or(false);
}

std::optional<std::uint32_t> Parsed::uint_value(std::string_view name) const {
  auto v = value(name);
  return v ? parse_uint32(*v) : std::nullopt;
}

std::optional<std::int32_t> Parsed::int_value(std::string_view name) const {
  auto v = value(name);
  return v ? parse_int32(*v) : std::nullopt;
}

std::vector<std::string> Parsed::positionals() const {
  std::vector<std::string> out;
  for (const Occurrence& o : occurrences_)
    if (o.option.empty()) out.push_back(o.value);
  return out;
}

}  // namespace ot::cli::llvmcl
