import CountersignTestSupport
import Foundation
import Testing

/// A server that never answers, answers forever or drips costs the CLI seconds and megabytes, not a core
/// or the machine's memory (issue 19.11, 19.12): Tests/interop/broken_server.py plays each. Against a real
/// `countersign serve`: CountersignSystemTests/ServerDeadlineTests.swift.
@Suite struct ServerDeadlineTests {
    typealias BrokenServer = InteropScript

    /// Issue 19.11: a 200 whose body never ends took `account register` to 17.5 GB. The answer is cut at
    /// the cap (4 MiB for such a call) and refused in words.
    @Test func anEndlessAnswerIsCutAtTheCap() throws {
        let t = try CLI()
        let broken = try BrokenServer("endless")
        let r = try ServerDeadlines.register(t, "http://127.0.0.1:\(broken.port)")
        #expect(
            r.output.status != 0 && r.output.stderr.contains("refused the server's answer: it was over 4 MiB"),
            "\(r.output.stderr)"
        )
        #expect(r.maxRSSKiB < 150 * 1024, "peak RSS \(r.maxRSSKiB) KiB")
        #expect(r.wall < 60, "\(r.wall) s")
    }

    /// An answer that starts and then drips a byte a second ends at the whole-answer deadline (30 s).
    @Test func aDrippingAnswerEndsAtTheWholeDeadline() throws {
        let t = try CLI()
        let broken = try BrokenServer("drip")
        let r = try ServerDeadlines.register(t, "http://127.0.0.1:\(broken.port)")
        #expect(
            r.output.status != 0 && r.output.stderr.contains("timed out")
                && r.output.stderr.contains("did not finish its answer within 30 s"),
            "\(r.output.stderr)"
        )
        // Bounds from the 30 s deadline: never before it, and well before twice it on a loaded machine.
        #expect(r.wall > 29 && r.wall < 60, "\(r.wall) s")
        #expect(r.cpu < r.wall * 0.1, "CPU \(r.cpu) s in \(r.wall) s")
    }

    /// Issue 19.12: against a socket that never answers, a command ran 45 s with 34 s of system CPU and
    /// printed `NSURLErrorDomain error -1001`. Now: 20 s to the first byte, "timed out" in words, and the
    /// wait costs next to no CPU.
    @Test func aSilentServerTimesOutInWordsWithoutSpinning() throws {
        let t = try CLI()
        let broken = try BrokenServer("silent")
        let r = try ServerDeadlines.register(t, "http://127.0.0.1:\(broken.port)")
        #expect(r.output.status != 0, "\(r.output.stderr)")
        #expect(
            r.output.stderr.contains("timed out: no answer from the server at 127.0.0.1:\(broken.port) within 20 s"),
            "\(r.output.stderr)"
        )
        #expect(!r.output.stderr.contains("NSURLErrorDomain"), "\(r.output.stderr)")
        #expect(r.wall > 19 && r.wall < 40, "\(r.wall) s")
        #expect(r.cpu < r.wall * 0.1, "CPU \(r.cpu) s in \(r.wall) s")
    }
}
