#!/usr/bin/env python3
"""A git-scraping history for the storage benchmark: one JSON list committed VERSIONS times.

usage: scraping-history.py REPO [--versions 2500] [--items 650] [--seed 1]

The file (`items.json`, about 200 KB pretty-printed as scrapers write it) holds ITEMS objects
(id, name, status, price, stock, rating, updated_at, location, tags). Each commit is what a
scraper polling an API sees: a few dozen items change one to three fields (a price, a stock
level, a status, the update time), and about one commit in twenty adds an item or drops one.
The whole history is written through one `git fast-import`, deterministic for a seed.
"""
import argparse
import json
import os
import random
import subprocess

STATUSES = ["available", "reserved", "sold", "maintenance", "in_transit"]
WORDS = ["alpine", "harbor", "copper", "meadow", "granite", "willow", "summit", "ember",
         "juniper", "cobalt", "lantern", "prairie", "orchid", "falcon", "birch", "delta"]
TAGS = ["new", "sale", "eco", "premium", "refurbished", "limited", "bulk", "local"]


def new_item(rng, ident, now):
    return {
        "id": ident,
        "name": f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {ident}",
        "status": rng.choice(STATUSES),
        "price": round(rng.uniform(5, 900), 2),
        "stock": rng.randint(0, 400),
        "rating": round(rng.uniform(1, 5), 1),
        "updated_at": now,
        "location": {"lat": round(rng.uniform(-60, 60), 5), "lon": round(rng.uniform(-170, 170), 5)},
        "tags": sorted(rng.sample(TAGS, rng.randint(0, 3))),
    }


def iso(t):
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--versions", type=int, default=2500)
    parser.add_argument("--items", type=int, default=650)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    clock = 1_700_000_000
    items = [new_item(rng, i + 1, iso(clock)) for i in range(args.items)]
    next_id = args.items + 1

    os.makedirs(args.repo, exist_ok=True)
    subprocess.run(["git", "init", "-q", args.repo], check=True)
    importer = subprocess.Popen(["git", "-C", args.repo, "fast-import", "--quiet"],
                                stdin=subprocess.PIPE)
    out = importer.stdin
    for version in range(args.versions):
        clock += 600 + rng.randint(0, 120)
        now = iso(clock)
        if version > 0:
            for item in rng.sample(items, rng.randint(20, 48)):
                for field in rng.sample(["price", "stock", "status", "rating"], rng.randint(1, 3)):
                    if field == "price":
                        item["price"] = round(item["price"] * rng.uniform(0.9, 1.1), 2)
                    elif field == "stock":
                        item["stock"] = max(0, item["stock"] + rng.randint(-20, 20))
                    elif field == "status":
                        item["status"] = rng.choice(STATUSES)
                    else:
                        item["rating"] = round(rng.uniform(1, 5), 1)
                item["updated_at"] = now
            if rng.random() < 0.05:
                items.append(new_item(rng, next_id, now))
                next_id += 1
            if rng.random() < 0.03:
                items.pop(rng.randrange(len(items)))
        body = (json.dumps(items, indent=2) + "\n").encode()
        message = f"Latest data: {now}\n".encode()
        out.write(b"commit refs/heads/main\n")
        out.write(f"committer scraper <scraper@example.com> {clock} +0000\n".encode())
        out.write(f"data {len(message)}\n".encode() + message)
        out.write(f"M 644 inline items.json\ndata {len(body)}\n".encode() + body + b"\n")
    out.close()
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "-C", args.repo, "symbolic-ref", "HEAD", "refs/heads/main"], check=True)
    subprocess.run(["git", "-C", args.repo, "reset", "-q", "--hard"], check=True)


if __name__ == "__main__":
    main()
