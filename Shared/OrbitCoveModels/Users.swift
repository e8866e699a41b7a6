import Foundation

package struct User: Codable, Sendable, Equatable {
    package var id: UUID
    package var email: String
    package var displayName: String
    @ExplicitNull package var avatarUrl: String?
    /// The avatar's upload when it is one (`avatarUrl` is then its address).
    @ExplicitNull package var avatarMediaId: UUID?
    /// Set while a requested account deletion waits out its grace period (cancellable).
    @ExplicitNull package var deletionScheduledAt: Date?
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: UUID, email: String, displayName: String, avatarUrl: String?, avatarMediaId: UUID? = nil,
        deletionScheduledAt: Date? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.avatarUrl = avatarUrl
        self.avatarMediaId = avatarMediaId
        self.deletionScheduledAt = deletionScheduledAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

extension String {
    /// Length as a `VARCHAR(n)` column counts it: Unicode code points, not the grapheme
    /// clusters `count` gives (a flag emoji is one character but two code points).
    package var databaseLength: Int { unicodeScalars.count }

    /// Whether it is one plain line, as a name or a title must be: no control character (line
    /// feed, carriage return, tab, escape, NEL and the other C0 and C1 controls), no Unicode line
    /// or paragraph separator, and no bidirectional embedding or override (U+202A–202E), which
    /// reorder what follows them wherever the name is shown ("\u{202E}Ada" heads a notification
    /// backwards). Isolates (U+2066–2069, which keep their text to itself, and which iOS wraps
    /// interpolated text in) and joiners (emoji sequences need them) stay.
    package var isOneLine: Bool {
        !unicodeScalars.contains {
            $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}"
                || (0x202A...0x202E).contains($0.value)
        }
    }

    /// Without bidirectional embeddings, overrides and isolates (U+202A–202E, U+2066–2069): what a
    /// name a device sends at sign-in is kept as, since a client's localisation may have wrapped
    /// it in them (Android's BidiFormatter uses embeddings), and a sign-in is not refused for it.
    package var withoutDirectionControls: String {
        var scalars = String.UnicodeScalarView()
        scalars.append(
            contentsOf: unicodeScalars.filter {
                !(0x202A...0x202E).contains($0.value) && !(0x2066...0x2069).contains($0.value)
            })
        return String(scalars)
    }
}
