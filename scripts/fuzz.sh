#!/usr/bin/env bash
# Fuzzes every parser of untrusted bytes with libFuzzer (Fuzz/: one executable, COUNTERSIGN_FUZZ_TARGET
# picks the parser), starting from the committed seed corpus Fuzz/corpus/<target>/.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET…]
#
# SECONDS (default 600) is the whole run's fuzzing time, not counting the build: the targets share it,
# FUZZ_JOBS at a time (default: the number of cores), so each runs for SECONDS × FUZZ_JOBS / TARGETS
# seconds (at least 1). It prints one line per target (executions, crashes) and a total line, and exits
# non-zero on any crash, timeout or out-of-memory, keeping the input that caused it under
# FUZZ_ARTIFACTS (default .build-fuzz/artifacts/<UTC time of the run>/) and printing its path; replay one with
#   COUNTERSIGN_FUZZ_TARGET=TARGET .build-fuzz/release/countersign-fuzz FILE
# The fuzzers run on a copy of the corpus in a temporary directory, so the committed corpus never grows.
#
# The build is the release build of Fuzz/ with -sanitize=fuzzer,address (the Swift toolchain's clang
# brings libFuzzer and AddressSanitizer), in its own scratch directory .build-fuzz; FUZZ_BUILD_JOBS
# passes -j to it.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] || { echo "usage: bash scripts/fuzz.sh [SECONDS] [TARGET…]" >&2; exit 2; }
shift || true

# Each target and the longest input it is given: a little over the largest its parser accepts or the
# seeds need, so that the fuzzer's time goes to inputs of a useful size.
declare -A max_len=(
  [pem]=8192 [pkcs8]=2048 [pingidentity]=4096
  [filelock]=4096 [filelock-roundtrip]=4096 [sealed-file]=8192 [sealed-file-roundtrip]=4096
  [envelope]=4096 [envelope-roundtrip]=4096 [armor]=8192 [otpauth]=1024
  [cbor-cose]=2048 [authenticator-data]=2048 [client-data]=4200
  [api-json]=4096 [push-frame]=4096 [altcha]=4200 [device-jwt]=4200
)
all=(pem pkcs8 pingidentity filelock filelock-roundtrip sealed-file sealed-file-roundtrip envelope
  envelope-roundtrip armor otpauth cbor-cose authenticator-data client-data api-json push-frame altcha device-jwt)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "unknown target $t; targets: ${all[*]}" >&2; exit 2; }
done

jobs=${FUZZ_JOBS:-$(nproc)}
# More jobs than targets would run each target longer than SECONDS in all.
[ "$jobs" -le "${#targets[@]}" ] || jobs=${#targets[@]}
per=$(( seconds * jobs / ${#targets[@]} ))
[ "$per" -ge 1 ] || per=1
artifacts=${FUZZ_ARTIFACTS:-.build-fuzz/artifacts/$(date -u +%Y%m%dT%H%M%SZ)}

swift build --package-path Fuzz --scratch-path .build-fuzz -c release ${FUZZ_BUILD_JOBS:+-j "$FUZZ_BUILD_JOBS"} \
  -Xswiftc -sanitize=fuzzer,address
bin="$(swift build --package-path Fuzz --scratch-path .build-fuzz -c release --show-bin-path \
  -Xswiftc -sanitize=fuzzer,address)/countersign-fuzz"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"
echo "fuzzing ${#targets[@]} targets for ${per} s each, ${jobs} at a time" >&2

run() {
  local t=$1
  mkdir -p "$work/corpus/$t" "$artifacts/$t"
  cp -R "Fuzz/corpus/$t/." "$work/corpus/$t/" 2>/dev/null || true
  # A slow input (-timeout) or one that holds 2 GiB is a finding: both are a denial of service. Leaks are
  # not checked: LeakSanitizer cannot see pointers Swift keeps in enum payloads with tag bits (a global
  # AES.GCM.Nonce's Data was reported leaked). Swift's own crash handler is off: AddressSanitizer and
  # libFuzzer report the crash (the backtracer reading the crashed process's memory trips AddressSanitizer).
  COUNTERSIGN_FUZZ_TARGET=$t SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$bin" \
    -max_total_time="$per" -max_len="${max_len[$t]}" -timeout=25 -rss_limit_mb=2048 -detect_leaks=0 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$t/" "$work/corpus/$t" > "$work/$t.log" 2>&1 \
    && echo 0 > "$work/$t.status" || echo $? > "$work/$t.status"
}

running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run "$t" &
  running=$((running + 1))
done
wait || true

total=0
crashes_total=0
printf '%-24s %12s %8s\n' target executions crashes
for t in "${targets[@]}"; do
  log="$work/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  # A crash can cut the final stats short: then the last status line (#N …) counts.
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -1)
  execs=${execs:-0}
  crashes=0
  if [ "$(cat "$work/$t.status")" != 0 ]; then
    crashes=1
    cp "$log" "$artifacts/$t/fuzz.log"
  fi
  printf '%-24s %12d %8d\n' "$t" "$execs" "$crashes"
  total=$((total + execs))
  crashes_total=$((crashes_total + crashes))
done
printf '%-24s %12d %8d\n' total "$total" "$crashes_total"
find "$artifacts" -depth -type d -empty -delete 2>/dev/null || true

if [ "$crashes_total" -gt 0 ]; then
  for t in "${targets[@]}"; do
    [ "$(cat "$work/$t.status")" = 0 ] && continue
    echo "$t: $(grep -m1 -E 'ERROR: |fuzz finding|Fatal error|==[0-9]+==' "$artifacts/$t/fuzz.log" || echo 'see the log')" >&2
    for f in "$artifacts/$t"/crash-* "$artifacts/$t"/timeout-* "$artifacts/$t"/oom-* "$artifacts/$t"/leak-*; do
      [ -e "$f" ] && echo "  input: $f (replay: COUNTERSIGN_FUZZ_TARGET=$t $bin $f)" >&2
    done
    echo "  log:   $artifacts/$t/fuzz.log" >&2
  done
  exit 1
fi
