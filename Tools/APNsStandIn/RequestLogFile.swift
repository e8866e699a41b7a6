import Foundation

/// Appends one JSON line per answered request to a file, written as each request is answered so
/// that a benchmark can follow the file while the stand-in runs. The event loops only hand the
/// record over; the encoding and the writing happen in `run()`.
package final class RequestLogFile: Sendable {
    private let handle: FileHandle
    private let records: AsyncStream<APNsStandIn.Received>
    private let continuation: AsyncStream<APNsStandIn.Received>.Continuation

    package init(path: String) throws {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
            }
        }
        handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        (records, continuation) = AsyncStream.makeStream(of: APNsStandIn.Received.self)
    }

    package func append(_ record: APNsStandIn.Received) {
        continuation.yield(record)
    }

    /// Ends `run()` once what was appended before is written.
    package func finish() {
        continuation.finish()
    }

    /// Writes records until `finish()`; each line is one write(2), so a reader sees whole lines.
    package func run() async throws {
        try handle.seekToEnd()
        for await record in records {
            try handle.write(contentsOf: record.logLine())
        }
        try handle.close()
    }
}
