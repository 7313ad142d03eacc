# Sourced by scripts/test.sh. Every process a test run starts inherits COUNTERSIGN_TEST_RUN in its
# environment; servers, browsers and peers start in process groups of their own, so a test process that
# crashes or is killed by a timeout orphans them. `reap_run` finds them by that mark in
# /proc/PID/environ and kills them (the shell's own environment was read before the export, so it is
# never among them).
export COUNTERSIGN_TEST_RUN="$$-$(date +%s%N)"
reap_run() {
  local pid found=()
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    [ "$pid" = "$$" ] && continue
    if { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null | grep -qx "COUNTERSIGN_TEST_RUN=$COUNTERSIGN_TEST_RUN"; then
      found+=("$pid")
    fi
  done
  if [ ${#found[@]} -gt 0 ]; then
    echo "stopping ${#found[@]} process(es) this run left behind: $(ps -o comm= -p "$(IFS=,; echo "${found[*]}")" 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')" >&2
    kill -KILL "${found[@]}" 2>/dev/null || true
  fi
}
