# Shared by the benchmark scripts (sourced): waiting for a port and nginx serving a folder.

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
