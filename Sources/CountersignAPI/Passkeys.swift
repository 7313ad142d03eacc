#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Passkeys (docs/PROTOCOL.md §5): WebAuthn's own JSON forms (Level 3 `PublicKeyCredential
// .parseCreationOptionsFromJSON` / `toJSON()`), wrapped with the ceremony they belong to.

public struct PasskeyCredentialDescriptor: Codable, Equatable, Sendable {
    public var type: String
    public var id: Base64URL
    public var transports: [String]?
    public init(id: Base64URL, transports: [String]?) {
        type = "public-key"
        self.id = id
        self.transports = transports
    }
}

/// `PublicKeyCredentialCreationOptionsJSON`.
public struct PasskeyCreationOptions: Codable, Equatable, Sendable {
    public struct RelyingParty: Codable, Equatable, Sendable {
        public var id: String
        public var name: String
    }
    public struct User: Codable, Equatable, Sendable {
        public var id: Base64URL
        public var name: String
        public var displayName: String
        public init(id: Base64URL, name: String, displayName: String) {
            self.id = id
            self.name = name
            self.displayName = displayName
        }
    }
    public struct Parameter: Codable, Equatable, Sendable {
        public var type: String
        public var alg: Int
    }
    public struct Selection: Codable, Equatable, Sendable {
        public var residentKey: String
        public var requireResidentKey: Bool
        public var userVerification: String
    }
    public struct Extensions: Codable, Equatable, Sendable {
        public var credProps: Bool?
        /// The PRF extension with no input (`{}`): the browser says whether the passkey has a PRF
        /// (`prf.enabled`) and evaluates nothing. The gate's salt is never asked at creation, whose
        /// results a client would have to keep out of the answer it sends (docs/SPEC.md §14.7).
        public var prf: PasskeyPRFInputs?
    }

    public var rp: RelyingParty
    public var user: User
    public var challenge: Base64URL
    public var pubKeyCredParams: [Parameter]
    public var timeout: Int
    public var excludeCredentials: [PasskeyCredentialDescriptor]
    public var authenticatorSelection: Selection
    public var attestation: String
    public var extensions: Extensions?

    public init(
        rpID: String,
        rpName: String,
        user: User,
        challenge: Base64URL,
        algorithms: [Int],
        timeoutMs: Int,
        exclude: [PasskeyCredentialDescriptor]
    ) {
        rp = RelyingParty(id: rpID, name: rpName)
        self.user = user
        self.challenge = challenge
        pubKeyCredParams = algorithms.map { Parameter(type: "public-key", alg: $0) }
        timeout = timeoutMs
        excludeCredentials = exclude
        authenticatorSelection = Selection(
            residentKey: "required",
            requireResidentKey: true,
            userVerification: "required"
        )
        attestation = "none"
        extensions = Extensions(credProps: true, prf: PasskeyPRFInputs())
    }
}

/// The answer to "start a ceremony": its ID and the options for the browser, `PasskeyCreationOptions` for
/// `navigator.credentials.create` (a registration) or `PasskeyRequestOptions` for `navigator.credentials.get`
/// (an assertion).
public struct PasskeyCeremonyStart<Options: Codable & Equatable & Sendable>: Codable, Equatable, Sendable {
    public var ceremonyId: String
    public var publicKey: Options
    public init(ceremonyId: String, publicKey: Options) {
        self.ceremonyId = ceremonyId
        self.publicKey = publicKey
    }
}

/// The answer to "start a registration".
public typealias PasskeyRegistrationStart = PasskeyCeremonyStart<PasskeyCreationOptions>
/// The answer to "start an assertion".
public typealias PasskeyAssertionStart = PasskeyCeremonyStart<PasskeyRequestOptions>

/// A credential as `PublicKeyCredential.toJSON()` gives it, with the response of its ceremony: an
/// attestation (`RegistrationResponseJSON`) or an assertion (`AuthenticationResponseJSON`).
public struct PasskeyCredential<Response: Codable & Equatable & Sendable>: Codable, Equatable, Sendable {
    public var id: String
    public var rawId: Base64URL
    public var type: String
    public var response: Response
    public var authenticatorAttachment: String?
    /// Read only to refuse a PRF output in it (docs/SPEC.md §14.7).
    public var clientExtensionResults: PasskeyClientExtensionOutputs?
    public init(rawId: Base64URL, response: Response, clientExtensionResults: PasskeyClientExtensionOutputs? = nil) {
        id = rawId.text
        self.rawId = rawId
        type = "public-key"
        self.response = response
        self.clientExtensionResults = clientExtensionResults
    }
}

/// `RegistrationResponseJSON`.
public typealias PasskeyRegistrationResponse = PasskeyCredential<PasskeyAttestation>
/// `AuthenticationResponseJSON`.
public typealias PasskeyAssertionResponse = PasskeyCredential<PasskeyAssertion>

/// `AuthenticatorAttestationResponseJSON`; the fields the server does not use (the convenience copies of the
/// key and authenticator data) are read by nothing.
public struct PasskeyAttestation: Codable, Equatable, Sendable {
    public var clientDataJSON: Base64URL
    public var attestationObject: Base64URL
    public var transports: [String]?
    public init(clientDataJSON: Base64URL, attestationObject: Base64URL, transports: [String]?) {
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }
}

/// Finish a registration: the ceremony, the browser's response and the name the user gave the passkey.
public struct PasskeyRegistrationFinish: Codable, Equatable, Sendable {
    public var ceremonyId: String
    public var name: String
    public var credential: PasskeyRegistrationResponse
    public init(ceremonyId: String, name: String, credential: PasskeyRegistrationResponse) {
        self.ceremonyId = ceremonyId
        self.name = name
        self.credential = credential
    }
}

/// A passkey as Settings lists it.
public struct PasskeySummary: Codable, Equatable, Sendable {
    public var id: String
    /// The credential ID the authenticator gave: what `allowCredentials` and an assertion's `rawId` carry.
    public var credentialId: Base64URL
    public var name: String
    public var createdAt: Date
    public var lastUsedAt: Date?
    /// Backup eligible: a synced passkey (a password manager's, a platform's), not bound to one device.
    public var synced: Bool
    public var backedUp: Bool
    public var aaguid: String
    /// The salt the browser's key gate evaluates this passkey's PRF at (docs/SPEC.md §14).
    public var prfSalt: Base64URL
    public init(
        id: String,
        credentialId: Base64URL,
        name: String,
        createdAt: Date,
        lastUsedAt: Date?,
        synced: Bool,
        backedUp: Bool,
        aaguid: String,
        prfSalt: Base64URL
    ) {
        self.id = id
        self.credentialId = credentialId
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.synced = synced
        self.backedUp = backedUp
        self.aaguid = aaguid
        self.prfSalt = prfSalt
    }
}

/// `PublicKeyCredentialRequestOptionsJSON`: for `navigator.credentials.get`. No `allowCredentials` in a
/// discoverable sign-in (the passkey names the account).
public struct PasskeyRequestOptions: Codable, Equatable, Sendable {
    public var challenge: Base64URL
    public var timeout: Int
    public var rpId: String
    public var allowCredentials: [PasskeyCredentialDescriptor]
    public var userVerification: String
    public init(challenge: Base64URL, timeoutMs: Int, rpID: String, allow: [PasskeyCredentialDescriptor]) {
        self.challenge = challenge
        timeout = timeoutMs
        rpId = rpID
        allowCredentials = allow
        userVerification = "required"
    }
}

/// `AuthenticatorAssertionResponseJSON`.
public struct PasskeyAssertion: Codable, Equatable, Sendable {
    public var clientDataJSON: Base64URL
    public var authenticatorData: Base64URL
    public var signature: Base64URL
    public var userHandle: Base64URL?
    public init(clientDataJSON: Base64URL, authenticatorData: Base64URL, signature: Base64URL, userHandle: Base64URL?) {
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}

/// Finish an assertion (sign-in, second factor, re-authentication): the ceremony and the browser's response.
public struct PasskeyAssertionFinish: Codable, Equatable, Sendable {
    public var ceremonyId: String
    public var credential: PasskeyAssertionResponse
    public init(ceremonyId: String, credential: PasskeyAssertionResponse) {
        self.ceremonyId = ceremonyId
        self.credential = credential
    }
}

/// A new name for a passkey.
public struct PasskeyRename: Codable, Equatable, Sendable {
    public var name: String
    public init(name: String) { self.name = name }
}

/// The account's passkeys, oldest first.
public struct PasskeyList: Codable, Equatable, Sendable {
    public var passkeys: [PasskeySummary]
    public init(passkeys: [PasskeySummary]) { self.passkeys = passkeys }
}

/// The PRF extension's inputs (`AuthenticationExtensionsPRFInputs`): one salt, `first`; none at creation.
public struct PasskeyPRFInputs: Codable, Equatable, Sendable {
    public struct Values: Codable, Equatable, Sendable {
        public var first: Base64URL
        public var second: Base64URL?
        public init(first: Base64URL, second: Base64URL? = nil) {
            self.first = first
            self.second = second
        }
    }
    public var eval: Values?
    public init(eval: Values? = nil) { self.eval = eval }
}

/// `AuthenticationExtensionsClientOutputsJSON` as far as the server reads it: the PRF extension's
/// outputs. `prf.results` is the key gate's secret and must never be sent; the server refuses a body
/// that carries it (docs/SPEC.md §14.7, PROTOCOL §5).
public struct PasskeyClientExtensionOutputs: Codable, Equatable, Sendable {
    public struct PRF: Codable, Equatable, Sendable {
        public var enabled: Bool?
        public var results: PasskeyPRFInputs.Values?
        public init(enabled: Bool? = nil, results: PasskeyPRFInputs.Values? = nil) {
            self.enabled = enabled
            self.results = results
        }
    }
    public var prf: PRF?
    public init(prf: PRF? = nil) { self.prf = prf }
}
