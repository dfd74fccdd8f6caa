// The schemas of the --json outputs: THE table (json_schemas.cpp) of every
// JSON object a native applet prints, with its name, the applet, and its
// members. Each writer takes its "schema" value from here (schema_name), and
// `offloadtool --generate-docs` renders the same table as offloadtool-json(7)
// and the JSON OUTPUT section of each applet's page, so that the names, the
// reference and the outputs cannot drift apart.
//
// The convention: the first member of every object is "schema":
// "offloadtool-<output>/<major>", <output> the applet or the applet and what
// it prints ("compress-info"). Within a major, members are only added; a
// renamed, removed or re-meant member, or a renamed schema, is a new major.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace ot::json {

// One value per JSON output, in the table's order (sorted by name).
enum class Schema : std::uint8_t { Compat, CompressInfo, List, PackageList, PruneTree, Prune, Size };

struct SchemaField {
  std::string_view name;     // "entries[].id": member "id" of each object in the array "entries"
  std::string_view meaning;  // may hold '\n' (paragraphs)
};

struct SchemaDoc {
  Schema id;
  std::string_view name;              // the "schema" member's value: "offloadtool-prune/2"
  std::string_view applet;            // the applet whose --json prints it ("package")
  std::string_view command;           // how to get it: "offloadtool package list --json FILE"
  std::string_view summary;           // one line
  std::span<const SchemaField> fields;  // in output order
  std::string_view notes;             // more about the object; may be empty
  std::string_view strings;           // how a byte that is not printable ASCII is written
  std::string_view history;           // the earlier majors and what changed
};

std::span<const SchemaDoc> schemas();  // sorted by name
const SchemaDoc& schema(Schema s);
// The "schema" member's value of output `s`: "offloadtool-prune/2".
std::string_view schema_name(Schema s);
// What every schema follows (paragraphs), for the reference's DESCRIPTION.
std::string_view schema_convention();

}  // namespace ot::json
