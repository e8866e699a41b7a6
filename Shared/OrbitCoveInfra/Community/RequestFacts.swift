import Foundation
import Hummingbird

/// What a change records about the request that made it: where from (audit log) and which
/// trace it belongs to (carried into the messages it causes).
package struct RequestFacts: Sendable {
    package var clientAddress: String?
    package var traceparent: String?

    package init(_ request: Request, _ context: AppRequestContext) {
        self.clientAddress = context.clientAddress
        self.traceparent = context.traceparent.isEmpty ? nil : context.traceparent
    }

    /// For work no request caused (retention jobs, message handlers).
    package init(clientAddress: String? = nil, traceparent: String? = nil) {
        self.clientAddress = clientAddress
        self.traceparent = traceparent
    }
}
