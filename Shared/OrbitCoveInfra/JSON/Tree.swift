/// What one `encode` call builds before anything is written out.
///
/// `Encodable` never says when a container is finished, and sorted keys can only be written once
/// an object is, so values are kept until the top-level `encode(to:)` returns. Scalars are turned
/// into JSON text at once, into `scratch`; objects and arrays are nodes whose entries form linked
/// lists (a nested container may still be written to after its parent's later entries), and
/// `TreeWriter` walks the nodes once at the end. Everything lives in a few flat arrays, so a
/// response of hundreds of values costs a handful of allocations rather than one per value.
struct Tree {
    /// JSON text of every scalar and string, in the order encoded.
    var scratch: [UInt8] = []
    /// The raw UTF-8 of every object key, compared unescaped as JSONEncoder's `.sortedKeys` does.
    var keyBytes: [UInt8] = []
    var nodes: [Node] = []
    /// Parallel to `nodes`; kept apart so that `Node` stays a plain value that copies cheaply.
    var nodeKeys: [PathKey?] = []
    var entries: [Entry] = []
    /// What the writer adds to `scratch`'s bytes, at most: keys (escaped), punctuation, brackets.
    private var framingBound = 2

    /// No written JSON is longer: each piece of `scratch` is copied at most once, and the rest is
    /// counted as each key, element and node is added.
    var outputBound: Int { scratch.count + framingBound }

    mutating func addNode(parent: Int, key: PathKey?, content: NodeContent = .empty, isNested: Bool = false) -> Int {
        nodes.append(Node(content: content, parent: parent, isNestedContainer: isNested))
        framingBound += 2
        nodeKeys.append(key)
        return nodes.count - 1
    }

    // MARK: Entries

    mutating func set(_ value: Slot, forKey key: String, in object: Int) {
        var entry = Entry(keyStart: keyBytes.count, keyEnd: 0, value: value)
        var key = key
        key.withUTF8 { utf8 in
            keyBytes.append(contentsOf: utf8)
            let head = min(utf8.count, 8)
            for index in 0..<head { entry.keyPrefix = entry.keyPrefix << 8 | UInt64(utf8[index]) }
            entry.keyPrefix <<= 8 * (8 - head)  // A shift by 64 (an empty key) gives 0.
            for byte in utf8
            where byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                entry.keyIsPlain = false
                if byte >= 0x80 { nodes[object].hasNonASCIIKey = true }
            }
        }
        entry.keyEnd = keyBytes.count
        // Quotes, colon, comma; an escape is at most six bytes (`\u001f`) for one.
        framingBound += 4 + (entry.keyIsPlain ? 1 : 6) * (entry.keyEnd - entry.keyStart)
        link(entry, into: object)
    }

    mutating func append(_ value: Slot, to array: Int) {
        framingBound += 1
        link(Entry(keyStart: 0, keyEnd: 0, value: value), into: array)
    }

    /// Writes a scalar's JSON text through `write` and files it under `key`.
    mutating func set(forKey key: String, in object: Int, _ write: (inout [UInt8]) -> Void) {
        let start = scratch.count
        write(&scratch)
        set(.bytes(start: start, end: scratch.count), forKey: key, in: object)
    }

    mutating func append(to array: Int, _ write: (inout [UInt8]) -> Void) {
        let start = scratch.count
        write(&scratch)
        append(.bytes(start: start, end: scratch.count), to: array)
    }

    private mutating func link(_ entry: Entry, into node: Int) {
        entries.append(entry)
        let index = entries.count - 1
        if nodes[node].lastEntry >= 0 {
            entries[nodes[node].lastEntry].next = index
        } else {
            nodes[node].firstEntry = index
        }
        nodes[node].lastEntry = index
        nodes[node].count += 1
    }

    /// The value JSONEncoder would find under `key`: the last one set wins, and keys match as
    /// Swift strings do (canonical equivalence), because JSONEncoder keeps them in a `[String: …]`.
    func currentValue(forKey key: String, in object: Int) -> Slot? {
        var found: Slot?
        var key = key
        key.withUTF8 { wanted in
            let byBytes = !nodes[object].hasNonASCIIKey && wanted.allSatisfy { $0 < 0x80 }
            var index = nodes[object].firstEntry
            while index >= 0 {
                let entry = entries[index]
                let matches =
                    byBytes
                    ? keyBytes[entry.keyStart..<entry.keyEnd].elementsEqual(wanted)
                    : String(decoding: keyBytes[entry.keyStart..<entry.keyEnd], as: UTF8.self)
                        == String(decoding: wanted, as: UTF8.self)
                if matches { found = entry.value }
                index = entry.next
            }
        }
        return found
    }
}

/// Where an encoded value is: JSON text already in `Tree.scratch`, or a node.
enum Slot {
    case bytes(start: Int, end: Int)
    case node(Int)
}

enum NodeContent: Equatable {
    /// Nothing encoded yet. Written as `{}`, JSONEncoder's stand-in for a value that encoded nothing.
    case empty
    case object
    case array
    /// A single value; never an object or array that could still be added to.
    case bytes(start: Int, end: Int)
}

struct Node {
    var content: NodeContent
    /// The node whose coding path this one extends; -1 for the top-level value.
    var parent: Int
    /// Made by `nestedContainer` or `nestedUnkeyedContainer`, not by encoding a value.
    var isNestedContainer: Bool
    var firstEntry = -1
    var lastEntry = -1
    var count = 0
    /// Only non-ASCII keys can be canonically equivalent without being byte-equal.
    var hasNonASCIIKey = false
}

struct Entry {
    var keyStart: Int
    var keyEnd: Int
    var value: Slot
    var next = -1
    /// The key's first eight bytes, big-endian, zero-padded: comparing these integers decides
    /// most comparisons of two keys without reading the keys.
    var keyPrefix: UInt64 = 0
    /// ASCII with nothing to escape, so it can be copied out as it is.
    var keyIsPlain = true
}
