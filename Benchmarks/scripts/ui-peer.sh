#!/usr/bin/env bash
# The web UI beside its peer (docs/benchmarks.md): Datasette serving git-history's SQLite database
# of a scraping history, and `strata serve`'s pages of the same history imported with
# `import --git`, under wrk (16 connections, 2 threads, DURATION seconds each), same machine,
# same run. Two pages each: the items table (Datasette's `items` table page; Strata's source
# page) and one item's versions (Datasette's `item_version` rows of the item; Strata's item
# page). git-history and Datasette come from PyPI, in Benchmarks/.venv (never in `make test`).
#
# usage: ui-peer.sh STRATA [VERSIONS=400] [ITEMS=400] [DURATION=10]
#        PEER_REPO=PATH PEER_FILE=F PEER_ID=KEY [PEER_ITEMS=KEY] [PEER_TITLE=KEY] ui-peer.sh STRATA [VERSIONS] - [DURATION]
#        (a real scraping repository instead: the first VERSIONS commits of its file F)
set -euo pipefail
strata=$(realpath "$1"); versions=${2:-400}; items=${3:-400}; duration=${4:-10}
here=$(cd "$(dirname "$0")" && pwd)
venv="$here/../.venv"
. "$here/lib.sh"
work=$(mktemp -d /tmp/strata-ui-peer.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done; rm -rf "$work"' EXIT
if [ ! -x "$venv/bin/git-history" ] || [ ! -x "$venv/bin/datasette" ]; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q git-history datasette
fi
file=items.json; idkey=id; title=name; convert=(); itemsopt=()
if [ -n "${PEER_REPO:-}" ]; then
  file=${PEER_FILE:?PEER_FILE names the file}; idkey=${PEER_ID:?PEER_ID names the items key}; title=${PEER_TITLE:-$idkey}
  echo "the first $(first_versions "$PEER_REPO" "$work/repo" "$file" "$versions") versions of $file in $PEER_REPO" >&2
  if [ -n "${PEER_ITEMS:-}" ]; then
    itemsopt=(--items "$PEER_ITEMS")
    convert=(--convert "$(items_under "$PEER_ITEMS")")
  fi
else
  echo "generating $versions versions of $items items" >&2
  python3 "$here/scraping-history.py" "$work/repo" --versions "$versions" --shape items --items "$items"
fi
"$venv/bin/git-history" file "$work/gh.db" "$file" --repo "$work/repo" --id "$idkey" "${convert[@]}" >/dev/null
export STRATA_STORE=$work/store
"$strata" source add items --url "file://$work/repo/$file" --id "$idkey" --title "$title" "${itemsopt[@]}" >/dev/null
"$strata" import items --git "$work/repo" --path "$file" >/dev/null 2>&1
"$venv/bin/datasette" serve "$work/gh.db" --port 18301 >/dev/null 2>&1 &
pids+=($!)
"$strata" serve --port 18302 >/dev/null 2>&1 &
pids+=($!)
for port in 18301 18302; do
  for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$port/ && break; sleep 0.2; done
done
# The item whose versions are read: the one with the most.
item=$(sqlite3 "$work/gh.db" "SELECT _item FROM item_version GROUP BY _item ORDER BY count(*) DESC LIMIT 1")
id=$(sqlite3 "$work/gh.db" "SELECT \"$idkey\" FROM item WHERE _id = $item")
n=$(sqlite3 "$work/gh.db" "SELECT count(*) FROM item_version WHERE _item = $item")
rps() {  # rps URL: requests a second under wrk
  wrk -t2 -c16 -d${duration}s "$1" 2>/dev/null | awk '/Requests\/sec/ {print $2}'
}
d_items=$(rps "http://127.0.0.1:18301/gh/item")
s_items=$(rps "http://127.0.0.1:18302/_strata/ui/sources/items")
d_item=$(rps "http://127.0.0.1:18301/gh/item_version?_item=$item")
s_item=$(rps "http://127.0.0.1:18302/_strata/ui/sources/items/items/$id")
echo "| page | Datasette (req/s) | Strata (req/s) | ratio |"
echo "|---|---|---|---|"
echo "| the items table | $d_items | $s_items | $(python3 -c "print(f'{$s_items/$d_items:.1f}')")× |"
echo "| one item's $n versions | $d_item | $s_item | $(python3 -c "print(f'{$s_item/$d_item:.1f}')")× |"
