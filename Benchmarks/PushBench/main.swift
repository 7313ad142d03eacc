import Foundation

// The load generator of scripts/bench-push.sh (docs/PROTOCOL.md §2, issue section 5):
//   countersign-bench-push setup DBPATH CONNS SENDERS DIR
//     before the server starts: opens the SQLite file with the server library (migrations included) and
//     inserts CONNS accounts with one device and one device session each, plus SENDERS sender accounts
//     (one device each). The first sender goes through AccountService/DeviceService (one Argon2id hash,
//     a real device registration and session); every other row is a copy of those records with its own
//     IDs, P-256 key and random `csd_` token, all in one transaction. Writes DIR/devices.tsv and
//     DIR/senders.tsv (tokens, keys) for `run`.
//   countersign-bench-push run URL SERVER_PID DIR CONNS RATE SECONDS
//     connects CONNS push channels (ticket, WebSocket, hello, ready, queueEmpty; 200 at a time, failures
//     retried), reads the server's VmRSS before and after (idle), pre-seals RATE*SECONDS envelopes to
//     random connected devices, sends them at RATE per second over 32 keep-alive HTTP/1.1 connections and
//     times each from just before its POST is written to the moment its target's connection reads the
//     `message` frame. The last line is the summary the script prints last.
//   countersign-bench-push mfa-setup DBPATH COUNT DIR
//     scripts/bench-mfa.sh's fixtures: COUNT accounts, each with one authenticator paired through
//     MFAService (MFASetup). Writes DIR/authenticators.tsv.
//   countersign-bench-push mfa-run URL SERVER_PID DIR COUNT RATE SECONDS
//     connects COUNT authenticators' push channels, then signs in RATE accounts per second for SECONDS:
//     password (202 with the number) → challenge on the push channel (verified) → signed answer →
//     long poll sees COMPLETED → session (MFARun). The last line is the summary the script prints last.
//   countersign-bench-push notify-run URL SERVER_PID DIR NOTIFICATIONS RATE BACKGROUND SIGNIN_SECONDS TOKEN_FILE
//     scripts/bench-notify.sh's load: Web Push subscriptions for half of setup's devices, pointing at a push
//     service of its own (PushReceiver); the raw sealing rate, NOTIFICATIONS pushes at RATE timed from send
//     to receipt, sends with and without subscriptions, sign-ins alone and beside BACKGROUND messages/s
//     (NotifyRun). The last line is the summary the script prints last.
//   countersign-bench-push oidc-run URL SERVER_PID CLIENT_ID SECRET ACCOUNTS CODES CONCURRENCY
//     scripts/bench-oidc.sh's load: the ES256 signing rate, single sign-on round trips, then CODES codes made,
//     exchanged and their refresh tokens used (OIDCRun). The last line is the summary the script prints last.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("countersign-bench-push: \(message)\n".utf8))
    exit(2)
}

let args = Array(CommandLine.arguments.dropFirst())
switch args.first {
case "setup":
    guard args.count == 5, let conns = Int(args[2]), conns > 0, let senders = Int(args[3]), senders > 0 else {
        fail("usage: setup DBPATH CONNS SENDERS DIR")
    }
    do {
        try await Setup.run(dbPath: args[1], conns: conns, senders: senders, dir: URL(fileURLWithPath: args[4]))
    } catch {
        fail("setup failed: \(error)")
    }
case "run":
    guard args.count == 7, let url = URL(string: args[1]), let host = url.host, let port = url.port,
        let pid = Int32(args[2]),
        let conns = Int(args[4]), let rate = Double(args[5]), rate > 0, let seconds = Double(args[6]), seconds > 0
    else {
        fail("usage: run URL SERVER_PID DIR CONNS RATE SECONDS")
    }
    do {
        try await Run(
            host: host,
            port: port,
            serverPID: pid,
            dir: URL(fileURLWithPath: args[3]),
            conns: conns,
            rate: rate,
            seconds: seconds
        ).run()
    } catch {
        fail("run failed: \(error)")
    }
case "notify-run":
    guard args.count == 9, let url = URL(string: args[1]), let host = url.host, let port = url.port,
        let pid = Int32(args[2]), let count = Int(args[4]), count > 0, let rate = Double(args[5]), rate > 0,
        let background = Double(args[6]), background > 0, let signInSeconds = Double(args[7]), signInSeconds > 0
    else {
        fail("usage: notify-run URL SERVER_PID DIR NOTIFICATIONS RATE BACKGROUND SIGNIN_SECONDS METRICS_TOKEN_FILE")
    }
    do {
        let token = try? String(contentsOfFile: args[8], encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        try await NotifyRun(
            host: host,
            port: port,
            serverPID: pid,
            dir: URL(fileURLWithPath: args[3]),
            notifications: count,
            rate: rate,
            compareRate: Double(ProcessInfo.processInfo.environment["NOTIFY_COMPARE_RATE"] ?? "") ?? 1000,
            background: background,
            signInSeconds: signInSeconds,
            metricsToken: token
        ).run()
    } catch {
        fail("notify-run failed: \(error)")
    }
case "oidc-run":
    guard args.count == 8, let url = URL(string: args[1]), let host = url.host, let port = url.port,
        let pid = Int32(args[2]), let accounts = Int(args[5]), accounts > 0, let codes = Int(args[6]), codes > 0,
        let concurrency = Int(args[7]), concurrency > 0
    else {
        fail("usage: oidc-run URL SERVER_PID CLIENT_ID SECRET ACCOUNTS CODES CONCURRENCY")
    }
    do {
        try await OIDCRun(
            host: host,
            port: port,
            serverPID: pid,
            clientID: args[3],
            secret: args[4],
            accounts: accounts,
            codes: codes,
            concurrency: concurrency
        ).run()
    } catch {
        fail("oidc-run failed: \(error)")
    }
case "mfa-setup":
    guard args.count == 4, let count = Int(args[2]), count > 0 else { fail("usage: mfa-setup DBPATH COUNT DIR") }
    do {
        try await MFASetup.run(dbPath: args[1], count: count, dir: URL(fileURLWithPath: args[3]))
    } catch {
        fail("mfa-setup failed: \(error)")
    }
case "mfa-run":
    guard args.count == 7, let url = URL(string: args[1]), let host = url.host, let port = url.port,
        let pid = Int32(args[2]),
        let count = Int(args[4]), let rate = Double(args[5]), rate > 0, let seconds = Double(args[6]), seconds > 0
    else {
        fail("usage: mfa-run URL SERVER_PID DIR COUNT RATE SECONDS")
    }
    do {
        try await MFARun(
            host: host,
            port: port,
            serverPID: pid,
            dir: URL(fileURLWithPath: args[3]),
            count: count,
            rate: rate,
            seconds: seconds
        ).run()
    } catch {
        fail("mfa-run failed: \(error)")
    }
default:
    fail(
        "usage: setup DBPATH CONNS SENDERS DIR | run URL SERVER_PID DIR CONNS RATE SECONDS | mfa-setup DBPATH COUNT DIR | mfa-run URL SERVER_PID DIR COUNT RATE SECONDS"
    )
}
