import Foundation
package import StrataData
package import StrataDomain

/// ``NotificationSender`` over libcurl (webhooks) and `/bin/sh` (exec).
package struct SubprocessNotificationSender: NotificationSender {
    let webhook: WebhookSender
    let exec: ExecSender

    package init(webhook: WebhookSender, exec: ExecSender) {
        self.webhook = webhook
        self.exec = exec
    }

    package func send(_ body: [UInt8], notification n: PendingNotification, to target: AlertTarget) async -> DeliveryOutcome {
        let outcome: SendOutcome
        switch target {
        case .webhook(let url):
            outcome = await webhook.send(body, id: n.id, alert: n.alert, to: url.absoluteString)
        case .exec(let command):
            outcome = await exec.send(
                body, command: command,
                environment: [
                    "STRATA_NOTIFICATION_ID": n.id, "STRATA_ALERT": n.alert, "STRATA_SOURCE": n.source, "STRATA_ITEM": n.item, "STRATA_KIND": n.kind
                ])
        }
        return switch outcome {
        case .delivered(let status): .delivered(status: status)
        case .retry(let e, let status): .retry(e, status: status)
        case .refused(let e, let status): .refused(e, status: status)
        }
    }
}
