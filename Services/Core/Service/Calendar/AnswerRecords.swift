import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import PostgresNIO

/// The answers statement's records (``EventStore/answerRecords(to:from:before:viewer:on:logger:)``),
/// one cell a row, as the driver received them.
package struct AnswerRecords {
    let cells: [PostgresCell]

    package init(cells: [PostgresCell]) {
        self.cells = cells
    }

    /// Whether these records are `kept`'s (``bytes``), byte for byte.
    package func are(_ kept: [UInt8]) -> Bool {
        kept.withUnsafeBytes { kept in
            var offset = 0
            for cell in cells {
                let length = cell.bytes?.readableBytes ?? -1
                guard kept.count - offset >= 4,
                    Int32(bigEndian: kept.loadUnaligned(fromByteOffset: offset, as: Int32.self)) == length
                else { return false }
                offset += 4
                guard let bytes = cell.bytes, length > 0 else { continue }
                guard kept.count - offset >= length,
                    bytes.withUnsafeReadableBytes({ bytes in
                        guard let bytes = bytes.baseAddress, let kept = kept.baseAddress else { return false }
                        return memcmp(bytes, kept + offset, length) == 0
                    })
                else { return false }
                offset += length
            }
            return offset == kept.count
        }
    }

    /// Every record's bytes, each after its length (-1 for none), in the order they came: the
    /// same bytes are the same answers and counts (``KnownWindows/ReaderCopy``).
    package var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(cells.reduce(0) { $0 + 4 + ($1.bytes?.readableBytes ?? 0) })
        for cell in cells {
            let length = Int32(truncatingIfNeeded: cell.bytes?.readableBytes ?? -1)
            withUnsafeBytes(of: length.bigEndian) { bytes.append(contentsOf: $0) }
            cell.bytes?.withUnsafeReadableBytes { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// The records read, in the order they came.
    func rows() throws -> [AnswerTable.Row] {
        try cells.map { cell in
            try RecordReader.read(cell) { fields in
                let key = InstanceKey(eventId: try fields.next(), recurrenceId: try fields.next())
                let counts = AttendanceCounts(
                    going: try fields.next(), seats: try fields.next(), maybe: try fields.next(),
                    declined: try fields.next(), waitlisted: try fields.next(), capacity: nil)
                // No answer of the caller's to this instance: the rest of the record is empty.
                guard let status: String = try fields.next() else {
                    return AnswerTable.Row(key: key, counts: counts)
                }
                let rsvp = EventRSVP(
                    familyMemberId: try fields.next(), status: RSVPStatus(rawValue: status) ?? .no,
                    plusOnes: try fields.next(), note: try fields.next(), waitlisted: try fields.next(),
                    respondedAt: try fields.next())
                let (queuedAt, id): (Date, UUID) = (try fields.next(), try fields.next())
                return AnswerTable.Row(key: key, counts: counts, rsvp: rsvp, queuedAt: queuedAt, id: id)
            }
        }
    }
}
