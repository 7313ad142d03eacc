import Metrics

/// Notifications on /metrics, per channel (`webpush`, `apns`): sent (accepted by the push service), failed
/// (refused, or given up after the retries), dropped (its push service's queue was full), retried, gone
/// (the push service said the subscription or token no longer exists, and it was deleted), and the jobs
/// waiting in the queues.
struct NotificationMetrics: Sendable {
    private struct PerChannel: Sendable {
        let sent: Counter
        let failed: Counter
        let dropped: Counter
        let retried: Counter
        let gone: Counter
        let queued: Meter

        init(_ channel: PushTarget.Channel) {
            let d = [("channel", channel.rawValue)]
            sent = Counter(label: "countersign_notifications_sent_total", dimensions: d)
            failed = Counter(label: "countersign_notifications_failed_total", dimensions: d)
            dropped = Counter(label: "countersign_notifications_dropped_total", dimensions: d)
            retried = Counter(label: "countersign_notifications_retried_total", dimensions: d)
            gone = Counter(label: "countersign_notifications_gone_total", dimensions: d)
            queued = Meter(label: "countersign_notifications_queued", dimensions: d)
        }
    }

    private let webPush = PerChannel(.webPush)
    private let apns = PerChannel(.apns)
    /// Provider tokens signed (VAPID JWTs and APNs JWTs): made once an hour per push service, not per push.
    let vapidTokens = Counter(
        label: "countersign_notifications_tokens_signed_total",
        dimensions: [("channel", "webpush")]
    )
    let apnsTokens = Counter(label: "countersign_notifications_tokens_signed_total", dimensions: [("channel", "apns")])

    private func of(_ c: PushTarget.Channel) -> PerChannel { c == .webPush ? webPush : apns }
    func sent(_ c: PushTarget.Channel) { of(c).sent.increment() }
    func failed(_ c: PushTarget.Channel) { of(c).failed.increment() }
    func dropped(_ c: PushTarget.Channel) { of(c).dropped.increment() }
    func retried(_ c: PushTarget.Channel) { of(c).retried.increment() }
    func gone(_ c: PushTarget.Channel) { of(c).gone.increment() }
    func queued(_ c: PushTarget.Channel, by n: Int) {
        if n >= 0 { of(c).queued.increment(by: Double(n)) } else { of(c).queued.decrement(by: Double(-n)) }
    }
}
