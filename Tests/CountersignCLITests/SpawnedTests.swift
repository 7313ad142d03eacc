import CountersignTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tests' process helper: where Foundation's `Process.run()` crashed (many open descriptors), what the
/// child inherits, exit statuses, and input larger than a pipe holds.
@Suite struct SpawnedTests {
    /// Whether this process may open 2,048 descriptors (the hard limit allows raising the soft one).
    static var mayOpen2048Descriptors: Bool {
        var limit = rlimit()
        return getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 && limit.rlim_max >= 2048
    }

    @Test(.enabled(if: Self.mayOpen2048Descriptors, "the hard limit of open descriptors is below 2,048"))
    func spawnsFromAProcessWithManyDescriptorsAndPassesOnNone() throws {
        var limit = rlimit()
        let nofile = Int32(RLIMIT_NOFILE.rawValue)
        try #require(getrlimit(nofile, &limit) == 0)
        if limit.rlim_cur < 2048 {
            limit.rlim_cur = 2048
            try #require(setrlimit(nofile, &limit) == 0)
        }
        // Not close-on-exec: only the helper's closing keeps them out of the child.
        let fds = (0..<1500).map { _ in open("/dev/null", O_RDONLY) }
        defer { fds.filter { $0 >= 0 }.forEach { close($0) } }
        try #require(fds.allSatisfy { $0 >= 0 })
        #expect(try Spawned("/bin/true", []).wait() == 0)
        let listing = try Spawned.run("/bin/ls", ["/proc/self/fd"])
        #expect(listing.status == 0)
        // 3: the directory ls reads.
        #expect(String(decoding: listing.stdout, as: UTF8.self) == "0\n1\n2\n3\n")
    }

    @Test func exitStatusesSignalsAndLargeInput() throws {
        let r = try Spawned.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(r.status == 3 && r.stdout == Data("out\n".utf8) && r.stderr == Data("err\n".utf8))
        #expect(try Spawned.run("/bin/sh", ["-c", "kill -TERM $$"]).status == 128 + SIGTERM)
        let sleeper = try Spawned("/bin/sleep", ["30"])
        #expect(sleeper.isRunning)
        sleeper.signal(SIGKILL)
        #expect(sleeper.wait() == 128 + SIGKILL && !sleeper.isRunning)
        sleeper.signal(SIGKILL)  // reaped: not sent
        // 8 MiB through cat, both ways at once; and a child that reads none of its input.
        let big = CLI.random(8 << 20)
        #expect(try Spawned.run("/bin/cat", [], stdin: big).stdout == big)
        #expect(try Spawned.run("/bin/true", [], stdin: big).status == 0)
        let dir = try Spawned.run("/bin/sh", ["-c", "pwd; echo $X"], environment: ["X": "1"], directory: "/tmp")
        #expect(String(decoding: dir.stdout, as: UTF8.self) == "/tmp\n1\n")
        #expect(throws: Spawned.Failure.self) { try Spawned("/nonexistent/tool", []) }
    }
}
