import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// Every message that becomes notifications, in one place: for each message type, who hears
/// it, what kind of news it is (its category follows from the type), the words and the deep
/// link. The writer applies each member's preferences and the pushes follow from the rows, so
/// a new message type is one more `notify` here (and a test); docs/ARCHITECTURE.md says how.
enum NotificationCatalog {
    static func register(_ handlers: inout MessageHandlers, writer: HistoryWriter) {
        registerCommunity(&handlers, writer: writer)
        registerCalendar(&handlers, writer: writer)
        registerFeed(&handlers, writer: writer)
        registerFinances(&handlers, writer: writer)
        registerReminders(&handlers, writer: writer)
    }

    private static func registerCommunity(_ handlers: inout MessageHandlers, writer: HistoryWriter) {
        handlers.notify(CommunityCreated.self, writer: writer) { envelope, _ in
            let created = envelope.data
            return [
                Notice(
                    audience: .person(created.createdBy, of: created.communityId), type: .communityUpdate,
                    title: "\(created.name) is ready",
                    body: "Invite members with an invite code from the community's settings.",
                    link: DeepLink(communityId: created.communityId))
            ]
        }
        handlers.notify(CommunityUpdated.self, writer: writer) { envelope, _ in
            // Deletion and restoration concern everyone; other edits reach clients through sync.
            let update = envelope.data
            let words: (String, String)? =
                update.changes.contains("deleted")
                ? ("\(update.name) was deleted", "An admin can restore it within 30 days.")
                : update.changes.contains("restored") ? ("\(update.name) is back", "An admin restored it.") : nil
            guard let (title, body) = words else { return [] }
            return [
                Notice(
                    audience: .members(of: update.communityId, except: [update.updatedBy]), type: .communityUpdate,
                    title: title, body: body, link: DeepLink(communityId: update.communityId))
            ]
        }
        handlers.notify(MemberJoined.self, writer: writer) { envelope, _ in
            let joined = envelope.data
            return [
                Notice(
                    audience: .members(of: joined.communityId, except: [joined.userId]), type: .memberJoined,
                    title: "\(joined.displayName) joined \(joined.communityName)", body: "Say hello!",
                    link: DeepLink(communityId: joined.communityId, userId: joined.userId))
            ]
        }
        handlers.notify(MemberLeft.self, writer: writer) { envelope, _ in
            let left = envelope.data
            return [
                Notice(
                    audience: .admins(of: left.communityId, except: [left.userId]), type: .memberLeft,
                    title: "\(left.displayName) left \(left.communityName)", body: "They are no longer a member.",
                    link: DeepLink(communityId: left.communityId, userId: left.userId))
            ]
        }
        handlers.notify(MemberRemoved.self, writer: writer) { envelope, _ in
            let removed = envelope.data
            return [
                Notice(
                    audience: .person(removed.userId, of: removed.communityId), type: .memberRemoved,
                    title: "You were removed from \(removed.communityName)",
                    body: "An admin removed you. Ask them for a new invite code to rejoin.",
                    link: DeepLink(communityId: removed.communityId, userId: removed.userId))
            ]
        }
        handlers.notify(MemberRoleChanged.self, writer: writer) { envelope, _ in
            let change = envelope.data
            let promoted = change.role == .admin
            return [
                Notice(
                    audience: .users([change.userId], of: change.communityId, except: [change.changedBy]),
                    type: .roleChanged,
                    title: promoted
                        ? "You are now an admin of \(change.communityName)"
                        : "You are no longer an admin of \(change.communityName)",
                    body: promoted ? "You can now manage members, invites and settings." : "You remain a member.",
                    link: DeepLink(communityId: change.communityId, userId: change.userId))
            ]
        }
    }

    /// Members hear of new events (asked to answer when the event wants answers), of a changed
    /// time or place and of cancellations; a waiting yes hears when a place opens, and a
    /// confirmed yes when a lower capacity moves it to the waitlist, through its guardian for a
    /// dependant. Single answers are not news: organisers read attendance.
    private static func registerCalendar(_ handlers: inout MessageHandlers, writer: HistoryWriter) {
        handlers.notify(EventCreated.self, writer: writer) { envelope, _ in
            let created = envelope.data
            let event = created.event
            return [
                Notice(
                    audience: .members(of: created.communityId, except: [event.createdBy]),
                    type: created.rsvpRequested ? .rsvpRequest : .eventCreated,
                    title: "New in \(created.communityName): \(event.title)",
                    body: "\(EventWording.when(event))."
                        + (created.rsvpRequested ? " Let them know if you are coming." : ""),
                    link: EventWording.link(event, in: created.communityId), series: event.eventId,
                    collapseId: EventWording.collapseId(event))
            ]
        }
        handlers.notify(EventUpdated.self, writer: writer) { envelope, _ in
            let update = envelope.data
            let event = update.event
            let cancelled = update.changes.contains("cancelled") || update.changes.contains("deleted")
            let moved = update.changes.contains("time") || update.changes.contains("place")
            guard cancelled || moved else { return [] }
            return [
                Notice(
                    audience: .members(of: update.communityId, except: [update.updatedBy]),
                    type: cancelled ? .eventCancelled : .eventChanged,
                    title: cancelled ? "Cancelled: \(event.title)" : "Changed: \(event.title)",
                    body: cancelled
                        ? "\(EventWording.when(event)) will not take place."
                        : "Now \(EventWording.when(event)).",
                    link: EventWording.link(event, in: update.communityId), series: event.eventId,
                    collapseId: EventWording.collapseId(event))
            ]
        }
        // Sent by the release before migration 0065 only, while it rolls out: nobody is told.
        handlers.notify(EventRSVPChanged.self, writer: writer) { _, _ in [] }
        // A photo or file was processed: the post that shows it and realtime use it; nobody is told.
        handlers.notify(MediaProcessed.self, writer: writer) { _, _ in [] }
        handlers.notify(EventWaitlistPromoted.self, writer: writer) { envelope, lookup in
            let promoted = envelope.data
            let event = promoted.event
            var person = promoted.userId
            var (who, next) = ("You have", "you were")
            if let dependant = promoted.familyMemberId, let guardian = try await lookup.guardian(of: dependant) {
                person = guardian.userId
                (who, next) = ("\(guardian.dependantName) has", "\(guardian.dependantName) was")
            }
            var link = EventWording.link(event, in: promoted.communityId)
            link.familyMemberId = promoted.familyMemberId
            return [
                Notice(
                    audience: .users([person], of: promoted.communityId, except: []), type: .waitlistPromoted,
                    title: "\(who) a place: \(event.title)",
                    body: "A place opened up for \(EventWording.when(event)), and \(next) next in line.",
                    link: link, collapseId: EventWording.collapseId(event))
            ]
        }
        // A lower capacity is a change to the event that reaches only those it moved: the
        // `event_changed` type (no waitlist type says "moved back"), to the person or the guardian.
        handlers.notify(EventMovedToWaitlist.self, writer: writer) { envelope, lookup in
            let moved = envelope.data
            let event = moved.event
            var person = moved.userId
            var who = "You are"
            if let dependant = moved.familyMemberId, let guardian = try await lookup.guardian(of: dependant) {
                person = guardian.userId
                who = "\(guardian.dependantName) is"
            }
            var link = EventWording.link(event, in: moved.communityId)
            link.familyMemberId = moved.familyMemberId
            let places = moved.capacity == 1 ? "1 place" : "\(moved.capacity) places"
            return [
                Notice(
                    audience: .users([person], of: moved.communityId, except: [moved.changedBy]), type: .eventChanged,
                    title: "\(who) on the waitlist: \(event.title)",
                    body: "\(EventWording.when(event)) now has \(places); you will hear if one opens up.",
                    link: link, collapseId: EventWording.collapseId(event))
            ]
        }
    }

    /// The feed: a new post to everyone but its author and those it mentions (who hear of the
    /// mention instead); an announcement as an `announcement`, which members may let through
    /// quiet hours; a comment to the post's author and, for a reply, the comment's author; a
    /// mention to each member mentioned for the first time in that post or comment.
    private static func registerFeed(_ handlers: inout MessageHandlers, writer: HistoryWriter) {
        handlers.notify(PostCreated.self, writer: writer) { envelope, _ in
            let post = envelope.data
            let announcement = post.type == .announcement
            let title =
                announcement
                ? "\(post.authorName) announced in \(post.communityName)"
                : post.type == .poll
                    ? "\(post.authorName) asked in \(post.communityName)"
                    : "\(post.authorName) posted in \(post.communityName)"
            return [
                Notice(
                    audience: .members(of: post.communityId, except: [post.authorId] + post.mentioned),
                    type: announcement ? .announcement : .newPost, title: title,
                    body: post.excerpt.isEmpty ? "Open the feed to see it." : post.excerpt,
                    link: DeepLink(communityId: post.communityId, postId: post.postId))
            ]
        }
        handlers.notify(CommentCreated.self, writer: writer) { envelope, _ in
            let comment = envelope.data
            let told = [comment.authorId] + comment.mentioned
            var notices: [Notice] = []
            let link = DeepLink(communityId: comment.communityId, postId: comment.postId)
            if let parent = comment.parentAuthorId, !told.contains(parent) {
                notices.append(
                    Notice(
                        audience: .users([parent], of: comment.communityId, except: told), type: .postComment,
                        title: "\(comment.authorName) replied to your comment", body: comment.excerpt, link: link))
            }
            if !told.contains(comment.postAuthorId), comment.postAuthorId != comment.parentAuthorId {
                notices.append(
                    Notice(
                        audience: .users([comment.postAuthorId], of: comment.communityId, except: told),
                        type: .postComment, title: "\(comment.authorName) commented on your post",
                        body: comment.excerpt, link: link))
            }
            return notices
        }
        handlers.notify(MembersMentioned.self, writer: writer) { envelope, _ in
            let mention = envelope.data
            return [
                Notice(
                    audience: .users(mention.userIds, of: mention.communityId, except: [mention.authorId]),
                    type: .mention,
                    title: mention.commentId == nil
                        ? "\(mention.authorName) mentioned you in \(mention.communityName)"
                        : "\(mention.authorName) mentioned you in a comment",
                    body: mention.excerpt.isEmpty ? "Open the post to see it." : mention.excerpt,
                    link: DeepLink(communityId: mention.communityId, postId: mention.postId))
            ]
        }
    }

    /// Finances: each member with a share of a new expense hears what they owe and to whom
    /// (never the payer or whoever added it); the payee of a settlement hears they were paid,
    /// and the payer too when someone else recorded it; dues set up, or whose amount changed,
    /// are a `payment_request` to those who owe them (other dues changes tell nobody here: the
    /// reminders service turns them into reminders).
    private static func registerFinances(_ handlers: inout MessageHandlers, writer: HistoryWriter) {
        handlers.notify(ExpenseAdded.self, writer: writer) { envelope, _ in
            let expense = envelope.data
            let link = DeepLink(communityId: expense.communityId, transactionId: expense.transactionId)
            return expense.shares.filter { $0.userId != expense.addedBy && $0.userId != expense.paidBy }.map { share in
                Notice(
                    audience: .users([share.userId], of: expense.communityId, except: [expense.addedBy]),
                    type: .expenseAdded,
                    title:
                        "You owe \(expense.paidByName) \(Currencies.decimal(share.amount, currency: expense.currency)) \(expense.currency)",
                    body: "For \(expense.description.excerpt()) in \(expense.communityName)", link: link)
            }
        }
        handlers.notify(SettlementRecorded.self, writer: writer) { envelope, _ in
            let payment = envelope.data
            let amount = "\(Currencies.decimal(payment.amount, currency: payment.currency)) \(payment.currency)"
            let link = DeepLink(communityId: payment.communityId, transactionId: payment.transactionId)
            var notices = [
                Notice(
                    audience: .users([payment.to], of: payment.communityId, except: [payment.recordedBy]),
                    type: .settlementReceived, title: "\(payment.fromName) paid you \(amount)",
                    body: "Recorded in \(payment.communityName)", link: link)
            ]
            if payment.recordedBy != payment.from {
                notices.append(
                    Notice(
                        audience: .users([payment.from], of: payment.communityId, except: [payment.recordedBy]),
                        type: .settlementReceived, title: "Your payment of \(amount) to \(payment.toName) was recorded",
                        body: "Recorded in \(payment.communityName)", link: link))
            }
            return notices
        }
        handlers.notify(DuesChanged.self, writer: writer) { envelope, _ in
            let dues = envelope.data
            guard dues.change == .created || dues.change == .amountChanged else { return [] }
            let audience: Audience =
                dues.memberIds.map { .users($0, of: dues.communityId, except: [dues.changedBy]) }
                ?? .members(of: dues.communityId, except: [dues.changedBy])
            let amount = "\(Currencies.decimal(dues.amount, currency: dues.currency)) \(dues.currency)"
            return [
                Notice(
                    audience: audience, type: .paymentRequest,
                    title: dues.change == .created
                        ? "\(dues.name): \(amount) due \(dues.period)"
                        : "\(dues.name) is now \(amount), due \(dues.period)",
                    body: "Dues in \(dues.communityName)",
                    link: DeepLink(communityId: dues.communityId, duesId: dues.duesId))
            ]
        }
    }

    /// What the reminders service fires (`reminder.due`): its recipients were worked out when it
    /// fired (those who have not answered, who still owe, whose turn it is), so the audience is
    /// those users; a reminder that fired late says so.
    private static func registerReminders(_ handlers: inout MessageHandlers, writer: HistoryWriter) {
        handlers.notify(ReminderDue.self, writer: writer) { envelope, _ in
            let due = envelope.data
            let audience = Audience.users(due.recipients, of: due.communityId, except: [])
            let late = ReminderWording.late(due)
            let words = ReminderWording.words(due)
            var link = DeepLink(communityId: due.communityId)
            var series: UUID?
            switch due.kind {
            case .eventReminder, .rsvpNudge, .rsvpSummary:
                link.eventId = due.subjectId
                link.recurrenceId = due.recurrenceId
                series = due.subjectId
            case .duesReminder:
                link.duesId = due.subjectId
            case .careDue, .careEscalation:
                link.reminderId = due.subjectId
                link.occurrenceDate = due.occurrence
            }
            return [
                Notice(
                    audience: audience, type: words.type, title: words.title, body: words.body + late, link: link,
                    series: series, collapseId: ReminderWording.collapseId(due))
            ]
        }
    }
}
