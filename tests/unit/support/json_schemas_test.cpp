#include "support/json_schemas.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace ot;

// The names scripts check: changing one is a new major (docs/json-schemas.md).
TEST_CASE("json schemas: the names the writers print") {
  CHECK(json::schema_name(json::Schema::Compat) == "offloadtool-compat/1");
  CHECK(json::schema_name(json::Schema::CompressInfo) == "offloadtool-compress-info/2");
  CHECK(json::schema_name(json::Schema::List) == "offloadtool-list/2");
  CHECK(json::schema_name(json::Schema::PackageList) == "offloadtool-package-list/2");
  CHECK(json::schema_name(json::Schema::Prune) == "offloadtool-prune/2");
  CHECK(json::schema_name(json::Schema::PruneTree) == "offloadtool-prune-tree/1");
  CHECK(json::schema_name(json::Schema::Size) == "offloadtool-size/1");
  CHECK(json::schemas().size() == 7);
}

TEST_CASE("json schemas: every one documented whole") {
  for (const json::SchemaDoc& s : json::schemas()) {
    CAPTURE(s.name);
    CHECK(&json::schema(s.id) == &s);
    CHECK(!s.applet.empty());
    CHECK(s.command.starts_with("offloadtool " + std::string(s.applet) + " "));
    CHECK(s.command.find("--json") != std::string_view::npos);
    CHECK(!s.summary.empty());
    CHECK(!s.summary.ends_with("."));
    CHECK(!s.strings.empty());
    CHECK(s.history.ends_with("."));
    std::set<std::string_view> names;
    for (const json::SchemaField& f : s.fields) {
      CAPTURE(f.name);
      CHECK(names.insert(f.name).second);  // each member once
      CHECK(!f.meaning.empty());
      CHECK(f.name != "version");  // the major is in the name (no second place for it)
    }
  }
}
