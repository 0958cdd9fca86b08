#ifndef STRATA_JSON_H
#define STRATA_JSON_H
#include <stddef.h>
#include <stdint.h>

/// The text is not JSON: bad grammar, bad UTF-8, or nesting deeper than 512.
#define STRATA_JSON_INVALID (-1)
/// A work buffer could not be allocated.
#define STRATA_JSON_NO_MEMORY (-2)

/// Writes the canonical form of the JSON text `in[0..<len]` to `out` (room for `len` bytes: the
/// canonical form is never longer than the text) and returns its length: the members of every
/// object in the order of their decoded key bytes (the last of equal keys kept), no whitespace,
/// strings escaped canonically (`\"`, `\\`, `\b\f\n\r\t`, other control characters as `\u00xx`,
/// everything else as UTF-8), numbers and literals as written. A UTF-8 byte order mark is skipped.
///
/// Returns STRATA_JSON_INVALID or STRATA_JSON_NO_MEMORY instead (what `out` holds then is
/// unspecified); the offset and reason of a rejection come from StrataJSON's parser. Work buffers
/// are kept per thread between calls (freed when the thread exits, or after a document that grew
/// them past 1 MiB).
ptrdiff_t strata_json_canonicalize(const uint8_t *in, size_t len, uint8_t *out);

/// Whether `b[0..<n]` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF):
/// exactly what Swift's decoding keeps without repairing. 1 or 0.
int strata_utf8_valid(const uint8_t *b, size_t n);

#endif
