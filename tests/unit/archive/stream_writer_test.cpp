#include "archive/stream_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "support/md5.h"
#include "support/sha256.h"

using namespace ot;

namespace {

// A tar (or zip) of one regular file "d/f" holding `body`, with fixed owner,
// mode and time, written by StreamWriter.
std::vector<std::byte> one_file(int format, ot::archive::Compression c, std::string_view body) {
  std::vector<std::byte> out;
  ot::archive::StreamWriter w({format, c, 0, 2}, [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); }, "t.tar");
  ::archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, "d/f");
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0640);
  archive_entry_set_uid(e, 1000);
  archive_entry_set_mtime(e, 1700000000, 0);
  w.header(e, body.size());
  archive_entry_free(e);
  w.data(as_bytes(body));
  w.finish();
  return out;
}

}  // namespace

TEST_CASE("wheel RECORD hashes: sha256 in URL-safe base64 without padding (hashlib's values)") {
  Sha256 empty;
  CHECK(empty.record_hash() == "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
  Sha256 abc;
  abc.update(as_bytes(std::string_view("abc")));
  CHECK(abc.record_hash() == "sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  Md5 m;
  m.update(as_bytes(std::string_view("abc")));
  CHECK(m.hex() == "900150983cd24fb0d6963f7d28e17f72");  // md5sum's value (RFC 1321)
}

TEST_CASE("stream writer: no clock in the output; the same input gives the same bytes") {
  const std::vector<std::byte> gz = one_file(ARCHIVE_FORMAT_TAR_GNUTAR, ot::archive::Compression::Gzip, "hello\n");
  REQUIRE(gz.size() > 10);
  CHECK(gz[0] == std::byte{0x1f});
  CHECK(gz[1] == std::byte{0x8b});
  // RFC 1952: MTIME (bytes 4-7) 0 means no time stamp is available
  CHECK((gz[4] == std::byte{0} && gz[5] == std::byte{0} && gz[6] == std::byte{0} && gz[7] == std::byte{0}));
  for (ot::archive::Compression c : {ot::archive::Compression::None, ot::archive::Compression::Gzip, ot::archive::Compression::Bzip2,
                                 ot::archive::Compression::Xz, ot::archive::Compression::Zstd})
    CHECK(one_file(ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE, c, "x") == one_file(ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE, c, "x"));
  const std::vector<std::byte> tar = one_file(ARCHIVE_FORMAT_TAR_GNUTAR, ot::archive::Compression::None, "x");
  CHECK(tar.size() % 10240 == 0);  // whole records, as GNU tar writes them
  CHECK(as_chars(Bytes(tar).subspan(257, 8)) == std::string_view("ustar  \0", 8));  // GNU's magic
  const std::vector<std::byte> zip = one_file(ARCHIVE_FORMAT_ZIP, ot::archive::Compression::None, "x");
  CHECK(as_chars(Bytes(zip).first(4)) == "PK\x03\x04");
}

TEST_CASE("stream writer: what the sink throws comes out of the writer, not through libarchive") {
  bool threw = false;
  try {
    ot::archive::StreamWriter w({ARCHIVE_FORMAT_TAR_USTAR, ot::archive::Compression::None, 0, 2},
                            [](Bytes) { throw std::runtime_error("disk full"); }, "t.tar");
    ::archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, "f");
    archive_entry_set_filetype(e, AE_IFREG);
    w.header(e, 20000);
    archive_entry_free(e);
    std::string big(20000, 'a');
    w.data(as_bytes(big));
    w.finish();
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()) == "disk full";
  }
  CHECK(threw);
}

TEST_CASE("copy_format: ustar is copied as pax; cpio is not written") {
  CHECK(ot::archive::copy_format(ARCHIVE_FORMAT_TAR_USTAR) == ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE);
  CHECK(ot::archive::copy_format(ARCHIVE_FORMAT_TAR_GNUTAR) == ARCHIVE_FORMAT_TAR_GNUTAR);
  CHECK(ot::archive::copy_format(ARCHIVE_FORMAT_ZIP) == ARCHIVE_FORMAT_ZIP);
  CHECK(ot::archive::copy_format(ARCHIVE_FORMAT_CPIO_SVR4_NOCRC) == 0);
}

TEST_CASE("stream writer: a new member takes its owner and times from another, its own name, type, mode and size") {
  std::vector<std::byte> out;
  {
    ot::archive::StreamWriter w({ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE, ot::archive::Compression::None, 0, 2},
                                [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); }, "t.tar");
    ::archive_entry* like = archive_entry_new();
    archive_entry_set_pathname(like, "./lib/libk.so");
    archive_entry_set_filetype(like, AE_IFLNK);  // not taken: type, link target, mode
    archive_entry_set_symlink(like, "elsewhere");
    archive_entry_set_perm(like, 0777);
    archive_entry_set_uid(like, 1000);
    archive_entry_set_gid(like, 100);
    archive_entry_set_uname(like, "builder");
    archive_entry_set_gname(like, "staff");
    archive_entry_set_mtime(like, 1700000000, 0);
    w.new_header(like, "./.kpack/", true, 0755, 0);
    w.new_header(like, "./.kpack/k_gfx906.kpack", false, 0644, 3);
    archive_entry_free(like);
    w.data(as_bytes(std::string_view("abc")));
    w.finish();
  }
  ::archive* r = archive_read_new();
  archive_read_support_format_tar(r);  // (the static build's libarchive has the formats offloadtool reads, not _all)
  REQUIRE(archive_read_open_memory(r, out.data(), out.size()) == ARCHIVE_OK);
  ::archive_entry* e = nullptr;
  REQUIRE(archive_read_next_header(r, &e) == ARCHIVE_OK);
  CHECK(std::string(archive_entry_pathname(e)) == "./.kpack/");
  CHECK(archive_entry_filetype(e) == AE_IFDIR);
  CHECK(archive_entry_perm(e) == 0755);
  CHECK(archive_entry_uid(e) == 1000);
  CHECK(std::string(archive_entry_gname(e)) == "staff");
  CHECK(archive_entry_mtime(e) == 1700000000);
  REQUIRE(archive_read_next_header(r, &e) == ARCHIVE_OK);
  CHECK(std::string(archive_entry_pathname(e)) == "./.kpack/k_gfx906.kpack");
  CHECK(archive_entry_filetype(e) == AE_IFREG);
  CHECK(archive_entry_perm(e) == 0644);
  CHECK(archive_entry_size(e) == 3);
  CHECK(archive_entry_symlink(e) == nullptr);
  CHECK(archive_entry_gid(e) == 100);
  CHECK(std::string(archive_entry_uname(e)) == "builder");
  CHECK(archive_entry_mtime(e) == 1700000000);
  char buf[8] = {};
  CHECK(archive_read_data(r, buf, sizeof buf) == 3);
  CHECK(std::string(buf) == "abc");
  CHECK(archive_read_next_header(r, &e) == ARCHIVE_EOF);
  archive_read_free(r);
}
