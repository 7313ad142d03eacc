import Foundation
import PackagePlugin

/// Writes `BuildInfo.swift` (the commit the binary was built from) before each build of the target, so that
/// `countersign version` names it. Outside a git checkout the commit is "unknown"; a checkout with
/// uncommitted changes to tracked files gets "-modified". The file is rewritten only when its text
/// changes, so an unchanged tree does not recompile the target.
@main
struct CommitStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Generated")
        let script = """
            set -e
            mkdir -p "$2"
            commit=$(git -C "$1" rev-parse HEAD 2>/dev/null) || commit=unknown
            if [ "$commit" != unknown ] && [ -n "$(git -C "$1" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
              commit="$commit-modified"
            fi
            printf '/// Written by the CommitStamp plugin at build time.\\nenum BuildInfo {\\n    static let commit = "%s"\\n}\\n' "$commit" > "$2/BuildInfo.swift.new"
            if cmp -s "$2/BuildInfo.swift.new" "$2/BuildInfo.swift"; then rm "$2/BuildInfo.swift.new"; else mv "$2/BuildInfo.swift.new" "$2/BuildInfo.swift"; fi
            """
        return [
            .prebuildCommand(
                displayName: "Stamping the commit into \(target.name)",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "commit-stamp", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output
            )
        ]
    }
}
