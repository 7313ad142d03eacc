#!/usr/bin/env bash
# Seal/open throughput and peak memory of countersign beside age, measured in the same run, on the binary
# scripts/release.sh ships (release mode, --static-swift-stdlib, scratch path .build-release).
#   bash scripts/bench-seal.sh [SIZE_MIB]      (default 1024)
# Prints MB/s for each tool, the ratio, and peak RSS from /usr/bin/time -v; the peak RSS of a command that
# does nothing (--version) and each binary's size; then one recipient wrap/unwrap time. Both tools read a
# file in the page cache and write to /dev/null, best of 3 runs.
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}

missing=()
command -v age >/dev/null || missing+=(age)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

static=(swift build -c release --static-swift-stdlib --scratch-path .build-release)
# One product per invocation: swift build honours only the last --product given.
"${static[@]}" --product countersign >&2
"${static[@]}" --product countersign-bench >&2
bin=$("${static[@]}" --show-bin-path)
cs="$bin/countersign"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "preparing a ${size_mib} MiB file in $work ..." >&2
openssl rand -out "$work/input" $((size_mib * 1024 * 1024))
"$cs" keygen --no-passphrase -o "$work/cs.key" > "$work/cs.pub" 2>/dev/null
age-keygen -o "$work/age.key" 2>/dev/null
age_pub=$(age-keygen -y "$work/age.key")
"$cs" seal -r "$work/cs.pub" -o "$work/input.cs" "$work/input"
age -r "$age_pub" -o "$work/input.age" "$work/input"
cat "$work/input" "$work/input.cs" "$work/input.age" > /dev/null   # warm the page cache

# run LABEL CMD... -> sets best_s (seconds, best of 3) and rss_kb (peak RSS of that run)
run() {
  best_s=""; rss_kb=""
  for _ in 1 2 3; do
    local t0 t1 wall rss
    t0=$EPOCHREALTIME   # microseconds; /usr/bin/time's own wall clock has only 10 ms steps
    /usr/bin/time -v -o "$work/time.txt" bash -c "$1" > /dev/null
    t1=$EPOCHREALTIME
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", b - a}')
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
    if [ -z "$best_s" ] || awk "BEGIN{exit !($wall < $best_s)}"; then best_s=$wall; rss_kb=$rss; fi
  done
}

bytes=$((size_mib * 1024 * 1024))
report() {  # OP CS_S CS_RSS AGE_S AGE_RSS
  awk -v op="$1" -v cs="$2" -v csr="$3" -v ag="$4" -v agr="$5" -v b="$bytes" 'BEGIN {
    csm = b / cs / 1e6; agm = b / ag / 1e6
    printf "%-5s countersign %7.0f MB/s (%5.1f MiB RSS)   age %6.0f MB/s (%5.1f MiB RSS)   ratio %.2fx\n", op, csm, csr/1024, agm, agr/1024, csm/agm }'
}

run "'$cs' seal -r '$work/cs.pub' '$work/input'"; cs_seal=$best_s; cs_seal_rss=$rss_kb
run "age -r '$age_pub' '$work/input'"; age_seal=$best_s; age_seal_rss=$rss_kb
run "'$cs' open -i '$work/cs.key' '$work/input.cs'"; cs_open=$best_s; cs_open_rss=$rss_kb
run "age -d -i '$work/age.key' '$work/input.age'"; age_open=$best_s; age_open_rss=$rss_kb

echo "${size_mib} MiB, $(nproc) cores, best of 3, to /dev/null:"
report seal "$cs_seal" "$cs_seal_rss" "$age_seal" "$age_seal_rss"
report open "$cs_open" "$cs_open_rss" "$age_open" "$age_open_rss"
run "'$cs' --version"; cs_noop_rss=$rss_kb
run "age --version"; age_noop_rss=$rss_kb
awk -v c="$cs_noop_rss" -v a="$age_noop_rss" 'BEGIN {
  printf "no-op countersign --version %5.1f MiB RSS   age --version %5.1f MiB RSS   ratio %.2fx\n", c/1024, a/1024, c/a }'
strip -o "$work/countersign-stripped" "$cs"
awk -v c="$(stat -L -c %s "$work/countersign-stripped")" -v a="$(stat -L -c %s "$(command -v age)")" 'BEGIN {
  printf "size  countersign %5.1f MiB stripped (Swift runtime and Foundation inside)   age %5.1f MiB   ratio %.2fx\n", c/1048576, a/1048576, c/a }'
echo "goals: seal >= 3x age, open >= 4x age, peak RSS <= 32 MiB sealing, <= 15 MiB doing nothing"
"$bin/countersign-bench"
