import Foundation
import StrataAdapters
import StrataDomain
import StrataJSON
import Synchronization
import Testing

/// Which changes an alert fires on, the notification's JSON, and delivery's order and retries
/// (over in-memory fakes behind the repository and sender protocols).
@Suite struct AlertTests {
    static func json(_ s: String) -> JSONValue { try! JSONValue(parsing: Array(s.utf8)) }
    static let before = json(#"{"id": 3, "model": "RAV4", "price": 12300, "owner": {"name": "Ann"}, "km": 10}"#)
    static let after = json(#"{"id": 3, "model": "RAV4", "price": 11900, "owner": {"name": "Ann"}, "km": 12}"#)
    static let changed = ItemDiff(
        id: "3", title: "RAV4", kind: .changed,
        changes: [
            Change(kind: .replaced, path: "/price", old: .number("12300"), new: .number("11900")),
            Change(kind: .replaced, path: "/km", old: .number("10"), new: .number("12"))
        ],
        before: before, after: after)
    static let added = ItemDiff(id: "3", title: "RAV4", kind: .added, changes: [], before: nil, after: after)
    static let removed = ItemDiff(id: "3", title: "RAV4", kind: .removed, changes: [], before: before, after: nil)
    static let hook = AlertTarget.webhook(URL(string: "http://127.0.0.1:9/hook")!)

    static func alert(_ kinds: Set<ChangeKind> = Set(ChangeKind.allCases), fields: [String] = [], when: String? = nil) -> Alert {
        Alert(source: "cars", name: "a", kinds: kinds, fields: fields, condition: when.map { try! ItemExpression(parsing: $0) }, target: hook)
    }

    /// (alert, diff, fires)
    static let cases: [(String, Alert, ItemDiff, Bool)] = [
        ("any change", alert(), changed, true),
        ("kinds", alert([.added]), changed, false),
        ("kinds added", alert([.added]), added, true),
        ("a touched field", alert(fields: ["price"]), changed, true),
        ("a pointer", alert(fields: ["/price"]), changed, true),
        ("an untouched field", alert(fields: ["owner.name"]), changed, false),
        ("a field inside", alert(fields: ["owner"]), changed, false),
        ("added with the field", alert(fields: ["owner.name"]), added, true),
        ("added without it", alert(fields: ["color"]), added, false),
        ("removed with the field", alert(fields: ["price"]), removed, true),
        ("condition holds", alert(when: "price < old.price"), changed, true),
        ("condition fails", alert(when: "price > old.price"), changed, false),
        ("condition on an addition", alert(when: "old.price = null and price < 12000"), added, true),
        ("condition on a removal", alert(when: "price = null"), removed, true),
        ("all three", alert([.changed], fields: ["price"], when: "old.price - price >= 400"), changed, true),
        ("all three, too small", alert([.changed], fields: ["price"], when: "old.price - price >= 500"), changed, false)
    ]

    @Test(arguments: cases) func fires(_ what: String, _ alert: Alert, _ diff: ItemDiff, _ expected: Bool) {
        #expect(alert.matches(diff) == expected, "\(what)")
    }

    @Test func theTitleSaysWhatChanged() {
        #expect(Self.changed.headline == "RAV4 (3) changed: price 12300 → 11900, km 10 → 12")
        #expect(Self.added.headline == "RAV4 (3) added")
        var many = Self.changed
        many.changes += [Change(kind: .added, path: "/a~1b", new: .string("x\ny")), Change(kind: .removed, path: "/c", old: .bool(true))]
        #expect(many.headline == "RAV4 (3) changed: price 12300 → 11900, km 10 → 12, a/b — → x↵y, and 1 more")
    }

    @Test func aNotificationsJSONReadsBack() throws {
        let n = AlertNotification(
            id: "ntf-1", alert: "cars/a", source: "cars", item: "3", kind: "changed", seq: 42, observedAt: Date(timeIntervalSince1970: 1_790_000_000),
            title: "RAV4 (3) changed: price 12300 → 11900", changes: [Change(kind: .replaced, path: "/price", old: .number("12300"), new: .number("11900"))],
            url: "http://127.0.0.1:8080/_strata/sources/cars/items/3")
        guard case .object(let o) = n.json else { Issue.record("not an object"); return }
        #expect(Set(o.keys) == ["id", "alert", "source", "item", "kind", "seq", "observedAt", "title", "changes", "url"])
        #expect(AlertNotification(json: try JSONValue(parsing: n.body)) == n)
        let stored = Alert(
            source: "cars", name: "a", kinds: [.changed, .added], fields: ["price"], condition: try ItemExpression(parsing: "price < 1"), target: Self.hook)
        #expect(Alert(source: "cars", name: "a", definition: stored.definition) == stored)
    }

    @Test func retriesWaitLongerEachTimeUpToFiveMinutes() {
        #expect((0...10).map { DeliverNotifications.retryDelay(attempts: $0) } == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300])
    }

    @Test func deliveryGoesInOrderPerAlertAndAFailureHoldsBackOnlyItsAlert() async throws {
        let clock = FakeClock()
        let repo = FakeAlerts(alerts: ["cars/a", "cars/b"], clock: clock)
        for (i, alert) in ["cars/a", "cars/a", "cars/b", "cars/a", "cars/b"].enumerated() { repo.queue(id: "n\(i)", alert: alert) }
        let sender = FakeSender()
        sender.failing = ["n1"]
        let deliver = DeliverNotifications(alerts: repo, sender: sender, clock: clock)
        let first = try await deliver.round()
        // a: n0 delivered, n1 fails and holds n3 back; b: n2 and n4 delivered.
        #expect(sender.sent == ["n0", "n1", "n2", "n4"])
        #expect(first.attempts.map(\.willRetry) == [false, true, false, false])
        #expect(first.nextRetry == clock.now().addingTimeInterval(1))
        #expect(try await deliver.round().attempts.isEmpty, "n1 waits a second")
        clock.advance(1)
        sender.failing = []
        _ = try await deliver.round()
        #expect(sender.sent == ["n0", "n1", "n2", "n4", "n1", "n3"], "n1 again under its id, then n3")
        #expect(repo.states == ["n0": "delivered", "n1": "delivered", "n2": "delivered", "n3": "delivered", "n4": "delivered"])
        #expect(repo.log.filter { $0 == "sent n1" }.count == 2 && repo.log.contains("failed n1 retry"))
    }

    @Test func aRefusalSettlesAndTheNextGoesOnAndRetriesEnd() async throws {
        let clock = FakeClock()
        let repo = FakeAlerts(alerts: ["cars/a"], clock: clock)
        for i in 0..<3 { repo.queue(id: "n\(i)", alert: "cars/a") }
        let sender = FakeSender()
        sender.refusing = ["n0"]
        sender.failing = ["n1"]
        var deliver = DeliverNotifications(alerts: repo, sender: sender, clock: clock)
        deliver.maxAttempts = 3
        for _ in 0..<3 {
            _ = try await deliver.round()
            clock.advance(10)
        }
        #expect(repo.states["n0"] == "failed", "a 4xx is final")
        #expect(repo.states["n1"] == "failed", "three attempts, then given up")
        #expect(repo.states["n2"] == "delivered")
        #expect(sender.sent == ["n0", "n1", "n1", "n1", "n2"])
    }
}

final class FakeClock: WatchClock, Sendable {
    private let t = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    func now() -> Date { t.withLock { $0 } }
    func sleep(seconds: Double) async throws { advance(seconds) }
    func advance(_ s: Double) { t.withLock { $0 = $0.addingTimeInterval(s) } }
}

final class FakeSender: NotificationSender, Sendable {
    private struct State {
        var sent: [String] = []
        var failing: Set<String> = []
        var refusing: Set<String> = []
    }
    private let state = Mutex(State())
    var sent: [String] { state.withLock { $0.sent } }
    var failing: Set<String> {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }
    var refusing: Set<String> {
        get { state.withLock { $0.refusing } }
        set { state.withLock { $0.refusing = newValue } }
    }

    func send(_ body: [UInt8], notification: PendingNotification, to target: AlertTarget) async -> DeliveryOutcome {
        state.withLock { s in
            s.sent.append(notification.id)
            if s.refusing.contains(notification.id) { return .refused("410", status: 410) }
            return s.failing.contains(notification.id) ? .retry("503", status: 503) : .delivered(status: 200)
        }
    }
}

/// Alerts and notifications in memory, each attempt stamped with the fake clock's time (as the
/// store stamps it with the time its event is recorded).
final class FakeAlerts: AlertRepository, Sendable {
    let clock: FakeClock
    private struct State {
        var alerts: [String]
        var pending: [PendingNotification] = []
        var states: [String: String] = [:]
        var log: [String] = []
    }
    private let state: Mutex<State>
    init(alerts: [String], clock: FakeClock) {
        state = Mutex(State(alerts: alerts))
        self.clock = clock
    }

    var states: [String: String] { state.withLock { $0.states } }
    var log: [String] { state.withLock { $0.log } }

    func queue(id: String, alert: String) {
        state.withLock {
            $0.pending.append(
                PendingNotification(id: id, alert: alert, source: "cars", item: "1", kind: "changed", attempts: 0, lastAttemptAt: nil, lastError: nil))
        }
    }

    func alerts() async throws -> [AlertSummary] {
        state.withLock { s in
            s.alerts.map { key in
                let parts = key.split(separator: "/").map(String.init)
                return AlertSummary(
                    alert: Alert(source: parts[0], name: parts[1], target: .webhook(URL(string: "http://127.0.0.1:9/")!)), addedSeq: 1, addedID: key, queued: 0,
                    delivered: 0, failed: 0)
            }
        }
    }
    func add(_ alert: Alert) async throws {}
    func remove(source: String, name: String) async throws {}
    func evaluatedThrough(source: String) async throws -> UInt64 { 0 }
    func queue(_ notifications: [AlertNotification], source: String, pass: LogEntry) async throws -> Int { 0 }
    func notificationID(alert: AlertSummary, item: String, pass: LogEntry) -> String { "" }
    func notifications(alert: String, limit: Int) async throws -> [AlertNotification] { [] }
    func pending() async throws -> [PendingNotification] { state.withLock { $0.pending } }
    func body(of notification: PendingNotification) async throws -> [UInt8] { Array("{}".utf8) }
    func recordSending(_ n: PendingNotification, attempt: Int) async throws { state.withLock { $0.log.append("sent \(n.id)") } }
    func recordOutcome(_ n: PendingNotification, attempt: Int, outcome: DeliveryOutcome, willRetry: Bool) async throws {
        state.withLock { s in
            guard let i = s.pending.firstIndex(where: { $0.id == n.id }) else { return }
            s.pending[i].attempts = attempt
            s.pending[i].lastAttemptAt = clock.now()
            switch outcome {
            case .delivered:
                s.states[n.id] = "delivered"; s.pending.remove(at: i); s.log.append("delivered \(n.id)")
            case .retry, .refused:
                s.log.append("failed \(n.id) " + (willRetry ? "retry" : "final"))
                if !willRetry { s.states[n.id] = "failed"; s.pending.remove(at: i) }
            }
        }
    }
}
