// The canonical form of a JSON text in one pass, for the documents Strata stores (every fetched
// body and every ingested document is canonicalized before it is hashed). It returns the same
// bytes as the canonical writer of a parsed tree (`JSONValue.canonicalBytes`), except that keys are
// told apart by their bytes, not by Unicode equivalence. Errors are only reported as such: the
// Swift parser finds the offset and reason of a rejected text.
//
// Members are written in input order as they are read; an object whose keys were not already in
// increasing byte order is rewritten in place, its member texts sorted through a scratch buffer.
// Output never runs ahead of input (whitespace goes, escapes shrink or stay, everything else is
// copied), so `out`, with room for the input's length, needs no bounds checks beyond that.
#include "strata_json.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { max_depth = 512, keep_bytes = 1 << 20 };

/// A member of an object being written: its decoded key and the offsets in `out` of its whole
/// `"key":value` text. A plain key is read where the input has it; a key with escapes is decoded
/// into `tls.keys` (at `key_at`), whose storage may move until the object's members are sorted.
typedef struct {
    const uint8_t *key; // plain keys; escaped ones once their object is complete
    size_t key_at;
    size_t key_len;
    size_t start, end;
    int escaped;
} member;

/// Work buffers kept per thread between documents (grown as needed, dropped past `keep_bytes`).
typedef struct {
    member *members;
    size_t member_cap;
    uint8_t *scratch; // an unordered object's texts while they are written back in key order
    size_t scratch_cap;
    uint8_t *decoded; // a string's bytes with its escapes decoded
    size_t decoded_cap;
    uint8_t *keys; // decoded keys that had escapes, for the objects being written
    size_t keys_cap;
} buffers;

static __thread buffers tls;
static __thread int tls_registered;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void drop(buffers *b) {
    free(b->members); free(b->scratch); free(b->decoded); free(b->keys);
    *b = (buffers){ 0 };
}

/// A thread's buffers are freed when it exits (the key's value is that thread's `tls`).
static void drop_at_exit(void *b) { drop(b); }
static void make_key(void) { (void)pthread_key_create(&tls_key, drop_at_exit); }

typedef struct {
    const uint8_t *p, *end;
    uint8_t *out, *o, *out_end;
    size_t members; // members stacked in tls.members
    size_t keys;    // bytes used in tls.keys
    int depth;
} state;

#define BAD STRATA_JSON_INVALID
#define NOMEM STRATA_JSON_NO_MEMORY
/// Passes a failure (its code) up.
#define TRY(x) do { int r_ = (x); if (r_) return r_; } while (0)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

static int grow(void **buf, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    if (!tls_registered) {
        tls_registered = 1;
        (void)pthread_once(&tls_once, make_key);
        (void)pthread_setspecific(tls_key, &tls);
    }
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *b = realloc(*buf, c * size);
    if (!b) return NOMEM;
    *buf = b;
    *cap = c;
    return 0;
}

static inline void skip_ws(state *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++;
}

/// Strict UTF-8 (Unicode's well-formed sequences: no overlongs, surrogates or values past U+10FFFF),
/// as Swift's decoding repairs it.
static int valid_utf8(const uint8_t *b, size_t n) {
    size_t i = 0;
    while (i < n) {
#if defined(__SSE2__)
        // ASCII sixteen bytes at a time.
        while (n - i >= 16 && _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(b + i))) == 0) i += 16;
        if (i >= n) break;
#endif
        uint8_t c = b[i];
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (b[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n) return 0;
            uint8_t c1 = b[i + 1], c2 = b[i + 2];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && c1 < 0xA0) return 0;
            if (c == 0xED && c1 > 0x9F) return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n) return 0;
            uint8_t c1 = b[i + 1], c2 = b[i + 2], c3 = b[i + 3];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80 || (c3 & 0xC0) != 0x80) return 0;
            if (c == 0xF0 && c1 < 0x90) return 0;
            if (c == 0xF4 && c1 > 0x8F) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

int strata_utf8_valid(const uint8_t *b, size_t n) { return valid_utf8(b, n); }

/// The first quote, backslash or control character in `p..<end` (or `end`): the end of a run
/// a string holds as it is, sixteen bytes at a time; sets `*high` when a byte on the way is not
/// ASCII (unless `high` is NULL).
static inline const uint8_t *plain_run(const uint8_t *p, const uint8_t *end, int *high) {
    int h = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                       _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
        unsigned mask = (unsigned)_mm_movemask_epi8(special), top = (unsigned)_mm_movemask_epi8(v);
        if (mask) {
            unsigned k = (unsigned)__builtin_ctz(mask);
            if (high) *high = h | ((top & ((1u << k) - 1)) != 0);
            return p + k;
        }
        h |= top != 0;
        p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20) { h |= *p >= 0x80; p++; }
    if (high) *high = h;
    return p;
}

/// Moves the cursor from an opening quote to the first quote, backslash or control character
/// after it; sets `*high` when a byte on the way is not ASCII.
static inline void scan_string(state *s, int *high) { s->p = plain_run(s->p + 1, s->end, high); }

/// Copies `n` bytes to the output; `src_end` bounds what may be read past them. A short copy is
/// one 16-byte move when both sides have room (a call to memcpy costs more than the bytes).
static inline void put(state *s, const uint8_t *src, size_t n, const uint8_t *src_end) {
#if defined(__SSE2__)
    if (n <= 16 && src_end - src >= 16 && s->out_end - s->o >= 16) {
        _mm_storeu_si128((__m128i *)s->o, _mm_loadu_si128((const __m128i *)src));
        s->o += n;
        return;
    }
#endif
    (void)src_end;
    memcpy(s->o, src, n);
    s->o += n;
}

static int hex4(state *s, uint32_t *v) {
    if (s->end - s->p < 4) return BAD;
    uint32_t r = 0;
    for (int k = 0; k < 4; k++) {
        uint8_t c = *s->p++;
        uint32_t d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return BAD;
        r = r << 4 | d;
    }
    *v = r;
    return 0;
}

/// The rest of a string from its first backslash (the cursor), its plain start at `start`: the
/// bytes decoded (left in `tls.decoded`, their count in `*decoded`), checked as UTF-8, and written
/// with canonical escapes.
static int escaped_string(state *s, const uint8_t *start, size_t *decoded) {
    size_t cap = (size_t)(s->end - start);
    TRY(grow((void **)&tls.decoded, &tls.decoded_cap, cap, 1));
    uint8_t *d = tls.decoded;
    size_t n = (size_t)(s->p - start);
    memcpy(d, start, n);
    for (;;) {
        // The run up to the next escape as it is (long texts have a few escapes).
        const uint8_t *q = plain_run(s->p, s->end, NULL);
        memcpy(d + n, s->p, (size_t)(q - s->p));
        n += (size_t)(q - s->p);
        s->p = q;
        if (s->p >= s->end) return BAD;
        uint8_t c = *s->p;
        if (c == '"') { s->p++; break; }
        if (c < 0x20) return BAD;
        s->p++;
        if (s->p >= s->end) return BAD;
        uint8_t e = *s->p++;
        switch (e) {
        case '"': d[n++] = '"'; break;
        case '\\': d[n++] = '\\'; break;
        case '/': d[n++] = '/'; break;
        case 'b': d[n++] = 8; break;
        case 'f': d[n++] = 12; break;
        case 'n': d[n++] = 10; break;
        case 'r': d[n++] = 13; break;
        case 't': d[n++] = 9; break;
        case 'u': {
            uint32_t u;
            if (hex4(s, &u)) return BAD;
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u') return BAD;
                s->p += 2;
                uint32_t low;
                if (hex4(s, &low) || low < 0xDC00 || low > 0xDFFF) return BAD;
                u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
            } else if (u >= 0xDC00 && u <= 0xDFFF) {
                return BAD;
            }
            // Never longer than the escape it came from (6 bytes, or 12 for a pair).
            if (u < 0x80) {
                d[n++] = (uint8_t)u;
            } else if (u < 0x800) {
                d[n++] = (uint8_t)(0xC0 | u >> 6);
                d[n++] = (uint8_t)(0x80 | (u & 0x3F));
            } else if (u < 0x10000) {
                d[n++] = (uint8_t)(0xE0 | u >> 12);
                d[n++] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
                d[n++] = (uint8_t)(0x80 | (u & 0x3F));
            } else {
                d[n++] = (uint8_t)(0xF0 | u >> 18);
                d[n++] = (uint8_t)(0x80 | ((u >> 12) & 0x3F));
                d[n++] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
                d[n++] = (uint8_t)(0x80 | (u & 0x3F));
            }
            break;
        }
        default: return BAD;
        }
    }
    if (!valid_utf8(d, n)) return BAD;
    *decoded = n;
    static const char hex[] = "0123456789abcdef";
    uint8_t *o = s->o;
    *o++ = '"';
    for (size_t i = 0; i < n;) {
        // What needs no escape is the same set a plain run stops at.
        const uint8_t *q = plain_run(d + i, d + n, NULL);
        size_t k = (size_t)(q - (d + i));
        memcpy(o, d + i, k);
        o += k;
        i += k;
        if (i >= n) break;
        uint8_t c = d[i++];
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case 8: *o++ = 'b'; break;
        case 12: *o++ = 'f'; break;
        default: *o++ = 'u'; *o++ = '0'; *o++ = '0'; *o++ = (uint8_t)hex[c >> 4]; *o++ = (uint8_t)hex[c & 15];
        }
    }
    *o++ = '"';
    s->o = o;
    return 0;
}

/// A string at the cursor; for a key (`m`), where its decoded bytes are.
static inline int string(state *s, member *m) {
    const uint8_t *start = s->p + 1;
    int high;
    scan_string(s, &high);
    if (UNLIKELY(s->p >= s->end)) return BAD;
    if (*s->p == '"') {
        size_t n = (size_t)(s->p - start);
        if (UNLIKELY(high) && !valid_utf8(start, n)) return BAD;
        s->p++;
        // The quotes and bytes as they are: a plain string is its own canonical form.
        put(s, start - 1, n + 2, s->end);
        if (m) { m->key = start; m->key_len = n; m->escaped = 0; }
        return 0;
    }
    if (*s->p != '\\') return BAD; // a control character
    size_t n;
    TRY(escaped_string(s, start, &n));
    if (m) {
        TRY(grow((void **)&tls.keys, &tls.keys_cap, s->keys + n, 1));
        memcpy(tls.keys + s->keys, tls.decoded, n);
        m->key = NULL;
        m->key_at = s->keys;
        m->key_len = n;
        m->escaped = 1;
        s->keys += n;
    }
    return 0;
}

static inline int is_digit(const state *s, const uint8_t *p) { return p < s->end && *p >= '0' && *p <= '9'; }

static int number(state *s) {
    const uint8_t *start = s->p, *p = s->p;
    if (*p == '-') p++;
    if (!is_digit(s, p)) return BAD;
    if (*p == '0') {
        p++;
        if (is_digit(s, p)) return BAD;
    } else {
        while (is_digit(s, p)) p++;
    }
    if (p < s->end && *p == '.') {
        p++;
        if (!is_digit(s, p)) return BAD;
        while (is_digit(s, p)) p++;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < s->end && (*p == '+' || *p == '-')) p++;
        if (!is_digit(s, p)) return BAD;
        while (is_digit(s, p)) p++;
    }
    s->p = p;
    put(s, start, (size_t)(p - start), s->end);
    return 0;
}

static int literal(state *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return BAD;
    put(s, s->p, n, s->end);
    s->p += n;
    return 0;
}

static inline const uint8_t *key_of(const member *m) { return m->escaped ? tls.keys + m->key_at : m->key; }

/// Byte order of decoded keys (RFC 8259 leaves order open; canonical form sorts by UTF-8).
static inline int compare_keys(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    size_t n = an < bn ? an : bn;
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i]) return (int)a[i] - (int)b[i];
    }
    return an < bn ? -1 : an > bn ? 1 : 0;
}

/// Two members of an object being read (escaped keys found through `tls.keys`).
static inline int compare_reading(const member *a, const member *b) {
    return compare_keys(key_of(a), a->key_len, key_of(b), b->key_len);
}

/// Two members of a complete object (every `key` set).
static inline int compare(const member *a, const member *b) {
    return compare_keys(a->key, a->key_len, b->key, b->key_len);
}

/// Key order, then input order (so equal keys stay in input order and the sort is total).
static int less(const member *a, const member *b) {
    int c = compare(a, b);
    return c < 0 || (c == 0 && a->start < b->start);
}

static int by_key(const void *a, const void *b) { return less(a, b) ? -1 : less(b, a) ? 1 : 0; }

/// Rewrites the object's members (`list[0..<count]`, written from `from`) in key order, keeping the
/// last of equal keys.
static int reorder(state *s, member *list, size_t count, size_t from) {
    for (size_t i = 0; i < count; i++) {
        if (list[i].escaped) list[i].key = tls.keys + list[i].key_at;
    }
    if (count <= 16) {
        for (size_t i = 1; i < count; i++) {
            member m = list[i];
            size_t j = i;
            while (j > 0 && less(&m, &list[j - 1])) { list[j] = list[j - 1]; j--; }
            list[j] = m;
        }
    } else {
        qsort(list, count, sizeof(member), by_key);
    }
    size_t n = (size_t)(s->o - s->out) - from;
    if (UNLIKELY(n + 16 > tls.scratch_cap)) TRY(grow((void **)&tls.scratch, &tls.scratch_cap, n + 16, 1));
    memcpy(tls.scratch, s->out + from, n);
    s->o = s->out + from;
    int first = 1;
    for (size_t i = 0; i < count; i++) {
        if (i + 1 < count && compare(&list[i], &list[i + 1]) == 0) continue; // a later one wins
        if (!first) *s->o++ = ',';
        first = 0;
        put(s, tls.scratch + (list[i].start - from), list[i].end - list[i].start, tls.scratch + n + 16);
    }
    return 0;
}

static int value(state *s);

static int object(state *s) {
    if (++s->depth > max_depth) return BAD;
    s->p++;
    size_t from = (size_t)(s->o - s->out) + 1;
    *s->o++ = '{';
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') { s->p++; s->depth--; *s->o++ = '}'; return 0; }
    size_t base = s->members, keys = s->keys;
    int ordered = 1;
    for (;;) {
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"') return BAD;
        if (s->members > base) *s->o++ = ',';
        if (UNLIKELY(s->members >= tls.member_cap)) TRY(grow((void **)&tls.members, &tls.member_cap, s->members + 1, sizeof(member)));
        member *m = &tls.members[s->members];
        m->start = (size_t)(s->o - s->out);
        TRY(string(s, m));
        if (ordered && s->members > base && compare_reading(m - 1, m) >= 0) ordered = 0;
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':') return BAD;
        s->p++;
        skip_ws(s);
        *s->o++ = ':';
        s->members++;
        TRY(value(s));
        tls.members[s->members - 1].end = (size_t)(s->o - s->out); // `value` may have moved the stack
        skip_ws(s);
        if (s->p >= s->end) return BAD;
        if (*s->p == ',') { s->p++; continue; }
        if (*s->p == '}') { s->p++; break; }
        return BAD;
    }
    s->depth--;
    if (!ordered) TRY(reorder(s, tls.members + base, s->members - base, from));
    *s->o++ = '}';
    s->members = base;
    s->keys = keys;
    return 0;
}

static int array(state *s) {
    if (++s->depth > max_depth) return BAD;
    s->p++;
    *s->o++ = '[';
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') { s->p++; s->depth--; *s->o++ = ']'; return 0; }
    for (;;) {
        skip_ws(s);
        TRY(value(s));
        skip_ws(s);
        if (s->p >= s->end) return BAD;
        if (*s->p == ',') { s->p++; *s->o++ = ','; continue; }
        if (*s->p == ']') { s->p++; break; }
        return BAD;
    }
    s->depth--;
    *s->o++ = ']';
    return 0;
}

static int value(state *s) {
    if (s->p >= s->end) return BAD;
    switch (*s->p) {
    case '{': return object(s);
    case '[': return array(s);
    case '"': return string(s, NULL);
    case 't': return literal(s, "true", 4);
    case 'f': return literal(s, "false", 5);
    case 'n': return literal(s, "null", 4);
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        return number(s);
    default: return BAD;
    }
}

ptrdiff_t strata_json_canonicalize(const uint8_t *in, size_t len, uint8_t *out) {
    state s = { .p = in, .end = in + len, .out = out, .o = out, .out_end = out + len, .members = 0, .keys = 0, .depth = 0 };
    if (len >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF) s.p += 3;
    skip_ws(&s);
    int failed = value(&s);
    skip_ws(&s);
    if (!failed && s.p != s.end) failed = BAD;
    if (tls.member_cap * sizeof(member) > keep_bytes || tls.scratch_cap > keep_bytes || tls.decoded_cap > keep_bytes ||
        tls.keys_cap > keep_bytes)
        drop(&tls);
    return failed ? failed : s.o - s.out;
}
