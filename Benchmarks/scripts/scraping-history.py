#!/usr/bin/env python3
"""A git-scraping history for the storage benchmark: one JSON file committed VERSIONS times.

usage: scraping-history.py REPO [--shape items|pages] [--versions 2500] [--items N] [--seed 1]

`--shape items` (the first workload): `items.json`, about 200 KB pretty-printed as scrapers
write it, is a list of ITEMS (650) objects (id, name, status, price, stock, rating, updated_at,
location, tags). Each commit is what a scraper polling an API sees: a few dozen items change one
to three fields (a price, a stock level, a status, the update time), and about one commit in
twenty adds an item or drops one.

`--shape pages` (what real scraping histories look like): `items.json` is an object of 100–300
KB where the items are a minority of the bytes. `items` holds ITEMS (24) objects with a long
HTML text (`body_html`, 1.5–5 KB of paragraphs) that changes a few words at a time (one to three
items a commit), a status and an update time; beside them, side arrays that are most of the file
(`regions`, `categories`, `schedule`: lookup tables, a timetable) and change wholesale now and
then (one in ten commits regenerates one of them; the schedule rolls forward one in twenty);
`meta.generated_at` changes every time. One commit in forty writes the objects' keys in another
order (the same data), one in four hundred an empty file and one in three hundred a truncated
one (invalid JSON).

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


LOREM = ("the council agreed to review the proposal after residents raised concerns about "
         "traffic noise and parking near the new market hall which opens in spring while the "
         "budget for maintenance of public parks was increased and the library extended its "
         "opening hours on weekends following a survey of more than two thousand readers").split()


def paragraph(rng, words):
    return "<p>" + " ".join(rng.choice(LOREM) for _ in range(words)) + ".</p>"


def new_page_item(rng, ident, now):
    return {
        "id": ident,
        "title": f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} notice {ident}",
        "status": rng.choice(STATUSES),
        "updated_at": now,
        "body_html": "\n".join(paragraph(rng, rng.randint(40, 90)) for _ in range(rng.randint(4, 10))),
        "author": {"name": f"{rng.choice(WORDS).title()} desk", "team": rng.choice(WORDS)},
        "tags": sorted(rng.sample(TAGS, rng.randint(0, 3))),
    }


def side_arrays(rng, which=("regions", "categories", "schedule"), clock=0):
    out = {}
    if "regions" in which:
        out["regions"] = [{"code": f"R{i:04d}", "name": f"{rng.choice(WORDS).title()} {rng.choice(WORDS)}",
                           "population": rng.randint(1000, 900000), "area_km2": round(rng.uniform(3, 4000), 1)}
                          for i in range(rng.randint(500, 900))]
    if "categories" in which:
        out["categories"] = [{"id": i, "label": f"{rng.choice(WORDS)} {rng.choice(WORDS)}", "parent": rng.randint(0, 40),
                              "weight": round(rng.random(), 4)} for i in range(rng.randint(300, 600))]
    if "schedule" in which:
        start = clock - clock % 86400
        out["schedule"] = [{"date": iso(start + (i // 12) * 86400), "slot": i % 12, "capacity": rng.randint(0, 60),
                            "room": rng.choice(WORDS)} for i in range(rng.randint(400, 700))]
    return out


def change_words(rng, text, n):
    words = text.split(" ")
    for _ in range(n):
        i = rng.randrange(len(words))
        if words[i].startswith("<") or words[i].endswith(">"):
            continue
        words[i] = rng.choice(LOREM)
    return " ".join(words)


def shuffled(rng, value):
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: shuffled(rng, value[k]) for k in keys}
    if isinstance(value, list):
        return [shuffled(rng, v) for v in value]
    return value


def pages_history(rng, versions, item_count):
    """Yields (clock, body bytes) for the `pages` shape."""
    clock = 1_700_000_000
    items = [new_page_item(rng, i + 1, iso(clock)) for i in range(item_count)]
    next_id = item_count + 1
    side = side_arrays(rng, clock=clock)
    for version in range(versions):
        clock += 600 + rng.randint(0, 120)
        now = iso(clock)
        if version > 0:
            for item in rng.sample(items, rng.randint(1, 3)):
                item["body_html"] = change_words(rng, item["body_html"], rng.randint(2, 6))
                if rng.random() < 0.2:
                    item["status"] = rng.choice(STATUSES)
                item["updated_at"] = now
            if rng.random() < 0.1:
                side.update(side_arrays(rng, (rng.choice(["regions", "categories", "schedule"]),), clock))
            elif rng.random() < 0.05:
                side.update(side_arrays(rng, ("schedule",), clock))
            if rng.random() < 0.02:
                items.append(new_page_item(rng, next_id, now))
                next_id += 1
            if rng.random() < 0.01 and len(items) > 12:
                items.pop(rng.randrange(len(items)))
        document = {"meta": {"generated_at": now, "count": len(items), "source": "city notices"}, "items": items, **side}
        if rng.random() < 0.025:
            document = shuffled(rng, document)
        body = (json.dumps(document, indent=2) + "\n").encode()
        roll = rng.random()
        if version > 0 and roll < 0.0025:
            body = b""
        elif version > 0 and roll < 0.0025 + 0.0033:
            body = body[: len(body) // 2]
        yield clock, body


def items_history(rng, versions, item_count):
    """Yields (clock, body bytes) for the `items` shape."""
    clock = 1_700_000_000
    items = [new_item(rng, i + 1, iso(clock)) for i in range(item_count)]
    next_id = item_count + 1
    for version in range(versions):
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
        yield clock, (json.dumps(items, indent=2) + "\n").encode()


def iso(t):
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("--versions", type=int, default=2500)
    parser.add_argument("--shape", choices=["items", "pages"], default="items")
    parser.add_argument("--items", type=int)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if args.shape == "items":
        history = items_history(rng, args.versions, args.items or 650)
    else:
        history = pages_history(rng, args.versions, args.items or 24)

    os.makedirs(args.repo, exist_ok=True)
    subprocess.run(["git", "init", "-q", args.repo], check=True)
    importer = subprocess.Popen(["git", "-C", args.repo, "fast-import", "--quiet"],
                                stdin=subprocess.PIPE)
    out = importer.stdin
    for clock, body in history:
        message = f"Latest data: {iso(clock)}\n".encode()
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
