import Foundation
import OrbitCoveModels

/// The words of each kind of reminder.
enum ReminderWording {
    struct Words: Equatable {
        var type: NotificationType
        var title: String
        var body: String
    }

    static func words(_ due: ReminderDue) -> Words {
        let when = due.startsAt.map {
            EventWording.when($0, allDay: due.allDay ?? false, timeZone: due.timeZone ?? "UTC")
        }
        switch due.kind {
        case .eventReminder:
            return Words(
                type: .eventReminder, title: "Reminder: \(due.title)",
                body: "\(when ?? "Soon") in \(due.communityName).")
        case .rsvpNudge:
            return Words(
                type: .rsvpRequest, title: "Are you coming? \(due.title)",
                body: "\(when ?? "Soon") in \(due.communityName). Let them know if you are coming.")
        case .rsvpSummary:
            let answers = due.answers ?? .init(yes: 0, no: 0, maybe: 0, silent: 0)
            return Words(
                type: .eventReminder, title: "Who is coming: \(due.title)",
                body: "\(when ?? "Soon"): \(answers.yes) in, \(answers.no) out, \(answers.maybe) maybe, "
                    + "\(answers.silent) not answered.")
        case .duesReminder:
            let amount = due.amount.map {
                "\(Currencies.decimal($0, currency: due.currency ?? "USD")) \(due.currency ?? "")"
            }
            let owed = amount.map { "\($0) " } ?? ""
            let title =
                due.step < 0
                ? "\(due.title): \(owed)due \(due.occurrence)"
                : due.step == 0
                    ? "\(due.title): \(owed)due today"
                    : "\(due.title) is overdue: \(owed)was due \(due.occurrence)"
            return Words(type: .paymentRequest, title: title, body: "Dues in \(due.communityName)")
        case .careDue:
            return Words(type: .careReminder, title: due.title, body: "Due now in \(due.communityName).")
        case .careEscalation:
            return Words(
                type: .careReminder, title: "Still not done: \(due.title)",
                body: "It was due a while ago in \(due.communityName). Can someone take it?")
        }
    }

    /// One per event instance or care occurrence (a later reminder of it replaces the earlier
    /// push on the lock screen); within APNs' 64 bytes, as the column holding it.
    static func collapseId(_ due: ReminderDue) -> String? {
        let subject = due.subjectId.lowercasedString
        switch due.kind {
        case .eventReminder, .rsvpNudge, .rsvpSummary:
            let instance = due.recurrenceId.map { Int($0.timeIntervalSince1970) } ?? 0
            return "remind-\(subject)-\(instance)"
        case .duesReminder: return nil
        case .careDue, .careEscalation: return "care-\(subject)-\(due.occurrence)"
        }
    }

    /// " (sent 12 minutes late)" for a reminder fired more than a minute after it fell due.
    static func late(_ due: ReminderDue) -> String {
        let seconds = due.lateSeconds
        guard seconds >= 60 else { return "" }
        let minutes = seconds / 60
        if minutes < 120 { return " (sent \(minutes) minute\(minutes == 1 ? "" : "s") late)" }
        let hours = minutes / 60
        return " (sent \(hours) hours late)"
    }
}
