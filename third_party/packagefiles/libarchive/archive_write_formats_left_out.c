/*
 * offloadtool's overlay (our code, not libarchive's). The lean static
 * libarchive builds only the writers prune needs (gnutar, pax, ustar, zip),
 * but archive_write_set_format.c, compiled as Debian ships it for the helper
 * those writers call (__archive_write_entry_filetype_unsupported), names every
 * writer in its table of archive_write_set_format(). The ones left out are
 * defined here to refuse with a message; offloadtool never asks for them.
 */
#include "archive_platform.h"

#include "archive.h"
#include "archive_private.h"

static int
left_out(struct archive *a, const char *writer)
{
	archive_set_error(a, ARCHIVE_ERRNO_MISC,
	    "the %s writer is not built into offloadtool's libarchive", writer);
	return (ARCHIVE_FATAL);
}

#define LEFT_OUT(function, writer) \
	int function(struct archive *a) { return (left_out(a, writer)); }

LEFT_OUT(archive_write_set_format_7zip, "7-Zip")
LEFT_OUT(archive_write_set_format_cpio, "cpio")
LEFT_OUT(archive_write_set_format_cpio_bin, "cpio (binary)")
LEFT_OUT(archive_write_set_format_cpio_pwb, "cpio (PWB)")
LEFT_OUT(archive_write_set_format_cpio_odc, "cpio (odc)")
LEFT_OUT(archive_write_set_format_cpio_newc, "cpio (newc)")
LEFT_OUT(archive_write_set_format_iso9660, "ISO 9660")
LEFT_OUT(archive_write_set_format_mtree, "mtree")
LEFT_OUT(archive_write_set_format_raw, "raw")
LEFT_OUT(archive_write_set_format_shar, "shar")
LEFT_OUT(archive_write_set_format_shar_dump, "shar (dump)")
LEFT_OUT(archive_write_set_format_warc, "WARC")
LEFT_OUT(archive_write_set_format_xar, "xar")
