import CountersignCrypto
import Crypto
import Foundation

/// A software WebAuthn authenticator with one ES256 credential, for tests of the server's checks: it
/// builds client data, attestation objects and assertions as a browser and an authenticator would, and
/// lets a test bend any part of them.
public struct SoftAuthenticator: Sendable {
    public let key: P256.Signing.PrivateKey
    public let credentialID: [UInt8]
    public var signCount: UInt32
    public var backupEligible: Bool
    public var aaguid: [UInt8] = Array(repeating: 0xAA, count: 16)

    public init(credentialID: [UInt8]? = nil, signCount: UInt32 = 0, backupEligible: Bool = false) {
        key = P256.Signing.PrivateKey()
        self.credentialID = credentialID ?? (0..<32).map { _ in UInt8.random(in: 0...255) }
        self.signCount = signCount
        self.backupEligible = backupEligible
    }

    public static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    public var coseKey: [UInt8] {
        let p = Array(key.publicKey.x963Representation)
        return TestCBOR.encode(
            TestCBOR.map([
                (.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)),
                (.int(-2), .bytes(Array(p[1..<33]))), (.int(-3), .bytes(Array(p[33..<65]))),
            ])
        )
    }

    public static func clientData(
        type: String,
        challenge: [UInt8],
        origin: String,
        crossOrigin: Bool = false
    ) -> [UInt8] {
        Array(
            #"{"type":"\#(type)","challenge":"\#(base64URL(challenge))","origin":"\#(origin)","crossOrigin":\#(crossOrigin)}"#
                .utf8
        )
    }

    /// UP | UV, and BE (and BS) when backup eligible.
    public var defaultFlags: UInt8 { 0x05 | (backupEligible ? 0x18 : 0) }

    public func authenticatorData(rpID: String, flags: UInt8, count: UInt32, attested: Bool) -> [UInt8] {
        var out = Array(SHA256.hash(data: Array(rpID.utf8))) + [flags | (attested ? 0x40 : 0)]
        out += withUnsafeBytes(of: count.bigEndian, Array.init)
        if attested {
            out += aaguid + [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)] + credentialID + coseKey
        }
        return out
    }

    /// A registration response's parts; `packed` makes a self attestation signed by the new key.
    public func register(
        rpID: String,
        challenge: [UInt8],
        origin: String,
        flags: UInt8? = nil,
        packed: Bool = false,
        type: String = "webauthn.create"
    ) -> (clientDataJSON: [UInt8], attestationObject: [UInt8]) {
        let client = Self.clientData(type: type, challenge: challenge, origin: origin)
        let data = authenticatorData(rpID: rpID, flags: flags ?? defaultFlags, count: signCount, attested: true)
        var statement = CBOR.map([])
        if packed {
            let sig = Array(try! key.signature(for: data + Array(SHA256.hash(data: client))).derRepresentation)
            statement = TestCBOR.map([(.text("alg"), .int(-7)), (.text("sig"), .bytes(sig))])
        }
        let object = TestCBOR.encode(
            TestCBOR.map([
                (.text("fmt"), .text(packed ? "packed" : "none")), (.text("attStmt"), statement),
                (.text("authData"), .bytes(data)),
            ])
        )
        return (client, object)
    }

    /// An assertion's parts; the count goes up by one first, as a device-bound authenticator's does.
    public mutating func assert(
        rpID: String,
        challenge: [UInt8],
        origin: String,
        flags: UInt8? = nil,
        type: String = "webauthn.get",
        crossOrigin: Bool = false
    ) -> (clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8]) {
        signCount &+= backupEligible ? 0 : 1
        let client = Self.clientData(type: type, challenge: challenge, origin: origin, crossOrigin: crossOrigin)
        let data = authenticatorData(rpID: rpID, flags: flags ?? defaultFlags, count: signCount, attested: false)
        let sig = Array(try! key.signature(for: data + Array(SHA256.hash(data: client))).derRepresentation)
        return (client, data, sig)
    }
}
