import Foundation
import Hummingbird
import Logging
import NIOCore
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// `GET …/transactions/export.csv` (admins): the whole ledger as RFC 4180 CSV with a header
/// row, newest first, streamed a page at a time (each page its own short transaction, by
/// keyset), so a big ledger never sits in memory and no connection is held while a slow
/// client reads.
struct LedgerExport: Sendable {
    let database: Database
    let logger: Logger
    var pageSize = 500

    static let header = [
        "id", "date", "type", "description", "category", "currency", "amount", "paid_by", "paid_by_name", "paid_to",
        "method", "splits", "created_by", "created_at",
    ]

    func response(of communityId: UUID, viewer: UUID) async throws -> Response {
        // The first page is read before the response starts, so an error is still a status.
        let first = try await page(of: communityId, viewer: viewer, after: nil)
        let (export, pageSize) = (self, pageSize)
        let body = ResponseBody { writer in
            var buffer = ByteBuffer()
            buffer.writeString(Self.line(Self.header))
            var rows = first
            while true {
                for row in rows.prefix(pageSize) { buffer.writeString(row.line) }
                try await writer.write(buffer)
                buffer.clear()
                guard rows.count > pageSize, let last = rows.prefix(pageSize).last else { break }
                rows = try await export.page(of: communityId, viewer: viewer, after: last.cursor)
            }
            try await writer.finish(nil)
        }
        let file = "ledger-\(communityId.lowercasedString).csv"
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/csv; charset=utf-8; header=present",
                .contentDisposition: "attachment; filename=\"\(file)\"",
                .cacheControl: "no-store",
            ], body: body)
    }

    /// Up to `pageSize + 1` rows after `cursor`, each already a CSV line.
    func page(
        of communityId: UUID, viewer: UUID, after cursor: PageCursor?
    ) async throws -> [(
        line: String, cursor: PageCursor
    )] {
        try await database.transaction(userId: viewer) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: LedgerRows.columns),
                       (SELECT a.display_name FROM app_content_author(t.paid_by, t.community_id) a) AS paid_by_name
                FROM transactions t \(unescaped: LedgerRows.joins)
                WHERE t.community_id = \(communityId) AND t.deleted_at IS NULL
                \(page: PageRequest(cursor: cursor, limit: pageSize), in: LedgerStore.order)
                """, logger: logger)
            var lines: [(line: String, cursor: PageCursor)] = []
            for try await row in rows {
                var cells = RowReader(row)
                let entry = try LedgerRows.read(&cells)
                let payerName: String? = try cells.next("paid_by_name")
                lines.append(
                    (
                        Self.line(Self.fields(entry, payerName: payerName)),
                        PageCursor(createdAt: entry.createdAt, id: entry.id)
                    ))
            }
            return lines
        }
    }

    static func fields(_ entry: LedgerTransaction, payerName: String?) -> [String] {
        let amount = { Currencies.decimal($0, currency: entry.currency) }
        let splits = entry.splits.map { "\($0.userId.lowercasedString)=\(amount($0.amount))" }.joined(separator: ";")
        return [
            entry.id.lowercasedString, entry.transactionDate, entry.type.rawValue, entry.description,
            entry.category.rawValue, entry.currency, amount(entry.totalAmount), entry.paidBy.lowercasedString,
            payerName ?? "", entry.paidTo?.lowercasedString ?? "", entry.method?.rawValue ?? "", splits,
            entry.createdBy.lowercasedString, JSONCoding.formatTimestamp(entry.createdAt),
        ]
    }

    /// One record: fields with a comma, a quote or a line break are quoted (quotes doubled), and
    /// a text a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR) starts with `'`.
    /// Looked for by Unicode scalar, not by `Character`: `"\r\n"` is one `Character`, equal to
    /// neither `"\r"` nor `"\n"`, and a description with one went out unquoted, splitting its
    /// record and starting the next line with whatever followed it (found by a hostile probe:
    /// `=cmd|…` as a record's first cell, past the formula guard); quotes are doubled by scalar
    /// for the same reason. `LedgerExportTests` holds records to what Python's `csv` module reads.
    static func line(_ fields: [String]) -> String {
        fields.map { field in
            var text = field
            if let first = text.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first),
                Double(text) == nil
            {
                text = "'" + text
            }
            guard text.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else {
                return text
            }
            // Doubled scalar by scalar too: a quote with a combining mark after it is one
            // `Character`, which a replacement by `Character` would leave single.
            var quoted = String.UnicodeScalarView()
            quoted.append("\"")
            for scalar in text.unicodeScalars {
                quoted.append(scalar)
                if scalar == "\"" { quoted.append(scalar) }
            }
            quoted.append("\"")
            return String(quoted)
        }.joined(separator: ",") + "\r\n"
    }
}
