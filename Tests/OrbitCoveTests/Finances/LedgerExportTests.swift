import Foundation
import Testing

@testable import CoreService

/// The ledger export's records beside Python's `csv` module, the reader a spreadsheet's import
/// behaves like: random fields of the characters that matter to CSV (commas, quotes, CR, LF and
/// CR LF, the formula starters, and combining marks and joiners, which make one `Character` of
/// a quote or a line break and what follows it), each record read back as the fields it was
/// written from, a formula's `'` included. (Records of two fields or more, as every export's
/// are: a record of one empty field is an empty line, which a reader skips.)
@Suite struct LedgerExportTests {
    static let pieces = [
        ",", "\"", "\r", "\n", "\r\n", "=", "+", "-", "@", "\t", "a", "é", "e\u{301}", " ", "1", ".", "'", "😀",
        "\u{2028}", "\u{85}", "\u{301}", "\u{200D}",
    ]

    /// What `LedgerExport.line` is meant to write for `field`: the field, with `'` before it if
    /// a spreadsheet would run it as a formula.
    static func guarded(_ field: String) -> String {
        guard let first = field.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first), Double(field) == nil
        else { return field }
        return "'" + field
    }

    @Test func everyRecordReadsBackAsItsFields() async throws {
        var random = SplitMix64(seed: 20_261_201)
        var records: [[String]] = []
        for _ in 0..<400 {
            records.append(
                (0..<Int(random.next() % 5 + 2)).map { _ in
                    (0..<Int(random.next() % 6)).map { _ in Self.pieces[Int(random.next() % UInt64(Self.pieces.count))]
                    }
                    .joined()
                })
        }
        // Found by a hostile probe: a description holding CR LF split its record.
        records.append(["Dinner\r\n=cmd|' /C calc'!A0", "Ann\r\nMallory"])
        let csv = records.map(LedgerExport.line).joined()
        let script = """
            import base64, csv, io, json, sys
            text = base64.b64decode(sys.argv[1]).decode("utf-8")
            print(json.dumps(list(csv.reader(io.StringIO(text, newline=""), strict=True))))
            """
        let output = try await ChildProcess.output(
            of: URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, Data(csv.utf8).base64EncodedString()])
        let read = try JSONDecoder().decode([[String]].self, from: output)
        #expect(read.count == records.count)
        for (index, (written, back)) in zip(records, read).enumerated() {
            #expect(back == written.map(Self.guarded), "record \(index): \(written.debugDescription)")
        }
    }
}
