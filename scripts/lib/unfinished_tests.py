"""Names the tests a Swift test process was running when it stopped without finishing (a crash, or a
timeout), from Swift Testing's event stream (`swift test --event-stream-output-path`, schema 0): every test
started and not ended. A crash's backtrace names a thread, often not a test; this names the tests.

    python3 scripts/lib/unfinished_tests.py EVENTS.jsonl
"""
import json
import sys


def main(path):
    # Per test ID, starts minus ends: a parameterized test starts and ends once per case.
    open_count = {}
    try:
        lines = open(path, encoding="utf-8", errors="replace")
    except OSError as error:
        print(f"no event stream at {path}: {error}")
        return
    with lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # the last line of a killed process may be cut
            if record.get("kind") != "event":
                continue
            event = record.get("payload", {})
            kind, test = event.get("kind"), event.get("testID")
            if kind in ("testStarted", "testCaseStarted") and test:
                open_count[test] = open_count.get(test, 0) + 1
            elif kind in ("testEnded", "testCaseEnded") and test:
                open_count[test] = open_count.get(test, 0) - 1
    running = [t for t, n in open_count.items() if n > 0]
    # A suite is "running" while any of its tests is: name only the innermost.
    leaves = [t for t in running if not any(o != t and o.startswith(t + "/") for o in running)]
    if not leaves:
        print("every test that started also ended")
        return
    print(f"the test process stopped while {len(leaves)} test(s) were running:")
    for test in sorted(leaves):
        print(f"  {test}")


if __name__ == "__main__":
    main(sys.argv[1])
