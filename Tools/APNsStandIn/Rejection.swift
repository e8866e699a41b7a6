/// A status and reason APNs answers a request with instead of 200.
struct Rejection: Error, Sendable, Hashable {
    let status: Int
    let reason: String

    static func badRequest(_ reason: String) -> Rejection { Rejection(status: 400, reason: reason) }
    static func forbidden(_ reason: String) -> Rejection { Rejection(status: 403, reason: reason) }
}
