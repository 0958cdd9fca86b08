#!/usr/bin/env python3
"""Writes a WARC 1.1 file of about SIZE_MB megabytes for the import benchmark: request/response
pairs of JSON bodies of 4-32 KB, each different (ids, prices, words), as a crawl of a JSON API
would hold. Plain (.warc) or gzip per record (.warc.gz). Deterministic (seeded).
Usage: make-warc.py SIZE_MB OUT"""
import gzip, hashlib, base64, json, random, sys, uuid

size = int(sys.argv[1]) * 1_000_000
out = sys.argv[2]
zipped = out.endswith(".gz")
rng = random.Random(42)
words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()

def record(fields, block):
    head = "WARC/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields) + f"Content-Length: {len(block)}\r\n\r\n"
    raw = head.encode() + block + b"\r\n\r\n"
    return gzip.compress(raw, 6) if zipped else raw

def digest(b):
    return "sha1:" + base64.b32encode(hashlib.sha1(b).digest()).decode()

written = 0
n = 0
with open(out, "wb") as f:
    info = b"software: make-warc.py\r\nformat: WARC File Format 1.1\r\n"
    w = record([("WARC-Type", "warcinfo"), ("WARC-Record-ID", f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128))}>"),
                ("WARC-Date", "2026-01-01T00:00:00Z"), ("Content-Type", "application/warc-fields")], info)
    f.write(w); written += len(w)
    while written < size:
        n += 1
        items = [{"id": n * 100 + i, "price": rng.randint(1000, 99999), "title": " ".join(rng.choice(words) for _ in range(8)),
                  "description": " ".join(rng.choice(words) for _ in range(rng.randint(40, 400)))} for i in range(rng.randint(2, 10))]
        body = json.dumps({"page": n, "results": items}, indent=1).encode()
        url = f"http://api.example.com/items?page={n}"
        date = f"2026-01-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:{(n // 60) % 60:02d}Z"
        http = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
        rid = f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128))}>"
        req = f"GET /items?page={n} HTTP/1.1\r\nHost: api.example.com\r\nAccept: application/json\r\n\r\n".encode()
        qid = f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128))}>"
        w = record([("WARC-Type", "request"), ("WARC-Record-ID", qid), ("WARC-Date", date), ("WARC-Target-URI", url),
                    ("Content-Type", "application/http;msgtype=request")], req)
        w += record([("WARC-Type", "response"), ("WARC-Record-ID", rid), ("WARC-Date", date), ("WARC-Target-URI", url),
                     ("WARC-Concurrent-To", qid), ("Content-Type", "application/http;msgtype=response"),
                     ("WARC-Payload-Digest", digest(body))], http)
        f.write(w); written += len(w)
print(f"{out}: {written} bytes, {n} responses")
