/// A call reached a part of a service (its threads, an HTTP client) that is not running: it
/// did not start in time, or it has stopped with its service group.
package struct ServiceNotRunning: Error, CustomStringConvertible {
    package let name: String
    /// Whether it had run and stopped (otherwise it had not started yet).
    package let stopped: Bool

    package init(_ name: String, stopped: Bool) {
        self.name = name
        self.stopped = stopped
    }

    package var description: String {
        stopped
            ? "\(name) has stopped with its service group"
            : "\(name) has not started: its service group is not running it"
    }
}
