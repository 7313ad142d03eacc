import Logging
import ServiceLifecycle

/// The push channel's background work, as a service of the application: the bus's LISTEN loop (on
/// PostgreSQL), and the delayed-message scheduler, which every node runs; each due message is claimed by
/// one of them. On shutdown every push connection is closed with 1001.
struct PushRunner: Service {
    let push: PushService
    /// How often the scheduler looks for delayed messages that came due.
    static let tick: Duration = .milliseconds(200)

    func run() async throws {
        let push = self.push
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        try await push.bus.run(deliver: { push.hub.apply($0) }, resync: { push.hub.resync() })
                    } catch {
                        push.logger.error(
                            "push bus stopped",
                            metadata: ["error": "\(String(reflecting: type(of: error)))"]
                        )
                    }
                }
                group.addTask {
                    // Connecting thousands of devices frees far more than it keeps (request parsing, JSON,
                    // rows, tasks): hand the freed pages back to the system now and then, or RSS keeps
                    // the peak of every burst.
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(5))
                        MemoryTrim.trim()
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        do {
                            _ = try await push.fireDue()
                        } catch is CancellationError {
                            return
                        } catch {
                            push.logger.warning(
                                "delayed-message scheduler failed",
                                metadata: ["error": "\(String(reflecting: type(of: error)))"]
                            )
                        }
                        try? await Task.sleep(for: Self.tick)
                    }
                }
                await group.waitForAll()
            }
        }
        push.hub.closeAll()
    }
}
