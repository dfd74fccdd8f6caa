#include "cli/docs_model.h"

#include <CLI/CLI.hpp>

#include "cli/llvm_cl.h"
#include "cli/run.h"

namespace ot::cli::docs {
namespace {

// A validator's description "{a,b,c}" (CLI::IsMember) names the values an
// option takes; other validators (CLI::Range: "INT in [0 - 256]") name none.
std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> out;
  auto open = type_name.find(":{");
  if (open == std::string::npos || type_name.back() != '}') return out;
  std::string_view list(type_name);
  list = list.substr(open + 2, list.size() - open - 3);
  while (!list.empty()) {
    auto comma = list.find(',');
    out.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

OptionDoc option_doc(const CLI::Option& o) {
  OptionDoc d;
  for (const std::string& s : o.get_snames()) d.names.push_back("-" + s);
  for (const std::string& l : o.get_lnames()) d.names.push_back("--" + l);
  if (d.names.empty()) d.positional = o.get_name(true);
  d.description = o.get_description();
  d.required = o.get_required();
  d.takes_value = o.get_type_size() != 0 && !o.get_type_name().empty();  // as CLI11's help shows a value
  if (d.takes_value) {
    d.optional_value = o.get_expected_min() == 0;
    d.repeatable = o.get_items_expected_max() > 1;
    std::string type = o.get_type_name();
    d.choices = choices_of(type);
    d.value_name = type.substr(0, type.find(':'));
    d.value_name = d.value_name.substr(0, d.value_name.find(' '));  // "INT in [0 - 256]" -> "INT"
    d.value_kind = !d.choices.empty()                                  ? ValueKind::Choice
                   : d.value_name == "INT" || d.value_name == "UINT" ? ValueKind::Number
                                                                       : ValueKind::File;
  }
  return d;
}

CommandDoc app_doc(const CLI::App& app, std::string name, std::string path, std::string summary) {
  CommandDoc d;
  d.name = std::move(name);
  d.path = path;
  d.key = path;
  d.summary = std::move(summary);
  d.description = app.get_description();
  d.footer = app.get_footer();
  // Options first, then positional arguments, each in definition order (as --help lists them).
  for (bool positional : {false, true})
    for (const CLI::Option* o : app.get_options())
      if (!o->get_group().empty() && o->get_positional() == positional &&
          (positional || !o->get_snames().empty() || !o->get_lnames().empty()))
        d.options.push_back(option_doc(*o));
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    d.subcommands.push_back(
        app_doc(*sub, sub->get_name(), path + " " + sub->get_name(), sub->get_description()));
  return d;
}

// The lines "  <value> - <meaning>" of an LLVM help text (-type's) list the values it takes.
std::vector<std::string> llvm_choices(std::string_view help) {
  std::vector<std::string> out;
  while (!help.empty()) {
    auto nl = help.find('\n');
    std::string_view line = help.substr(0, nl);
    help = nl == std::string_view::npos ? std::string_view() : help.substr(nl + 1);
    auto dash = line.find(" - ");
    if (!line.starts_with("  ") || dash == std::string_view::npos) continue;
    std::string_view value = line.substr(0, dash);
    value.remove_prefix(value.find_first_not_of(' '));
    value = value.substr(0, value.find(' '));
    if (!value.empty() && line.substr(2 + value.size(), dash - 2 - value.size()).find_first_not_of(' ') ==
                              std::string_view::npos)
      out.emplace_back(value);
  }
  return out;
}

CommandDoc personality_doc(const Personality& p) {
  const llvmcl::Tool& tool = p.tool(default_release());
  CommandDoc d;
  d.name = std::string(p.name);
  d.path = d.name;
  d.key = d.name;
  d.llvm = true;
  std::string_view overview = tool.overview;
  std::string_view summary = overview.substr(0, overview.find('\n'));
  while (summary.ends_with(' ')) summary.remove_suffix(1);
  d.summary = std::string(summary);
  d.description = std::string(overview);
  std::string_view extra = tool.extra_help;
  while (extra.starts_with('\n')) extra.remove_prefix(1);
  d.footer = std::string(extra);
  for (const llvmcl::ListedOption& l : llvmcl::list_options(tool)) {
    if (l.option->help.empty()) continue;  // libLLVM's options that only change how arguments split
    OptionDoc o;
    o.names = {l.spelling};
    o.description = std::string(l.option->help);
    o.value_name = l.value_name.empty() ? "" : "<" + l.value_name + ">";
    o.takes_value = !l.value_name.empty();
    o.required = l.option->required;
    o.repeatable = l.option->kind == llvmcl::Kind::List || l.option->kind == llvmcl::Kind::CommaList;
    o.in_help = l.in_help;
    o.choices = llvm_choices(l.option->help);
    o.value_kind = !o.choices.empty()                                                           ? ValueKind::Choice
                   : l.option->kind == llvmcl::Kind::UInt || l.option->kind == llvmcl::Kind::Int ? ValueKind::Number
                                                                                                 : ValueKind::File;
    d.options.push_back(std::move(o));
  }
  if (tool.positionals != llvmcl::Positionals::None) {
    OptionDoc o;
    o.positional = tool.positionals == llvmcl::Positionals::OneOrMore ? "input files" : "file";
    o.description = std::string(tool.positional_help);
    o.takes_value = true;
    o.repeatable = tool.positionals == llvmcl::Positionals::OneOrMore;
    o.required = tool.positionals == llvmcl::Positionals::OneOrMore;
    d.options.push_back(std::move(o));
  }
  return d;
}

}  // namespace

CommandDoc describe_offloadtool() {
  CommandDoc d;
  d.name = d.path = d.key = "offloadtool";
  d.summary = std::string(kOffloadtoolSummary);
  for (const TopLevelOption& t : top_level_options()) {
    if (t.description.empty()) continue;  // internal (--generate-docs)
    OptionDoc o;
    for (std::string_view n : t.names)
      if (n.starts_with('-')) o.names.emplace_back(n);
    o.description = std::string(t.description);
    d.options.push_back(std::move(o));
  }
  for (const Applet& a : applets()) {
    CLI::App app;
    AppletBody body = define_applet(a, app, "offloadtool " + std::string(a.name), {default_release(), "the build's default"});
    CommandDoc sub = app_doc(app, std::string(a.name), "offloadtool " + std::string(a.name), std::string(a.summary));
    sub.error_exit = a.error_exit;
    d.subcommands.push_back(std::move(sub));
  }
  for (const Personality& p : personalities()) d.subcommands.push_back(personality_doc(p));
  return d;
}

std::vector<const CommandDoc*> all_commands(const CommandDoc& root) {
  std::vector<const CommandDoc*> out{&root};
  for (const CommandDoc& sub : root.subcommands) {
    auto more = all_commands(sub);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

}  // namespace ot::cli::docs
