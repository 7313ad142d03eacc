import CountersignClient
import Foundation
import Testing

/// Names a server puts on a queue entry follow the username rule as the server applies it: non-ASCII is
/// refused before any case mapping (the Kelvin sign lower-cases to an ASCII "k").
@Suite struct MailboxNameTests {
    @Test func aNameThatOnlyLowerCasesIntoTheRuleIsRefused() throws {
        for name in ["b\u{212A}b", "\u{212A}im", "al\u{130}ce"] {
            let entry = try Fixture.queued(seq: 1, fromName: name)
            #expect(
                Mailbox<MemoryMailboxStore>.verifiedHeader(entry) == .failure(.invalidName(id: entry.id)),
                "\(name)"
            )
        }
        var to = try Fixture.queued(seq: 2)
        to.to = ["b\u{212A}b"]
        #expect(Mailbox<MemoryMailboxStore>.verifiedHeader(to) == .failure(.invalidName(id: to.id)))
        // The same names in ASCII are accepted, in either case.
        for name in ["bkb", "BKB"] {
            let entry = try Fixture.queued(seq: 3, fromName: name)
            if case .failure(let drop) = Mailbox<MemoryMailboxStore>.verifiedHeader(entry) {
                Issue.record("\(name) refused: \(drop)")
            }
        }
    }
}
