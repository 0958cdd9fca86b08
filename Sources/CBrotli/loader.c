#include "CBrotli.h"
#include "library_loader.h"
#include <brotli/decode.h>
#include <stdlib.h>
#include <string.h>

static struct {
    BrotliDecoderState *(*CreateInstance)(brotli_alloc_func, brotli_free_func, void *);
    BrotliDecoderResult (*DecompressStream)(BrotliDecoderState *, size_t *, const uint8_t **, size_t *, uint8_t **, size_t *);
    void (*DestroyInstance)(BrotliDecoderState *);
} f;

static struct strata_library lib = STRATA_LIBRARY("libbrotlidec.so.1", "install libbrotli1");

#define RESOLVE(field) strata_library_resolve(&lib, (void **)&f.field, "BrotliDecoder" #field)

static void load(void) {
    strata_library_open(&lib, NULL);
    RESOLVE(CreateInstance); RESOLVE(DecompressStream); RESOLVE(DestroyInstance);
}

const char *cbrotli_load(void) { return strata_library_load(&lib, load); }

int cbrotli_decode(const uint8_t *input, size_t input_size, size_t limit, uint8_t **output, size_t *output_size) {
    *output = NULL;
    *output_size = 0;
    BrotliDecoderState *s = f.CreateInstance(NULL, NULL, NULL);
    if (!s) return 1;
    size_t capacity = input_size * 4 + 4096;
    if (capacity > limit + 1) capacity = limit + 1;
    uint8_t *buffer = malloc(capacity);
    size_t used = 0;
    int rc = 1;
    const uint8_t *next_in = input;
    size_t avail_in = input_size;
    while (buffer) {
        uint8_t *next_out = buffer + used;
        size_t avail_out = capacity - used;
        BrotliDecoderResult r = f.DecompressStream(s, &avail_in, &next_in, &avail_out, &next_out, NULL);
        used = (size_t)(next_out - buffer);
        if (used > limit) { rc = 2; break; }
        if (r == BROTLI_DECODER_RESULT_SUCCESS) { rc = avail_in == 0 ? 0 : 1; break; }
        if (r != BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) break; /* an error, or input that ends early */
        if (capacity > limit) { rc = 2; break; }
        size_t grown = capacity * 2 > limit + 1 ? limit + 1 : capacity * 2;
        uint8_t *bigger = realloc(buffer, grown);
        if (!bigger) break;
        buffer = bigger;
        capacity = grown;
    }
    f.DestroyInstance(s);
    if (rc != 0) { free(buffer); return rc; }
    *output = buffer;
    *output_size = used;
    return 0;
}
