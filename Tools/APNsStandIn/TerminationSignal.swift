import Dispatch
import Foundation

enum TerminationSignal {
    /// Returns when the process gets SIGINT or SIGTERM, which no longer end it by default once asked for here.
    static func wait() async {
        let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
        for await _ in signals { break }
        sources.forEach { $0.cancel() }
    }
}
