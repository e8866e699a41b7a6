import NIOCore
import Synchronization

/// The client connections still open, so that shutting the stand-in down also ends them, as a
/// restarted APNs would, rather than leaving them to the client's idle timeout.
final class OpenConnections: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    func track(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        channels.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            _ = channels.withLock { $0.removeValue(forKey: id) }
        }
    }

    func closeAll() async {
        for channel in channels.withLock({ Array($0.values) }) {
            try? await channel.close()
        }
    }
}
