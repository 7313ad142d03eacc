import CQRencode

extension QRCode {
    /// How much of the symbol may be damaged or hidden and still read: roughly 7, 15, 25 and 30 percent.
    /// Higher levels cost capacity, so a long URI may need a larger (denser) symbol.
    public enum Level: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case low, medium, quartile, high

        var qrencode: QRecLevel {
            switch self {
            case .low: QR_ECLEVEL_L
            case .medium: QR_ECLEVEL_M
            case .quartile: QR_ECLEVEL_Q
            case .high: QR_ECLEVEL_H
            }
        }

        public var description: String {
            switch self {
            case .low: "L (7%)"
            case .medium: "M (15%)"
            case .quartile: "Q (25%)"
            case .high: "H (30%)"
            }
        }
    }
}
