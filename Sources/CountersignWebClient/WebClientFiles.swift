import Foundation

/// The web client (docs/WEB.md): its HTML, CSS and ES modules in `web/`, shipped as this target's resource
/// exactly as they are in the repository (no build step). It is a client of the HTTP API, a peer of the CLI
/// and the SDK; the server serves these files at `/`.
public enum WebClientFiles {
    /// The `web` folder as installed beside the binary, or nil when the resource bundle is missing.
    public static var root: URL? { Bundle.module.url(forResource: "web", withExtension: nil) }
}
