import Foundation

/// Everything one `encode` call shares between its encoders and containers.
final class EncodingState {
    /// The tree lives behind a pointer rather than in a stored property because Swift checks
    /// every access to a class's stored property at run time (exclusivity), and those checks cost
    /// a third of the encoder's time: there are several for each value encoded. Nothing is lost:
    /// every `Tree` method is a short access that calls no user code (the date closure cannot
    /// reach the tree), so no two accesses can overlap, which is what the checks are there to catch.
    var tree: Tree {
        unsafeAddress { UnsafePointer(storage) }
        unsafeMutableAddress { storage }
    }
    private let storage: UnsafeMutablePointer<Tree>
    let formatDate: @Sendable (Date) -> String
    /// A misuse JSONEncoder would trap on, reported where the API cannot throw, thrown at the end.
    private(set) var misuse: (message: String, codingPath: [any CodingKey])?

    init(formatDate: @escaping @Sendable (Date) -> String) {
        self.formatDate = formatDate
        storage = .allocate(capacity: 1)
        storage.initialize(to: Tree())
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Encodes `value` the way JSONEncoder's `wrap` does for a keyed or unkeyed container: special
    /// types straight to text, anything else into a node of its own, whose path extends `owner`'s.
    func slot<T: Encodable>(for value: T, owner: Int, key: PathKey) throws -> Slot {
        let start = tree.scratch.count
        switch tree.appendSpecial(value, formatDate: formatDate) {
        case .written:
            return .bytes(start: start, end: tree.scratch.count)
        case .nonFinite(let error):
            throw error.encodingError(codingPath: tree.codingPath(of: owner) + [key.codingKey])
        case .notSpecial:
            let node = tree.addNode(parent: owner, key: key)
            try value.encode(to: ValueEncoder(state: self, node: node))
            // JSONEncoder stores `{}` for a value that encoded nothing: an object, as far as a
            // later `nestedContainer(forKey:)` for the same key is concerned.
            if tree.nodes[node].content == .empty { tree.nodes[node].content = .object }
            return .node(node)
        }
    }

    /// A single value container's `encode`, which JSONEncoder encodes into the same encoder.
    func encodeSingle<T: Encodable>(_ value: T, into node: Int) throws {
        if case .bytes = tree.nodes[node].content {
            throw singleValueAlreadyEncoded(value, node: node)
        }
        let start = tree.scratch.count
        switch tree.appendSpecial(value, formatDate: formatDate) {
        case .written:
            // Onto an object or array already made here, JSONEncoder drops the value.
            if tree.nodes[node].content == .empty {
                tree.nodes[node].content = .bytes(start: start, end: tree.scratch.count)
            }
        case .nonFinite(let error):
            throw error.encodingError(codingPath: tree.codingPath(of: node))
        case .notSpecial:
            try value.encode(to: ValueEncoder(state: self, node: node))
            // JSONEncoder stores `{}` for a value that encoded nothing, so it is not empty any more.
            if tree.nodes[node].content == .empty { tree.nodes[node].content = .object }
        }
    }

    /// A scalar through a single value container.
    func setSingle(_ value: @autoclosure () -> Any, into node: Int, _ write: (inout [UInt8]) -> Void) throws {
        switch tree.nodes[node].content {
        case .empty:
            let start = tree.scratch.count
            write(&tree.scratch)
            tree.nodes[node].content = .bytes(start: start, end: tree.scratch.count)
        case .object, .array:
            break  // JSONEncoder drops it: the container already made here wins.
        case .bytes:
            throw singleValueAlreadyEncoded(value(), node: node)
        }
    }

    func checkFinite<Number: BinaryFloatingPoint>(_ value: Number, at codingPath: () -> [any CodingKey]) throws {
        guard value.isFinite else {
            throw NonFiniteNumber(value: value).encodingError(codingPath: codingPath())
        }
    }

    // MARK: Containers

    /// JSONEncoder hands back the same object when asked twice (a class and its superclass may
    /// both ask), and traps when something else was encoded here; this records that and carries on.
    func openContainer(_ wanted: NodeContent, at node: Int) -> Int {
        switch tree.nodes[node].content {
        case .empty:
            tree.nodes[node].content = wanted
            return node
        case let content where content == wanted:
            return node
        default:
            return misused(
                "Attempt to push new \(wanted == .object ? "keyed" : "unkeyed") encoding container "
                    + "when already previously encoded at this path.", at: node, content: wanted)
        }
    }

    /// `nestedContainer(forKey:)` reuses what is already under the key when it is the same kind of
    /// container, so that two calls write into one object, as in JSONEncoder.
    func nestedContainer(_ wanted: NodeContent, forKey key: some CodingKey, in object: Int) -> Int {
        let name = key.stringValue
        if let existing = tree.currentValue(forKey: name, in: object) {
            if case .node(let node) = existing {
                switch tree.nodes[node].content {
                case .empty:
                    tree.nodes[node].content = wanted
                    return node
                case let content where content == wanted:
                    return node
                default:
                    break
                }
            }
            return misused(
                "Attempt to re-encode into nested container for key \"\(name)\": "
                    + "a different kind of value is already encoded for this key.", at: object, content: wanted)
        }
        let node = tree.addNode(parent: object, key: .key(key), content: wanted, isNested: true)
        tree.set(.node(node), forKey: name, in: object)
        return node
    }

    func nestedContainer(_ wanted: NodeContent, appendedTo array: Int) -> Int {
        let node = tree.addNode(
            parent: array, key: .index(tree.nodes[array].count), content: wanted, isNested: true)
        tree.append(.node(node), to: array)
        return node
    }

    /// A container that goes nowhere, so that a misused container can be written to without harm.
    private func misused(_ message: String, at node: Int, content: NodeContent) -> Int {
        if misuse == nil { misuse = (message, tree.codingPath(of: node)) }
        return tree.addNode(parent: node, key: nil, content: content, isNested: true)
    }

    private func singleValueAlreadyEncoded(_ value: Any, node: Int) -> EncodingError {
        .invalidValue(
            value,
            .init(
                codingPath: tree.codingPath(of: node),
                debugDescription:
                    "Attempt to encode value through single value container when previously value already encoded."
            ))
    }
}
