#ifndef STRATA_CBROTLI_H
#define STRATA_CBROTLI_H
/* Brotli decoding, opened on first use: a recorded body sent with `Content-Encoding: br` is read
   only to redact it, so libbrotlidec is opened with dlopen by the first `cbrotli_load` rather than
   loaded by every strata process. Only the header is needed at build time. */
#include <stddef.h>
#include <stdint.h>

/* NULL once libbrotlidec.so.1 is loaded and its functions resolved; else what went wrong. */
const char *cbrotli_load(void);

/* Decodes the whole of `input` into a buffer from malloc (`*output`, `*output_size`; the caller
   frees it). Returns 0 when the stream decoded to its end within `limit` bytes, 1 when it is
   corrupt or truncated, 2 when it would exceed `limit` (nothing is returned then). */
int cbrotli_decode(const uint8_t *input, size_t input_size, size_t limit, uint8_t **output, size_t *output_size);

#endif
