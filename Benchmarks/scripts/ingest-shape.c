// The package's ingest floor (Benchmarks/Sources/LMDBFloor: per event the envelope and body
// appended under its seq, the object's 40-byte current state, a history version with the
// document) against the same floor writing the rows Strata's log also keeps per event, with
// nothing else of Strata: the body in `bodies` under its seq and an envelope without it in
// `events`, the id in `ids` (16 bytes, time-ordered, as RandomID makes them), the body's
// SHA-256 prefix in `body-index`, and the SHA-256 of body and envelope computed (the content
// address and the hash chain). Same 20,000 events of about 236 bytes over 2,000 objects as the
// package's workload, durable commits, medians of RUNS.
//
// cc -O2 Benchmarks/scripts/ingest-shape.c -llmdb -lcrypto -o /tmp/ingest-shape && /tmp/ingest-shape [RUNS=5]
#include <lmdb.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { events = 20000, objects = 2000 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void be64(uint8_t *out, uint64_t v) { for (int i = 7; i >= 0; i--) { out[i] = (uint8_t)v; v >>= 8; } }

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define CHECK(x) do { int rc_ = (x); if (rc_) { fprintf(stderr, "%s: %s\n", #x, mdb_strerror(rc_)); exit(1); } } while (0)

static char body[events][256];
static size_t sizes[events];

/// One ingest into a new environment in `dir`; `shaped`: Strata's log rows as well.
static double ingest(const char *dir, uint32_t batch, int shaped) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    if (system(cmd) != 0) exit(1);
    MDB_env *env; MDB_txn *txn; MDB_dbi log, current, history, ids, bodies, index;
    CHECK(mdb_env_create(&env));
    mdb_env_set_maxdbs(env, 8);
    mdb_env_set_mapsize(env, (size_t)8 << 30);
    CHECK(mdb_env_open(env, dir, MDB_NOTLS, 0600));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "events", MDB_CREATE, &log));
    CHECK(mdb_dbi_open(txn, "current", MDB_CREATE, &current));
    CHECK(mdb_dbi_open(txn, "history", MDB_CREATE, &history));
    CHECK(mdb_dbi_open(txn, "ids", MDB_CREATE, &ids));
    CHECK(mdb_dbi_open(txn, "bodies", MDB_CREATE, &bodies));
    CHECK(mdb_dbi_open(txn, "body-index", MDB_CREATE, &index));
    CHECK(mdb_txn_commit(txn));
    uint8_t envelope[160 + 256], okey[32], hkey[48], prev[32] = { 0 };
    memset(envelope, 0x5a, sizeof envelope);
    double start = now();
    for (uint64_t seq = 1; seq <= events;) {
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        for (uint32_t i = 0; i < batch && seq <= events; i++, seq++) {
            const char *b = body[seq - 1];
            size_t n = sizes[seq - 1];
            uint8_t k[8];
            be64(k, seq);
            MDB_val key = { 8, k }, val;
            if (shaped) {
                uint8_t digest[32], id[16];
                SHA256((const uint8_t *)b, n, digest);
                // The envelope names the body by its digest and chains to the one before.
                memcpy(envelope, digest, 32);
                memcpy(envelope + 32, prev, 32);
                SHA256(envelope, 160, prev);
                val = (MDB_val){ 160, envelope };
                CHECK(mdb_put(txn, log, &key, &val, MDB_APPEND));
                MDB_val bv = { n, (void *)b };
                CHECK(mdb_put(txn, bodies, &key, &bv, MDB_APPEND));
                MDB_val ik = { 8, digest }, iv = { 8, k };
                CHECK(mdb_put(txn, index, &ik, &iv, 0));
                // Time first (milliseconds, then a counter), then random bits: version 7.
                be64(id, ((uint64_t)time(NULL) * 1000) << 16 | (seq & 0xffff));
                memcpy(id + 8, digest + 8, 8);
                MDB_val idk = { 16, id };
                CHECK(mdb_put(txn, ids, &idk, &iv, 0));
            } else {
                memcpy(envelope + 160, b, n);
                val = (MDB_val){ 160 + n, envelope };
                CHECK(mdb_put(txn, log, &key, &val, MDB_APPEND));
            }
            int ol = snprintf((char *)okey, sizeof okey, "bench%co%llu", 0, (unsigned long long)((seq - 1) % objects));
            MDB_val ck = { (size_t)ol, okey }, cv = { 40, envelope + 120 };
            CHECK(mdb_put(txn, current, &ck, &cv, 0));
            memcpy(hkey, okey, ol);
            hkey[ol] = 0;
            be64(hkey + ol + 1, seq);
            MDB_val hk = { (size_t)ol + 9, hkey }, hv = { n + 40, (void *)b };
            CHECK(mdb_put(txn, history, &hk, &hv, 0));
        }
        CHECK(mdb_txn_commit(txn));
    }
    double seconds = now() - start;
    mdb_env_close(env);
    return seconds;
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    // The package's bodies: {"id":…,"n":…,"price":…,"f":"x…x"} (SplitMix64 prices there; any here).
    char filler[197];
    memset(filler, 'x', 196);
    filler[196] = 0;
    srand(7);
    for (int i = 0; i < events; i++)
        sizes[i] = (size_t)snprintf(body[i], sizeof body[i], "{\"id\":%d,\"n\":%d,\"price\":%d,\"f\":\"%s\"}", i % objects, i, rand() % 100000, filler);
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/ingest-shape-%d", getpid());
    printf("| per transaction | floor (3 puts) | with Strata's log rows (6 puts, 2 SHA-256) | ratio |\n|---|---|---|---|\n");
    uint32_t batches[] = { 100, 1000, 10000 };
    for (int b = 0; b < 3; b++) {
        double plain[64], shaped[64];
        for (int r = 0; r < runs && r < 64; r++) {
            plain[r] = ingest(dir, batches[b], 0);
            shaped[r] = ingest(dir, batches[b], 1);
        }
        qsort(plain, runs, sizeof(double), by_value);
        qsort(shaped, runs, sizeof(double), by_value);
        printf("| %u | %.0f ms | %.0f ms | %.2f |\n", batches[b], plain[runs / 2] * 1e3, shaped[runs / 2] * 1e3, plain[runs / 2] / shaped[runs / 2]);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf /tmp/ingest-shape-%d", getpid());
    return system(cmd) == 0 ? 0 : 1;
}
