import Metrics

/// The push channel on /metrics: connections open on this node, queue entries sent over them, and
/// delayed messages this node fired (summed over nodes, each delayed message counts once), and
/// acknowledgement writes.
struct PushMetrics: Sendable {
    let connections = Meter(label: "countersign_push_connections")
    let delivered = Counter(label: "countersign_push_delivered_total")
    let dueFired = Counter(label: "countersign_push_delayed_fired_total")
    let dueSignals = Counter(label: "countersign_push_due_signals_total")
    /// Acknowledgement writes (several `ack` frames of one connection merge into one while a write runs).
    let ackWrites = Counter(label: "countersign_push_ack_writes_total")
}
