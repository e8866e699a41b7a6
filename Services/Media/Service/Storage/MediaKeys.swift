import Foundation
import OrbitCoveModels

/// The storage keys the server chooses: an upload at `uploads/<id>` (never served, removed once
/// processed; an S3 lifecycle rule on `uploads/` can expire strays), and each rendition at
/// `variants/<id>/<name>.<extension>`.
package enum MediaKeys {
    package static func upload(_ id: UUID) -> String { "uploads/\(id.lowercasedString)" }

    package static func variant(_ id: UUID, _ name: String) -> String { "variants/\(id.lowercasedString)/\(name)" }

    /// Whether `key` is one the server could have chosen: the local store refuses any other
    /// path, so no request reaches outside its directory.
    package static func isValid(_ key: String) -> Bool {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        switch (parts.first, parts.count) {
        case ("uploads", 2): return UUID(uuidString: String(parts[1])) != nil
        case ("variants", 3):
            guard UUID(uuidString: String(parts[1])) != nil else { return false }
            let name = parts[2]
            return name.count <= 32 && !name.hasPrefix(".")
                && name.utf8.allSatisfy { (97...122).contains($0) || (48...57).contains($0) || $0 == 46 || $0 == 45 }
        default: return false
        }
    }
}
