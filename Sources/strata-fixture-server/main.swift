import FixtureServer
import Foundation

// strata-fixture-server [--root fixtures] [--port 8080] [--version 1]
// Serves the bundled fixture datasets on 127.0.0.1; `kill -USR1` advances the dataset version
// (a dataset past its last version serves its versions again from v1).
/// Writes a line to stdout unbuffered (scripts wait for it).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

var root = "fixtures", port = 8080, version = 1
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--root": root = args.popFirst() ?? root
    case "--port": port = Int(args.popFirst() ?? "") ?? port
    case "--version": version = Int(args.popFirst() ?? "") ?? version
    default:
        FileHandle.standardError.write(Data("usage: strata-fixture-server [--root DIR] [--port N] [--version N]\n".utf8))
        exit(64)
    }
}
let server = FixtureServer(root: root, version: version)
server.wraps = true
let bound = try await server.start(port: port)
say("serving \(root) v\(version) on http://127.0.0.1:\(bound)")
signal(SIGUSR1, SIG_IGN)
let source = DispatchSource.makeSignalSource(signal: SIGUSR1)
source.setEventHandler {
    server.version += 1
    say("now serving v\(server.version)")
}
source.resume()
while true { try await Task.sleep(for: .seconds(3600)) }
