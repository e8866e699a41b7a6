extension Tree {
    /// The path JSONEncoder reports: the keys of the encoders back to the top, each encoder made
    /// for a value that a container encoded. A value encoded into a nested container therefore
    /// gets the encoder's path plus its own key, without the nested container's key (a quirk of
    /// JSONEncoder, kept so that paths in errors match); the nested container's own `codingPath`
    /// does include its key.
    func codingPath(of node: Int) -> [any CodingKey] {
        var path: [any CodingKey] = []
        var current = node
        while current >= 0 {
            if let key = nodeKeys[current] { path.append(key.codingKey) }
            current = nodes[current].parent
        }
        return path.reversed()
    }
}

/// A coding path component, made into a `CodingKey` only when someone asks for the path:
/// JSONEncoder's index keys have a string value ("Index 3") that is costly to build for every element.
enum PathKey {
    case key(any CodingKey)
    case index(Int)

    var codingKey: any CodingKey {
        switch self {
        case .key(let key): key
        case .index(let index): JSONKey(index: index)
        }
    }
}

/// The keys JSONEncoder makes itself: array indices and `super`.
struct JSONKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }

    init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
    }

    static let `super` = JSONKey(stringValue: "super")
}
