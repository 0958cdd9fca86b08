#ifndef LMDB_FLOOR_H
#define LMDB_FLOOR_H
#include <stdint.h>

/* The raw LMDB work of Strata's synthetic ingest: per event an MDB_APPEND put of the envelope and
   body under a big-endian seq, plus the projection's two puts (current state under the object
   key, a history version under object+seq), `batch` events per transaction. Returns 0 or an LMDB
   error code. `nosync` selects MDB_NOSYNC; otherwise every commit is durable. */
int lmdb_floor_ingest(const char *dir, const uint8_t *const *payloads, const uint32_t *sizes,
                      uint64_t events, uint64_t objects, uint32_t batch, int nosync);

#endif
