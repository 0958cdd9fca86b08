#include "lmdb_floor.h"
#include <lmdb.h>
#include <stdio.h>
#include <string.h>

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
            MDB_val ck = {(size_t)ol, okey}, cv = {n + 24, envelope + 136};
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
