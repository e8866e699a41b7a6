import Foundation

/// Where a shared care reminder's occurrence is: waiting, or marked (once, by whoever did it).
package enum CareOccurrenceStatus: String, Codable, Sendable, CaseIterable {
    case pending
    case done
    case skipped
}

/// A shared care reminder (the dog-care seed, for any community): a rule and a time of day in
/// the community's zone, optionally someone it is assigned to, and how long an undone
/// occurrence waits before everyone hears of it.
package struct CareReminder: Codable, Sendable, Equatable {
    package var id: UUID
    package var communityId: UUID
    package var title: String
    @ExplicitNull package var notes: String?
    /// An RFC 5545 RRULE value (`FREQ=DAILY`), without `DTSTART`.
    package var recurrenceRule: String
    /// `HH:MM`, 24-hour, on the community's clock.
    package var timeOfDay: String
    /// The first day it may fall on, `YYYY-MM-DD`.
    package var startsOn: String
    /// The community's zone, which the time of day is read in.
    package var timeZone: String
    @ExplicitNull package var assigneeId: UUID?
    @ExplicitNull package var escalateAfterMinutes: Int?
    @ExplicitNull package var createdBy: UUID?
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: UUID, communityId: UUID, title: String, notes: String?, recurrenceRule: String, timeOfDay: String,
        startsOn: String, timeZone: String, assigneeId: UUID?, escalateAfterMinutes: Int?, createdBy: UUID?,
        createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.communityId = communityId
        self.title = title
        self.notes = notes
        self.recurrenceRule = recurrenceRule
        self.timeOfDay = timeOfDay
        self.startsOn = startsOn
        self.timeZone = timeZone
        self.assigneeId = assigneeId
        self.escalateAfterMinutes = escalateAfterMinutes
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One day's occurrence of a care reminder, keyed by (reminder, local date).
package struct CareOccurrence: Codable, Sendable, Equatable {
    package var id: UUID
    package var reminderId: UUID
    package var communityId: UUID
    /// The local date it falls on, `YYYY-MM-DD`.
    package var date: String
    /// When it falls due (the time of day on that date, by the DST rule in docs/ARCHITECTURE.md).
    package var dueAt: Date
    package var status: CareOccurrenceStatus
    @ExplicitNull package var completedBy: UUID?
    @ExplicitNull package var completedAt: Date?
    /// When a snoozed occurrence is due again.
    @ExplicitNull package var snoozedUntil: Date?
    /// Who is told first: this occurrence's assignee when it was reassigned, else the reminder's.
    @ExplicitNull package var assigneeId: UUID?
    /// Whether `assigneeId` was set for this occurrence alone.
    package var reassigned: Bool
    package var updatedAt: Date

    package init(
        id: UUID, reminderId: UUID, communityId: UUID, date: String, dueAt: Date, status: CareOccurrenceStatus,
        completedBy: UUID?, completedAt: Date?, snoozedUntil: Date?, assigneeId: UUID?, reassigned: Bool,
        updatedAt: Date
    ) {
        self.id = id
        self.reminderId = reminderId
        self.communityId = communityId
        self.date = date
        self.dueAt = dueAt
        self.status = status
        self.completedBy = completedBy
        self.completedAt = completedAt
        self.snoozedUntil = snoozedUntil
        self.assigneeId = assigneeId
        self.reassigned = reassigned
        self.updatedAt = updatedAt
    }
}

/// What the reminders service fires.
package enum ReminderKind: String, Codable, Sendable, CaseIterable {
    /// Before an event's instance, at the community's or the member's own lead time (`step`
    /// minutes before), to members who have not answered no.
    case eventReminder = "event_reminder"
    /// To members who have not answered: `step` 0 before the start, 1 before the RSVP deadline.
    case rsvpNudge = "rsvp_nudge"
    /// To the event's creator: who is in, who is out, who is silent.
    case rsvpSummary = "rsvp_summary"
    /// To those who still owe a dues period: `step` days from its due date (negative before).
    case duesReminder = "dues_reminder"
    /// A care occurrence fell due (`step` counts its snoozes): to its assignee, else everyone.
    case careDue = "care_due"
    /// A care occurrence is still undone after the reminder's escalation minutes: to everyone.
    case careEscalation = "care_escalation"
}

/// A reminder fell due and its reason held for `recipients`, worked out when it fired. Sent by
/// the reminders service to `notifications`; its id is derived from (kind, subject, occurrence,
/// step), so with the notification rows' `(message_id, user_id)` key nobody hears one reminder
/// twice.
package struct ReminderDue: MessagePayload, Equatable {
    package static let messageType = "reminder.due"
    package static let messageVersion = 1

    package struct Answers: Codable, Sendable, Equatable {
        package var yes: Int
        package var no: Int
        package var maybe: Int
        /// Members with no answer of their own or for a dependant.
        package var silent: Int

        package init(yes: Int, no: Int, maybe: Int, silent: Int) {
            self.yes = yes
            self.no = no
            self.maybe = maybe
            self.silent = silent
        }
    }

    package var kind: ReminderKind
    package var communityId: UUID
    package var communityName: String
    /// The event (series), dues or care reminder.
    package var subjectId: UUID
    /// The instance's original start, the dues period or the care occurrence's date.
    package var occurrence: String
    package var step: Int
    package var recipients: [UUID]
    /// The event's, dues' or reminder's title.
    package var title: String
    /// When it was due, and when it fired: a replica that was down says how late it is.
    package var dueAt: Date
    package var firedAt: Date
    /// An event's instance.
    package var startsAt: Date? = nil
    package var recurrenceId: Date? = nil
    package var allDay: Bool? = nil
    package var timeZone: String? = nil
    package var answers: Answers? = nil
    /// A dues period's amount still owed by the first recipient is not told: each owes their own.
    package var amount: Int64? = nil
    package var currency: String? = nil
    /// A care occurrence.
    package var occurrenceId: UUID? = nil

    package init(
        kind: ReminderKind, communityId: UUID, communityName: String, subjectId: UUID, occurrence: String, step: Int,
        recipients: [UUID], title: String, dueAt: Date, firedAt: Date
    ) {
        self.kind = kind
        self.communityId = communityId
        self.communityName = communityName
        self.subjectId = subjectId
        self.occurrence = occurrence
        self.step = step
        self.recipients = recipients
        self.title = title
        self.dueAt = dueAt
        self.firedAt = firedAt
    }

    /// Whole seconds between falling due and firing.
    package var lateSeconds: Int { max(0, Int(firedAt.timeIntervalSince(dueAt))) }
}

/// A member changed their own event reminder lead times in a community: the reminders service
/// adds the rows those lead times need. Sent by core to `reminders`.
package struct ReminderLeadsChanged: MessagePayload, Equatable {
    package static let messageType = "member.reminder_leads_changed"
    package static let messageVersion = 1

    package var communityId: UUID
    package var userId: UUID
    /// Minutes before an event's start; null follows the community's `defaultReminderHours`.
    package var minutes: [Int]?

    package init(communityId: UUID, userId: UUID, minutes: [Int]?) {
        self.communityId = communityId
        self.userId = userId
        self.minutes = minutes
    }
}

/// What the community settings say about reminders, with their defaults.
package enum ReminderDefaults {
    /// How far ahead rows are kept: 60 days.
    package static let horizon: TimeInterval = 60 * 86_400
    /// A lead time may be at most 30 days.
    package static let maxLeadMinutes = 30 * 24 * 60
    /// Members are nudged to answer this many hours before the start, and this long before an
    /// RSVP deadline.
    package static let rsvpNudgeHours = 48
    package static let deadlineNudgeHours = 24
    /// The event's creator hears who is coming this long before.
    package static let summaryHours = 24
    /// Dues reminders, in days from the due date: three days before, then TeamSnap's 1, 7, 14
    /// and 30 days past due.
    package static let duesReminderDays = [-3, 1, 7, 14, 30]
}
