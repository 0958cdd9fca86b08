#ifndef LMDB_FLOOR_H
#define LMDB_FLOOR_H
#include <stdint.h>

/* The raw LMDB work of Strata's synthetic ingest: per event an MDB_APPEND put of the envelope and
   body under a big-endian seq, plus the projection's two puts (a 40-byte current state under the
   object key, as Strata keeps: counters and a digest, not the document; a history version with
   the document under object+seq), `batch` events per transaction. Returns 0 or an LMDB
   error code. `nosync` selects MDB_NOSYNC; otherwise every commit is durable. */
int lmdb_floor_ingest(const char *dir, const uint8_t *const *payloads, const uint32_t *sizes,
                      uint64_t events, uint64_t objects, uint32_t batch, int nosync);

/* The raw LMDB work of a rebuild of that store: empty current and history, then read every logged
   event with a cursor and redo the projection's two puts, `chunk` events per durable transaction
   (as Strata's rebuild commits). Returns 0 or an LMDB error code. */
int lmdb_floor_rebuild(const char *dir, uint64_t objects, uint32_t chunk);

/* The raw LMDB work of `count` as-of reads on that store: for object keys[i] at seq seqs[i], one
   MDB_SET_RANGE past (object, seq) then MDB_PREV within one read transaction, touching the value.
   Writes each read's nanoseconds to nanos[i]. Returns 0 or an LMDB error code. */
int lmdb_floor_asof(const char *dir, const uint64_t *objects, const uint64_t *seqs, uint64_t count, uint64_t *nanos);

#endif
