// What Strata must do to every fetched or ingested body before it writes a row, in C, in one
// process, on a warm cache: canonicalize it (Strata's own canonicalizer), compress it (zstd at
// Strata's level 3 through a reused context, as BlobCodec does) and SHA-256 it (once for its
// content address; a detail's canonical form is hashed again for its digest). A lower bound on
// the client CPU of a detail and on the writer's share of an ingested event (docs/benchmarks.md).
//
// From the repository's root:
//   cc -O2 -ISources/CStrataJSON/include Benchmarks/scripts/body-work.c
//      Sources/CStrataJSON/canonicalize.c -lzstd -lcrypto -lpthread -o /tmp/body-work
//   /tmp/body-work FILE...
#include "strata_json.h"
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define REPS 7
static uint8_t in[1 << 22], out[1 << 22], z[1 << 23];

int main(int argc, char **argv) {
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    printf("%-40s %8s %14s %12s %12s\n", "file", "bytes", "canonicalize", "zstd 3", "sha-256");
    for (int a = 1; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) { perror(argv[a]); return 1; }
        size_t n = fread(in, 1, sizeof in, f);
        fclose(f);
        int calls = n < 16384 ? 20000 : 500;
        double t[3][REPS];
        for (int r = 0; r < REPS; r++) {
            double s = now();
            for (int i = 0; i < calls; i++)
                if (strata_json_canonicalize(in, n, out) < 0) { fprintf(stderr, "%s: not JSON\n", argv[a]); return 1; }
            t[0][r] = (now() - s) / calls;
            s = now();
            for (int i = 0; i < calls; i++) ZSTD_compressCCtx(cctx, z, sizeof z, in, n, 3);
            t[1][r] = (now() - s) / calls;
            unsigned char h[32];
            s = now();
            for (int i = 0; i < calls; i++) SHA256(in, n, h);
            t[2][r] = (now() - s) / calls;
        }
        for (int k = 0; k < 3; k++) qsort(t[k], REPS, sizeof(double), by_value);
        printf("%-40s %8zu %11.2f µs %9.2f µs %9.2f µs\n", argv[a], n, t[0][REPS / 2] * 1e6, t[1][REPS / 2] * 1e6, t[2][REPS / 2] * 1e6);
    }
    ZSTD_freeCCtx(cctx);
    return 0;
}
