import NIOHTTP1

/// A request as it arrived on one HTTP/2 stream, body included.
struct PushRequest: Sendable {
    static let pathPrefix = "/3/device/"

    var method: HTTPMethod
    var path: String
    var headers: HTTPHeaders
    /// The body up to `PushRequest.bodyKeptLimit` bytes.
    var body: [UInt8]
    /// The whole body's length, kept or not.
    var bodyLength: Int

    /// Far above the 5 KB that APNs accepts; what lies beyond is counted, not kept.
    static let bodyKeptLimit = 64 * 1024

    /// What follows `/3/device/` in the path, without a query; nil for any other path.
    var deviceToken: String? {
        guard path.hasPrefix(Self.pathPrefix) else { return nil }
        let rest = path.dropFirst(Self.pathPrefix.count)
        return String(rest.prefix { $0 != "?" })
    }

    /// Header names lowercased; a repeated header's values joined with ",".
    var headerFields: [String: String] {
        headers.reduce(into: [:]) { fields, header in
            let name = header.name.lowercased()
            fields[name] = fields[name].map { "\($0),\(header.value)" } ?? header.value
        }
    }

    func header(_ name: String) -> String? { headers.first(name: name) }
}
