/* The floor for process start: a C program that opens a Strata store's LMDB environment and
 * reads a source's first 10 items as `strata list NAME --limit 10` does (the `order` table's
 * first keys, each key's `current` record, then its `history` row at the changed seq), printing
 * each id and its document's stored size.
 *
 * build: cc -O2 -o start-floor start-floor.c -llmdb
 * usage: start-floor STORE SOURCE */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int varint(const unsigned char **p, const unsigned char *end, uint64_t *out) {
    uint64_t v = 0; int shift = 0;
    while (*p < end) { unsigned char b = *(*p)++; v |= (uint64_t)(b & 0x7f) << shift; if (!(b & 0x80)) { *out = v; return 0; } shift += 7; }
    return -1;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: start-floor STORE SOURCE\n"); return 64; }
    MDB_env *env; MDB_txn *txn; MDB_dbi order, current, history; MDB_cursor *c;
    if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 64) || mdb_env_set_mapsize(env, (size_t)8 << 30)
        || mdb_env_open(env, argv[1], MDB_RDONLY, 0600)) { fprintf(stderr, "cannot open %s\n", argv[1]); return 1; }
    if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) || mdb_dbi_open(txn, "p/items/order", 0, &order)
        || mdb_dbi_open(txn, "p/items/current", 0, &current) || mdb_dbi_open(txn, "p/items/history", 0, &history)) return 1;
    size_t n = strlen(argv[2]);
    unsigned char prefix[512]; memcpy(prefix, argv[2], n); prefix[n] = 0;
    MDB_val k = { n + 1, prefix }, v;
    mdb_cursor_open(txn, order, &c);
    int rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE), shown = 0;
    while (rc == 0 && shown < 10 && k.mv_size > n + 1 && memcmp(k.mv_data, prefix, n + 1) == 0) {
        const unsigned char *nat = (const unsigned char *)k.mv_data + n + 1;
        size_t skip = nat[0] == 0 ? 9 : 1, idlen = k.mv_size - n - 1 - skip;
        unsigned char key[512]; memcpy(key, prefix, n + 1); memcpy(key + n + 1, nat + skip, idlen);
        MDB_val ck = { n + 1 + idlen, key }, cv;
        if (mdb_get(txn, current, &ck, &cv) == 0) {
            const unsigned char *p = cv.mv_data, *end = p + cv.mv_size; uint64_t version, first, changed, seen;
            varint(&p, end, &version); varint(&p, end, &first); varint(&p, end, &changed); varint(&p, end, &seen);
            if (p < end && *p == 0) {
                unsigned char hk[520]; memcpy(hk, key, n + 1 + idlen); hk[n + 1 + idlen] = 0;
                for (int i = 0; i < 8; i++) hk[n + 2 + idlen + i] = (unsigned char)(changed >> (56 - 8 * i));
                MDB_val hv, hkey = { n + 10 + idlen, hk };
                if (mdb_get(txn, history, &hkey, &hv) == 0) { printf("%.*s\t%zu\n", (int)idlen, nat + skip, hv.mv_size); shown++; }
            }
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c); mdb_txn_abort(txn); mdb_env_close(env);
    return shown > 0 ? 0 : 3;
}
