import Foundation
import Logging
import PostgresNIO

/// One entity kind a feature syncs: the `entity_kind` its `change_log` trigger writes, the
/// response section it fills (`members`, `events`, ...), and how to read its current rows,
/// by id for an incremental sync and a page at a time (by id) for a first sync. Rows that a
/// read by id does not return were deleted (or are no longer visible to the caller).
package struct SyncKind: Sendable {
    package typealias Rows = [(id: UUID, row: any Encodable & Sendable)]

    package let kind: String
    package let section: String
    let byId: @Sendable (_ community: UUID, _ ids: [UUID], PostgresConnection, Logger) async throws -> Rows
    let page:
        @Sendable (_ community: UUID, _ after: UUID?, _ limit: Int, PostgresConnection, Logger) async throws -> Rows

    package init<Row: Encodable & Sendable>(
        kind: String, section: String, as row: Row.Type,
        byId: @escaping @Sendable (UUID, [UUID], PostgresConnection, Logger) async throws -> [(UUID, Row)],
        page: @escaping @Sendable (UUID, UUID?, Int, PostgresConnection, Logger) async throws -> [(UUID, Row)]
    ) {
        self.kind = kind
        self.section = section
        self.byId = { try await byId($0, $1, $2, $3).map { ($0.0, $0.1) } }
        self.page = { try await page($0, $1, $2, $3, $4).map { ($0.0, $0.1) } }
    }
}

/// Every kind a service syncs, in the order first syncs page through them. Sections named
/// in `reservedSections` but not registered yet are sent empty, so the response keeps the
/// seed's shape before their features land.
package struct SyncRegistry: Sendable {
    package private(set) var kinds: [SyncKind] = []
    package var reservedSections: [String] = ["members", "events", "posts", "transactions"]

    package init() {}

    package mutating func register(_ kind: SyncKind) {
        kinds.removeAll { $0.kind == kind.kind }
        kinds.append(kind)
    }

    func kind(named name: String) -> SyncKind? { kinds.first { $0.kind == name } }

    var sectionNames: [String] {
        var names = reservedSections
        for kind in kinds where !names.contains(kind.section) { names.append(kind.section) }
        return names
    }
}
