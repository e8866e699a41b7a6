import Foundation
import MediaService

// Signs the requests described by the JSON lines on stdin (`SigV4Request`), one JSON line out
// for each in: what scripts/media/sigv4_compare.py holds against botocore's signers.

let decoder = JSONDecoder()
let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
while let line = readLine(strippingNewline: true) {
    guard !line.isEmpty else { continue }
    let result: SigV4Result
    do {
        result = try decoder.decode(SigV4Request.self, from: Data(line.utf8)).sign()
    } catch {
        result = SigV4Result(id: nil, error: "unreadable line: \(error)")
    }
    FileHandle.standardOutput.write(try encoder.encode(result) + Data("\n".utf8))
}
