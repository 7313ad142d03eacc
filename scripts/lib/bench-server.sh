# Shared by bench-push.sh and bench-mfa.sh (sourced): the release build under the benchmarks' own scratch
# path, a work directory, a server on a SQLite file in its own process group, and the cleanup of all of it.
#   bench_build PRODUCT       installs what the build needs, builds countersign and PRODUCT; sets $bin
#   bench_serve DBFILE LOG    starts `countersign serve` (captcha off, hard file limit); sets $pid and $url;
#                             BENCH_SERVER=PATH runs another build of the server (A/B runs within one session)
# $work is the work directory; $gen, when set, is a generator process to stop on exit.

bench_build() {
  local missing
  source scripts/lib/build-deps.sh
  mapfile -t missing < <(build_deps_missing)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
  # Its own scratch path, so that it never waits for (or disturbs) a build in .build.
  local scratch=${BENCH_SCRATCH:-${PUSH_SCRATCH:-.build-bench}}
  # One product per invocation: swift build honours only the last --product given.
  swift build -c release --scratch-path "$scratch" --product countersign-server >&2
  swift build -c release --scratch-path "$scratch" --product "$1" >&2
  bin=$scratch/release
}

work=$(mktemp -d)
pid=; gen=
bench_cleanup() {
  if [ -n "$gen" ]; then kill -TERM "$gen" 2>/dev/null || true; fi
  # The server runs in its own process group (setsid): end all of it.
  if [ -n "$pid" ]; then kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM HUP

bench_serve() {
  local hard
  hard=$(ulimit -Hn)
  ( ulimit -n "$hard"
    # One load generator on one address opens hundreds of connections at once: no per-address cap on
    # connections not yet authenticated (128 by default, which a loaded machine can reach while 200 push
    # channels connect), no per-account send rate.
    COUNTERSIGN_LOG_LEVEL=warning COUNTERSIGN_EXIT_WITH_PARENT=1 COUNTERSIGN_SENDS_PER_ACCOUNT=0 \
      COUNTERSIGN_CONNECTIONS_PER_ADDRESS=0 \
      exec setsid "${BENCH_SERVER:-$bin/countersign-server}" serve --port 0 --captcha off --database "sqlite:$1" ) > "$2" 2>&1 &
  pid=$!
  for _ in $(seq 200); do grep -q listening "$2" && break; sleep 0.1; done
  url=$(grep -o 'listening on http://[^ ]*' "$2" | sed 's/^listening on //' || true)
  if [ -z "$url" ]; then echo "the server did not start:" >&2; cat "$2" >&2; exit 1; fi
}

# Prints the server log's warning/error lines, counted and grouped.
bench_server_log() {
  local problems
  problems=$(grep -ciE 'warning|error|critical' "$1" || true)
  echo "server log: $problems warning/error lines"
  if [ "$problems" -gt 0 ]; then
    grep -iE 'warning|error|critical' "$1" | sed -E 's/^[0-9T:.+-]+ //' | sort | uniq -c | sort -rn | head -5
  fi
}

# Runs `countersign-bench-push ARGS…` under the hard file limit, in the background so that a signal to the
# script is handled at once (bash runs traps only between foreground commands), its output written to
# $work/run.txt and followed here; sets $status to its exit status.
bench_generate() {
  status=0
  ( ulimit -n "$(ulimit -Hn)"; exec "$bin/countersign-bench-push" "$@" ) > "$work/run.txt" 2>&1 &
  gen=$!
  tail -n +1 -f --pid="$gen" "$work/run.txt" &
  local follower=$!
  wait "$gen" || status=$?
  wait "$follower" 2>/dev/null || true
  gen=
}
