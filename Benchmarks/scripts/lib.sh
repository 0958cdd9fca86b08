# Shared by the benchmark scripts (sourced): waiting for a port, nginx serving a folder, and a real
# scraping repository cut to its first versions.

# Waits up to 20 s for 127.0.0.1:PORT to take connections.
wait_port() { for _ in $(seq 200); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }

# Writes WORK/nginx.conf: 2 workers serving WORK/www on 127.0.0.1:PORT (sendfile, ETag on, no log),
# everything it writes kept under WORK. Start it with `nginx -c WORK/nginx.conf &`.
nginx_conf() {
  local work=$1 port=$2
  cat > "$work/nginx.conf" <<NGINX
worker_processes 2;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 1024; }
http {
  access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000; etag on;
  default_type application/json;
  client_body_temp_path $work; proxy_temp_path $work; fastcgi_temp_path $work; uwsgi_temp_path $work; scgi_temp_path $work;
  server { listen 127.0.0.1:$port; root $work/www; }
}
NGINX
}

# Clones REPO into DIR and winds it back to FILE's VERSIONS-th commit, so that every tool reads
# the same history; prints how many versions of FILE DIR then holds.
first_versions() {
  local repo=$1 dir=$2 file=$3 versions=$4 last
  # --no-local: objects travel as a fetch would send them, not hard-linked (a partial clone's
  # promisor pack, which gc never repacks, would come along whole).
  git clone -q --no-local "$repo" "$dir"
  last=$(git -C "$dir" rev-list --reverse HEAD -- "$file" | sed -n "${versions}p")
  if [ -n "$last" ]; then git -C "$dir" reset -q --hard "$last"; fi
  git -C "$dir" rev-list HEAD -- "$file" | wc -l
}

# git-history's `--convert` for a file whose items are under KEY: a version that is not JSON, or
# has no such key, is read as no items (git-history aborts on one).
items_under() {
  printf 'try:\n    return json.loads(content)["%s"]\nexcept (ValueError, KeyError, TypeError):\n    return []' "$1"
}
