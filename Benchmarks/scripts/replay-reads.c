// Times the reads layout-bounds.py --dump wrote: each read's zstd decompressions, each with the
// output of an earlier one as its prefix (ZSTD_DCtx_refPrefix, as the store reads its chains),
// one context for all, outputs into buffers reused from read to read. Prints p50 and p99 per
// kind of read (a body from the shared layout's window, the same body from the chains, an item
// from its window, a block of the item history's rows now), after one pass to warm up.
//
// cc -O2 -o replay-reads Benchmarks/scripts/replay-reads.c -lzstd && ./replay-reads FILE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

typedef struct { uint32_t frame; int32_t prefix; } Step;
typedef struct { uint32_t count; Step *steps; } Read;

static unsigned char *data;
static size_t length, at;

static uint32_t u32(void) {
    if (at + 4 > length) { fprintf(stderr, "replay-reads: the file is truncated\n"); exit(2); }
    uint32_t v;
    memcpy(&v, data + at, 4);
    at += 4;
    return v;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: replay-reads FILE\n"); return 2; }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    fseek(f, 0, SEEK_END);
    length = (size_t)ftell(f);
    rewind(f);
    data = malloc(length);
    if (fread(data, 1, length, f) != length) { perror(argv[1]); return 2; }
    fclose(f);

    uint32_t frames = u32();
    unsigned char **frame = malloc(frames * sizeof *frame);
    size_t *frameLength = malloc(frames * sizeof *frameLength), *size = malloc(frames * sizeof *size);
    size_t largest = 0;
    for (uint32_t i = 0; i < frames; i++) {
        frameLength[i] = u32();
        if (at + frameLength[i] > length) { fprintf(stderr, "replay-reads: the file is truncated\n"); return 2; }
        frame[i] = data + at;
        at += frameLength[i];
        unsigned long long n = ZSTD_getFrameContentSize(frame[i], frameLength[i]);
        if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR) { fprintf(stderr, "replay-reads: frame %u has no content size\n", i); return 2; }
        size[i] = (size_t)n;
        if (size[i] > largest) largest = size[i];
    }
    const char *kinds[] = {"body from its window", "body from the chains", "item from its window", "block of the item history's rows"};
    ZSTD_DCtx *context = ZSTD_createDCtx();
    size_t buffers = 0;
    unsigned char **output = NULL;
    for (int kind = 0; kind < 4; kind++) {
        uint32_t count = u32();
        Read *reads = calloc(count ? count : 1, sizeof *reads);
        for (uint32_t r = 0; r < count; r++) {
            reads[r].count = u32();
            reads[r].steps = malloc((reads[r].count ? reads[r].count : 1) * sizeof(Step));
            for (uint32_t s = 0; s < reads[r].count; s++) {
                reads[r].steps[s].frame = u32();
                reads[r].steps[s].prefix = (int32_t)u32();
                if (reads[r].steps[s].frame >= frames || reads[r].steps[s].prefix >= (int32_t)s) { fprintf(stderr, "replay-reads: a step names what is not there\n"); return 2; }
            }
            if (reads[r].count > buffers) {
                output = realloc(output, reads[r].count * sizeof *output);
                for (size_t b = buffers; b < reads[r].count; b++) output[b] = malloc(largest);
                buffers = reads[r].count;
            }
        }
        double *took = malloc((count ? count : 1) * sizeof *took);
        for (int pass = 0; pass < 2; pass++) {
            for (uint32_t r = 0; r < count; r++) {
                double started = now();
                for (uint32_t s = 0; s < reads[r].count; s++) {
                    Step step = reads[r].steps[s];
                    if (step.prefix >= 0) ZSTD_DCtx_refPrefix(context, output[step.prefix], size[reads[r].steps[step.prefix].frame]);
                    size_t n = ZSTD_decompressDCtx(context, output[s], largest, frame[step.frame], frameLength[step.frame]);
                    if (ZSTD_isError(n) || n != size[step.frame]) { fprintf(stderr, "replay-reads: %s\n", ZSTD_getErrorName(n)); return 1; }
                }
                took[r] = now() - started;
            }
        }
        qsort(took, count, sizeof *took, compare);
        if (count) printf("  %s: p50 %.0f µs, p99 %.0f µs (%u reads)\n", kinds[kind], took[count / 2] * 1e6, took[(size_t)((count - 1) * 0.99)] * 1e6, count);
    }
    return 0;
}
