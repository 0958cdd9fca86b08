#include "lmdb_floor.h"
#include <lmdb.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void be64(uint8_t *out, uint64_t v) { for (int i = 7; i >= 0; i--) { out[i] = (uint8_t)v; v >>= 8; } }

int lmdb_floor_ingest(const char *dir, const uint8_t *const *payloads, const uint32_t *sizes,
                      uint64_t events, uint64_t objects, uint32_t batch, int nosync) {
    MDB_env *env; MDB_dbi log, current, history; MDB_txn *txn; int rc;
    if ((rc = mdb_env_create(&env))) return rc;
    mdb_env_set_maxdbs(env, 8);
    mdb_env_set_mapsize(env, (size_t)8 << 30);
    if ((rc = mdb_env_open(env, dir, MDB_NOTLS | (nosync ? MDB_NOSYNC : 0), 0600))) { mdb_env_close(env); return rc; }
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) goto out;
    mdb_dbi_open(txn, "events", MDB_CREATE, &log);
    mdb_dbi_open(txn, "current", MDB_CREATE, &current);
    mdb_dbi_open(txn, "history", MDB_CREATE, &history);
    if ((rc = mdb_txn_commit(txn))) goto out;
    uint8_t envelope[160 + 4096], okey[32], hkey[48];
    memset(envelope, 0x5a, 160);
    for (uint64_t seq = 1; seq <= events;) {
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) goto out;
        for (uint32_t i = 0; i < batch && seq <= events; i++, seq++) {
            uint32_t n = sizes[seq - 1] < 4096 ? sizes[seq - 1] : 4096;
            uint8_t k[8]; be64(k, seq);
            memcpy(envelope + 160, payloads[seq - 1], n);
            MDB_val key = {8, k}, val = {160 + n, envelope};
            if ((rc = mdb_put(txn, log, &key, &val, MDB_APPEND))) { mdb_txn_abort(txn); goto out; }
            int ol = snprintf((char *)okey, sizeof okey, "bench%co%llu", 0, (unsigned long long)((seq - 1) % objects));
            MDB_val ck = {(size_t)ol, okey}, cv = {40, envelope + 120};
            if ((rc = mdb_put(txn, current, &ck, &cv, 0))) { mdb_txn_abort(txn); goto out; }
            memcpy(hkey, okey, ol); hkey[ol] = 0; be64(hkey + ol + 1, seq);
            MDB_val hk = {(size_t)ol + 9, hkey}, hv = {n + 40, envelope + 120};
            if ((rc = mdb_put(txn, history, &hk, &hv, 0))) { mdb_txn_abort(txn); goto out; }
        }
        if ((rc = mdb_txn_commit(txn))) goto out;
    }
out:
    mdb_env_close(env);
    return rc;
}

static int open_floor(const char *dir, MDB_env **env, MDB_dbi *log, MDB_dbi *current, MDB_dbi *history) {
    int rc; MDB_txn *txn;
    if ((rc = mdb_env_create(env))) return rc;
    mdb_env_set_maxdbs(*env, 8);
    mdb_env_set_mapsize(*env, (size_t)8 << 30);
    if ((rc = mdb_env_open(*env, dir, MDB_NOTLS, 0600))) { mdb_env_close(*env); return rc; }
    if ((rc = mdb_txn_begin(*env, NULL, 0, &txn))) { mdb_env_close(*env); return rc; }
    mdb_dbi_open(txn, "events", 0, log);
    mdb_dbi_open(txn, "current", 0, current);
    mdb_dbi_open(txn, "history", 0, history);
    if ((rc = mdb_txn_commit(txn))) mdb_env_close(*env);
    return rc;
}

static uint64_t get_be64(const uint8_t *p) { uint64_t v = 0; for (int i = 0; i < 8; i++) v = (v << 8) | p[i]; return v; }

int lmdb_floor_rebuild(const char *dir, uint64_t objects, uint32_t chunk) {
    MDB_env *env; MDB_dbi log, current, history; MDB_txn *txn; MDB_cursor *c; int rc;
    if ((rc = open_floor(dir, &env, &log, &current, &history))) return rc;
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) goto out;
    mdb_drop(txn, current, 0); mdb_drop(txn, history, 0);
    if ((rc = mdb_txn_commit(txn))) goto out;
    uint8_t okey[32], hkey[48], from[8]; uint64_t next = 1;
    for (;;) {
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) goto out;
        if ((rc = mdb_cursor_open(txn, log, &c))) { mdb_txn_abort(txn); goto out; }
        be64(from, next);
        MDB_val key = {8, from}, val; uint32_t done = 0;
        rc = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
        while (rc == 0 && done < chunk) {
            uint64_t seq = get_be64(key.mv_data);
            const uint8_t *v = val.mv_data; size_t n = val.mv_size - 160;
            int ol = snprintf((char *)okey, sizeof okey, "bench%co%llu", 0, (unsigned long long)((seq - 1) % objects));
            MDB_val ck = {(size_t)ol, okey}, cv = {40, (void *)(v + 120)};
            if ((rc = mdb_put(txn, current, &ck, &cv, 0))) break;
            memcpy(hkey, okey, ol); hkey[ol] = 0; be64(hkey + ol + 1, seq);
            MDB_val hk = {(size_t)ol + 9, hkey}, hv = {n + 40, (void *)(v + 120)};
            if ((rc = mdb_put(txn, history, &hk, &hv, 0))) break;
            next = seq + 1; done++;
            rc = mdb_cursor_get(c, &key, &val, MDB_NEXT);
        }
        mdb_cursor_close(c);
        if (rc != 0 && rc != MDB_NOTFOUND) { mdb_txn_abort(txn); goto out; }
        if ((rc = mdb_txn_commit(txn))) goto out;
        if (done < chunk) break;
    }
out:
    mdb_env_close(env);
    return rc;
}

int lmdb_floor_asof(const char *dir, const uint64_t *objects, const uint64_t *seqs, uint64_t count, uint64_t *nanos) {
    MDB_env *env; MDB_dbi log, current, history; MDB_txn *txn; MDB_cursor *c; int rc;
    if ((rc = open_floor(dir, &env, &log, &current, &history))) return rc;
    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn))) goto out;
    if ((rc = mdb_cursor_open(txn, history, &c))) { mdb_txn_abort(txn); goto out; }
    uint8_t hkey[48]; volatile uint8_t sink = 0;
    for (uint64_t i = 0; i < count; i++) {
        struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
        int ol = snprintf((char *)hkey, sizeof hkey, "bench%co%llu", 0, (unsigned long long)objects[i]);
        hkey[ol] = 0; be64(hkey + ol + 1, seqs[i] + 1);
        MDB_val key = {(size_t)ol + 9, hkey}, val;
        int r = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
        r = r == 0 ? mdb_cursor_get(c, &key, &val, MDB_PREV) : mdb_cursor_get(c, &key, &val, MDB_LAST);
        if (r == 0 && key.mv_size == (size_t)ol + 9 && memcmp(key.mv_data, hkey, ol + 1) == 0 && val.mv_size > 0)
            sink ^= ((const uint8_t *)val.mv_data)[val.mv_size - 1];
        clock_gettime(CLOCK_MONOTONIC, &t1);
        nanos[i] = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec);
    }
    (void)sink;
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
out:
    mdb_env_close(env);
    return rc;
}
