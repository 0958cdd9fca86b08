import FixtureServer
import Foundation
import StrataTestSupport
import TestScratch
import Testing

/// Encryption at rest through the binary: `init --encrypt`, a missing, wrong or exposed key
/// (exit 4, nothing changed), reads equal to a store without a key, `verify --chain-only` without
/// the key, and `rekey` to a new key and back to none.
@Suite(.serialized) struct EncryptionCLITests {
    func addCars(_ server: FixtureServer, _ store: String, env: [String: String]) async throws {
        let add = try await strata(
            [
                "source", "add", "cars", "--url", server.baseURL + "/cars/offers", "--items", "results", "--title", "model",
                "--page-param", "page", "--page-size", "10", "--index", "make",
                "--detail-url", server.baseURL + "/cars/offers/{id}"
            ], store: store, env: env)
        #expect(add.status == 0, "\(add.stderr)")
    }

    @Test func anEncryptedStoreFromInitToRekey() async throws {
        try await withFixtureServer { server in
            let (sealed, plain) = (makeStoreDir(), makeStoreDir())
            let keys = TestScratch.path("keys")
            let key = keys + "/store.key"
            let env = ["STRATA_KEY_FILE": key]
            let initialized = try await strata(["init", "--encrypt"], store: sealed, env: env)
            #expect(initialized.status == 0 && initialized.stdout.contains("encrypted"), "\(initialized.stderr)")
            #expect((try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int) == 0o600)
            #expect(try Data(contentsOf: URL(fileURLWithPath: key)).count == 32)
            #expect(try await strata(["init", "--encrypt"], store: sealed, env: env).status == 1)  // exists already

            try await addCars(server, sealed, env: env)
            try await addCars(server, plain, env: [:])
            for v in 1...3 {
                server.version = v
                #expect(try await strata(["fetch", "cars", "--details"], store: sealed, env: env).status == 0)
                #expect(try await strata(["fetch", "cars", "--details"], store: plain).status == 0)
            }
            // Reads print what a store without a key prints (times and run ids aside).
            for args in [
                ["list", "cars", "--format", "json"], ["list", "cars", "--where", "make=Kia", "--format", "json"],
                ["list", "cars", "--sort=-make", "--limit", "5", "--format", "json"], ["show", "cars", "3", "--offline", "--format", "json"]
            ] {
                let a = try await strata(args, store: sealed, env: env), b = try await strata(args, store: plain)
                #expect(a.status == 0 && a.stdout == b.stdout, "\(args): \(a.stderr)")
            }
            let sorted = try await strata(["list", "cars", "--sort", "make", "--limit", "2"], store: sealed, env: env)
            #expect(sorted.stderr.contains("encrypted store keeps no sorted index"))
            let h1 = try await strata(["history", "cars", "3", "--format", "json"], store: sealed, env: env)
            let h2 = try await strata(["history", "cars", "3", "--format", "json"], store: plain)
            let (v1, v2) = (try Self.versions(h1.stdout), try Self.versions(h2.stdout))
            #expect(v1 == v2 && !v1.isEmpty, "\(v1) vs \(v2)")
            #expect(try await strata(["verify"], store: sealed, env: env).status == 0)

            // No key, another key, a key others can read: exit 4, a message that says what to do.
            let before = try Data(contentsOf: URL(fileURLWithPath: sealed + "/data.mdb"))
            let none = try await strata(["list", "cars"], store: sealed, env: ["STRATA_KEY_FILE": ""])
            #expect(none.status == 4 && none.stderr.contains("STRATA_KEY_FILE"), "\(none.stderr)")
            let other = keys + "/other.key"
            #expect(try await strata(["key", "generate", other], store: sealed).status == 0)
            #expect(try await strata(["key", "generate", other], store: sealed).status == 1)  // never replaced
            let wrong = try await strata(["list", "cars"], store: sealed, env: ["STRATA_KEY_FILE": other])
            #expect(wrong.status == 4 && wrong.stderr.contains("not the key"), "\(wrong.stderr)")
            chmod(key, 0o644)
            let exposed = try await strata(["list", "cars"], store: sealed, env: env)
            #expect(exposed.status == 4 && exposed.stderr.contains("chmod 600"), "\(exposed.stderr)")
            chmod(key, 0o600)
            #expect(try Data(contentsOf: URL(fileURLWithPath: sealed + "/data.mdb")) == before)
            let chain = try await strata(["verify", "--chain-only"], store: sealed, env: ["STRATA_KEY_FILE": ""])
            #expect(chain.status == 0 && chain.stdout.contains("hash chain: ok"), "\(chain.stdout)\(chain.stderr)")
            // A key for a store without encryption is refused too.
            #expect(try await strata(["list", "cars"], store: plain, env: env).status == 4)

            // Rekey while another process has the store open: refused, the store as it was, the
            // copy made so far kept beside it for the next run.
            let listed = try await strata(["list", "cars", "--format", "json"], store: sealed, env: env).stdout
            let newKey = keys + "/new.key"
            let (holder, holderOut, _) = try startStrata(["_hold-read", "--seconds", "60"], store: sealed, env: env)
            let line = try await offPool { String(decoding: holderOut.fileHandleForReading.availableData, as: UTF8.self) }
            #expect(line.contains("holding"))
            let sealedBytes = try Data(contentsOf: URL(fileURLWithPath: sealed + "/data.mdb"))
            let refused = try await strata(["rekey", "--new-key-file", newKey], store: sealed, env: env)
            #expect(
                refused.status == 1 && refused.stderr.contains("open in another strata process") && refused.stderr.contains("copy made so far is kept"),
                "\(refused.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: sealed + "/data.mdb")) == sealedBytes)
            #expect(FileManager.default.fileExists(atPath: sealed + ".rekey/data.mdb"))
            kill(holder.processIdentifier, SIGKILL)
            try await waitForExit(holder)

            // Rekey to a new key (going on from the kept copy): the old one stops working, the
            // new one reads the same.
            let rekey = try await strata(["rekey", "--new-key-file", newKey], store: sealed, env: env)
            #expect(rekey.status == 0 && rekey.stdout.contains("under the new key"), "\(rekey.stderr)")
            #expect(!FileManager.default.fileExists(atPath: sealed + ".rekey"))
            #expect(try await strata(["list", "cars"], store: sealed, env: env).status == 4)
            #expect(try await strata(["list", "cars", "--format", "json"], store: sealed, env: ["STRATA_KEY_FILE": newKey]).stdout == listed)
            #expect(try await strata(["verify"], store: sealed, env: ["STRATA_KEY_FILE": newKey]).status == 0)
            // A rekey stopped after its swap only cleans up when run again.
            try FileManager.default.createDirectory(atPath: sealed + ".rekey", withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: sealed + "/.strata-rekey-swapped", contents: Data())
            let cleanup = try await strata(["rekey", "--new-key-file", newKey], store: sealed, env: ["STRATA_KEY_FILE": newKey])
            #expect(cleanup.status == 0 && cleanup.stdout.contains("removed the old one"))
            #expect(!FileManager.default.fileExists(atPath: sealed + ".rekey"))
            // And back to no encryption.
            #expect(try await strata(["rekey", "--decrypt"], store: sealed, env: ["STRATA_KEY_FILE": newKey]).status == 0)
            #expect(try await strata(["list", "cars", "--format", "json"], store: sealed, env: ["STRATA_KEY_FILE": ""]).stdout == listed)
            let grep = try Data(contentsOf: URL(fileURLWithPath: sealed + "/data.mdb"))
            #expect(grep.range(of: Data("Toyota".utf8)) != nil)
        }
    }

    /// Each version's number, kind, origin and changes (times, run ids and detail seqs, which follow the order concurrent downloads finish in, differ between stores).
    static func versions(_ json: String) throws -> [String] {
        guard let list = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] else { return [] }
        return try list.map { v in
            let changes = try JSONSerialization.data(withJSONObject: v["changes"] ?? [], options: [.sortedKeys])
            return "\(v["version"] ?? "") \(v["kind"] ?? "") \(v["origin"] ?? "") \(String(decoding: changes, as: UTF8.self))"
        }
    }
}
