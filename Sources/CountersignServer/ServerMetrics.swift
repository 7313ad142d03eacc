import Foundation
import Metrics
import Prometheus

/// Process-wide Prometheus registry; swift-metrics is bootstrapped with it once (a process can only
/// bootstrap once, and tests build many applications).
enum ServerMetrics {
    static let registry = PrometheusCollectorRegistry()
    private static let bootstrapped: Void = {
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    }()

    static func bootstrap() { _ = bootstrapped }

    static func signIn(_ outcome: String) {
        Counter(label: "countersign_sign_ins_total", dimensions: [("outcome", outcome)]).increment()
    }

    static func text() -> [UInt8] { registry.emitToBuffer() }
}
