import Foundation

/// The signed-in user's token pair, as the app keeps it (in the Keychain: `onChange` says when
/// to save it again). One `Session` per signed-in user, shared by every request: a refresh is
/// made once however many requests find the access token expired, because a refresh token is
/// single use (presenting a spent one again ends every session of its sign-in).
public actor Session {
    public struct Tokens: Sendable, Hashable {
        public var accessToken: String
        public var refreshToken: String

        public init(accessToken: String, refreshToken: String) {
            self.accessToken = accessToken
            self.refreshToken = refreshToken
        }
    }

    public private(set) var tokens: Tokens?
    private let onChange: @Sendable (Tokens?) -> Void
    private var refreshing: Task<Tokens, any Error>?

    /// - Parameter onChange: called with the new pair after a sign-in or refresh, and with `nil`
    ///   when the session ended (the refresh was refused): save or delete it there.
    public init(tokens: Tokens? = nil, onChange: @escaping @Sendable (Tokens?) -> Void = { _ in }) {
        self.tokens = tokens
        self.onChange = onChange
    }

    /// Signs in with a pair the API returned (`devSignIn`, `signInWithApple`).
    public func signIn(_ tokens: Tokens) {
        self.tokens = tokens
        onChange(tokens)
    }

    public func signOut() {
        tokens = nil
        onChange(nil)
    }

    /// A pair newer than `stale`: the one another request already got, or a new one from
    /// `refresh`, asked once for all the requests waiting.
    func refreshed(
        after stale: String, using refresh: @escaping @Sendable (String) async throws -> Tokens?
    ) async throws -> Tokens? {
        if let tokens, tokens.accessToken != stale { return tokens }
        let task: Task<Tokens, any Error>
        if let refreshing {
            task = refreshing
        } else {
            guard let refreshToken = tokens?.refreshToken else { return nil }
            task = Task {
                guard let fresh = try await refresh(refreshToken) else { throw SessionEnded() }
                return fresh
            }
            refreshing = task
        }
        // The first waiter back stores the outcome; the others only read it.
        do {
            let fresh = try await task.value
            if refreshing == task {
                refreshing = nil
                tokens = fresh
                onChange(fresh)
            }
            return fresh
        } catch is SessionEnded {
            if refreshing == task {
                refreshing = nil
                signOut()
            }
            return nil
        } catch {
            if refreshing == task { refreshing = nil }
            throw error
        }
    }

    private struct SessionEnded: Error {}
}
