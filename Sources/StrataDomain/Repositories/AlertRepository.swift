/// Alerts and their notifications, every change of them an event.
package protocol AlertRepository: Sendable {
    /// Every alert with its counts, by source and name.
    func alerts() async throws -> [AlertSummary]
    /// Throws `conflict` when the source already has an alert of that name.
    func add(_ alert: Alert) async throws
    /// Throws `notFound` when there is no such alert. Its pending notifications are cancelled.
    func remove(source: String, name: String) async throws
    /// The last pass of `source` whose changes were matched (0: none yet).
    func evaluatedThrough(source: String) async throws -> UInt64
    /// Queues the notifications of one pass and marks the pass evaluated, in one transaction.
    /// A notification whose id is already in the log is not queued again. Returns how many were new.
    func queue(_ notifications: [AlertNotification], source: String, pass: LogEntry) async throws -> Int
    /// The id a notification of `alert` for `item`'s change at `pass` has: the same whoever
    /// works it out, however often.
    func notificationID(alert: AlertSummary, item: String, pass: LogEntry) -> String
    /// The notifications queued for `alert` (`SOURCE/NAME`), newest first, at most `limit`.
    func notifications(alert: String, limit: Int) async throws -> [AlertNotification]
    /// Pending notifications, oldest first.
    func pending() async throws -> [PendingNotification]
    /// The body a notification is delivered with.
    func body(of notification: PendingNotification) async throws -> [UInt8]
    /// Records that an attempt starts (before anything is sent).
    func recordSending(_ notification: PendingNotification, attempt: Int) async throws
    /// Records how an attempt ended; `willRetry` false settles a failure for good.
    func recordOutcome(_ notification: PendingNotification, attempt: Int, outcome: DeliveryOutcome, willRetry: Bool) async throws
}

/// Sends notifications to their receivers.
package protocol NotificationSender: Sendable {
    func send(_ body: [UInt8], notification: PendingNotification, to target: AlertTarget) async -> DeliveryOutcome
}
