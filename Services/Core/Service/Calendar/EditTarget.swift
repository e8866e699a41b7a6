import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// What an edit or deletion applies to.
enum EditTarget {
    /// A single event or a whole series.
    case whole(EventRecord)
    /// One instance of a series, by its original start.
    case instance(EventRecord, Date)
    /// A series from the instance with this original start on.
    case following(EventRecord, Date)

    var event: EventRecord {
        switch self {
        case .whole(let event), .instance(let event, _), .following(let event, _): event
        }
    }
}

extension EventEditor {
    /// What a request names, checked and locked: the series (or single event) and, for `this`
    /// and `following`, the instance's original start.
    func resolve(
        _ id: UUID, recurrenceId: Date?, scope: EditScope?, action: ContentAction, granted: CommunityGate.Granted,
        on connection: PostgresConnection
    ) async throws -> EditTarget {
        let stored = try await events.load(id, in: granted.communityId, on: connection, logger: logger)
        let (series, instance) = try await events.instance(
            of: stored, recurrenceId: recurrenceId, on: connection, logger: logger)
        let owner = series ?? stored
        try granted.require(action, on: owner.owned)
        // Locked only now: a locking read goes through the write policy, so a member who may not
        // write the event would otherwise be told it does not exist. A lock the policy refuses
        // after the gate allowed it means the actor was demoted meanwhile; an event deleted
        // while the lock was awaited (two deletes at once, a retry) is not found.
        let locked: EventRecord
        do {
            locked = try await events.load(
                owner.id, in: granted.communityId, forUpdate: true, on: connection, logger: logger)
        } catch let error as APIError where error.code == CalendarErrors.eventNotFound.code {
            throw try await connection.refusal(
                of: owner.id, in: .events, gone: CalendarErrors.eventNotFound, logger: logger)
        }
        if series != nil, let start = instance?.recurrenceId ?? recurrenceId {
            if stored.isOverride, let scope, scope != .this {
                throw APIError.validation(["scope": "an override is one instance: use its series' id for \(scope)"])
            }
            // The instance was found before the lock: a move or split committed meanwhile may
            // have taken it from the series (a split of the instance as it was took the moved
            // answers onto a series they no longer matched).
            if locked.exceptionDates.contains(start) || (scope != .all && !(locked.isSeries && locked.generates(start)))
            {
                throw CalendarErrors.instanceNotFound
            }
            switch scope ?? .this {
            case .this: return .instance(locked, start)
            case .following: return .following(locked, start)
            case .all: return .whole(locked)
            }
        }
        if let scope, scope != .all {
            throw APIError.validation([
                "recurrenceId": stored.isSeries
                    ? "is required for scope \(scope.rawValue)" : "a single event has no instances: leave scope out"
            ])
        }
        return .whole(locked)
    }
}
