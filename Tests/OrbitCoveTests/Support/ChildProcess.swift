import Foundation
import Glibc
import NIOPosix

/// A program a test runs to its end (a reference parser, a JWT library), without holding one
/// of Swift's cooperative threads while it runs: there are two on two cores, and every live
/// service in the test process answers on them. `Process.waitUntilExit` spins a run loop that
/// can wait forever on Linux off the main thread, and reading a pipe to its end blocks, so the
/// output is read on NIO's thread pool, the error output goes to a file (two pipes read one
/// after the other can each wait for the other), and the exit is heard from
/// `terminationHandler`. A program still running after `seconds` is killed and fails the test.
enum ChildProcess {
    struct Failure: Error, CustomStringConvertible {
        var program: String
        var status: Int32
        var errors: String
        var description: String { "\(program) exited with \(status): \(errors)" }
    }

    /// Its standard output; throws ``Failure`` with its error output when it exits other than 0.
    static func output(of executable: URL, _ arguments: [String], seconds: Int = 60) async throws -> Data {
        let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: errorFile.path, contents: nil) else {
            throw Failure(program: executable.path, status: -1, errors: "cannot create \(errorFile.path)")
        }
        defer { try? FileManager.default.removeItem(at: errorFile) }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        let errors = try FileHandle(forWritingTo: errorFile)
        defer { try? errors.close() }
        process.standardError = errors
        let (exits, exited) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = {
            exited.yield($0.terminationStatus)
            exited.finish()
        }
        try process.run()
        let pid = process.processIdentifier
        // Whether it had to be killed.
        let watchdog = Task { () -> Bool in
            guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return false }
            kill(pid, SIGKILL)
            return true
        }
        let data = try await NIOThreadPool.singleton.runIfActive { output.fileHandleForReading.readDataToEndOfFile() }
        var status: Int32 = -1
        for await code in exits { status = code }
        watchdog.cancel()
        let killed = await watchdog.value
        guard status == 0 && !killed else {
            let said = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
            let program = executable.path + (killed ? " (killed after \(seconds) s)" : "")
            throw Failure(program: program, status: status, errors: said)
        }
        return data
    }
}
