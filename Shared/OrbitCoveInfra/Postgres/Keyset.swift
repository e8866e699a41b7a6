import PostgresNIO

/// The order a list is paged in: a time column, then an id column for ties, newest or oldest
/// first. A ``PageCursor`` is a position in that order (the last row of the page before), so
/// the next page is the rows past it, and a row added meanwhile never shifts a page as an
/// offset would. A list says its order once, beside its query, and ends the query with the
/// page (predicate, order and limit written here, once):
///
/// ```swift
/// static let order = Keyset(.newestFirst)  // by created_at, id
///
/// SELECT id, code, created_at FROM invites
/// WHERE community_id = \(communityId)
/// \(page: page, in: Self.order)
/// ```
///
/// The rows' own `(time, id)` make the next cursor: `PageCursor(createdAt: time, id: id)`.
package struct Keyset: Sendable {
    package enum Direction: Sendable {
        case newestFirst, oldestFirst
    }

    /// Column names, written into queries as they are: constants of the code, never input.
    let time: StaticString
    let id: StaticString
    let direction: Direction

    package init(_ direction: Direction, time: StaticString = "created_at", id: StaticString = "id") {
        self.direction = direction
        self.time = time
        self.id = id
    }

    /// `<` or `>`, and the order of both columns: a row comes after the cursor when it sorts
    /// after it, compared as a row value (the index on `(time, id)` answers it).
    var sql: (comparison: String, order: String) {
        switch direction {
        case .newestFirst: ("<", "DESC")
        case .oldestFirst: (">", "ASC")
        }
    }
}

extension PostgresQuery.StringInterpolation {
    /// The end of a paged list's query, after its `WHERE` conditions: `AND` the rows past the
    /// page's cursor (when it has one), in the keyset's order, at most one row more than the
    /// page (``PageRequest/fetchLimit``: the extra row only says that there is more).
    package mutating func appendInterpolation(page: PageRequest, in keyset: Keyset) throws {
        let (comparison, order) = keyset.sql
        if let cursor = page.cursor {
            appendLiteral("AND (\(keyset.time), \(keyset.id)) \(comparison) (")
            appendInterpolation(cursor.exactCreatedAt)
            appendLiteral(", ")
            appendInterpolation(cursor.id)
            appendLiteral(")\n")
        }
        appendLiteral("ORDER BY \(keyset.time) \(order), \(keyset.id) \(order)\nLIMIT ")
        appendInterpolation(page.fetchLimit)
    }
}
