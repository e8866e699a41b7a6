import NIOCore
import NIOPosix

/// Whether anything accepts TCP connections at an address: tells "the server is busy" from
/// "the server is gone" when a wait for it runs out.
package enum TCPProbe {
    package static func connects(to host: String, port: Int, timeout: Duration = .milliseconds(250)) async -> Bool {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(timeout.milliseconds))
        do {
            let channel = try await bootstrap.connect(host: host, port: port).get()
            try? await channel.close()
            return true
        } catch {
            return false
        }
    }
}
