/// Writes a finished `Tree` as JSON text, objects with their keys sorted as swift-foundation's
/// `.sortedKeys` sorts them on Linux: by the keys' UTF-8 bytes (`utf8.lexicographicallyPrecedes`).
struct TreeWriter {
    /// JSONWriter's limit: an object or array nested this deep fails the whole encode.
    static let maximumDepth = 512

    struct TooDeep: Error {}
    struct OutputBoundExceeded: Error {}

    private let tree: Tree
    private let scratch: UnsafeBufferPointer<UInt8>
    private let keyBytes: UnsafeBufferPointer<UInt8>
    private var output: FixedOutput
    /// For each object being written, innermost last, the entry holding each key and the one
    /// holding its value (the same entry unless a key was set twice); one buffer for all of them.
    private var order: [(key: Int, value: Int)] = []

    static func json(of tree: Tree, root: Slot) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: tree.outputBound) { buffer, initializedCount in
            try tree.scratch.withUnsafeBufferPointer { scratch in
                try tree.keyBytes.withUnsafeBufferPointer { keyBytes in
                    var writer = TreeWriter(
                        tree: tree, scratch: scratch, keyBytes: keyBytes, output: FixedOutput(buffer))
                    try writer.write(root, depth: 0)
                    guard !writer.output.overflowed else { throw OutputBoundExceeded() }
                    initializedCount = writer.output.count
                }
            }
        }
    }

    private init(
        tree: Tree, scratch: UnsafeBufferPointer<UInt8>, keyBytes: UnsafeBufferPointer<UInt8>, output: FixedOutput
    ) {
        self.tree = tree
        self.scratch = scratch
        self.keyBytes = keyBytes
        self.output = output
    }

    private mutating func write(_ slot: Slot, depth: Int) throws {
        switch slot {
        case .bytes(let start, let end):
            output.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[start..<end]))
        case .node(let node):
            try write(node: node, depth: depth + 1)
        }
    }

    private mutating func write(node: Int, depth: Int) throws {
        let content = tree.nodes[node].content
        if case .bytes(let start, let end) = content {
            output.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[start..<end]))
            return
        }
        guard depth < Self.maximumDepth else { throw TooDeep() }
        switch content {
        case .empty:
            output.append("{}")
        case .array:
            output.append(UInt8(ascii: "["))
            var entry = tree.nodes[node].firstEntry
            while entry >= 0 {
                if entry != tree.nodes[node].firstEntry { output.append(UInt8(ascii: ",")) }
                try write(tree.entries[entry].value, depth: depth)
                entry = tree.entries[entry].next
            }
            output.append(UInt8(ascii: "]"))
        case .object:
            try writeObject(node, depth: depth)
        case .bytes:
            break
        }
    }

    private mutating func writeObject(_ node: Int, depth: Int) throws {
        let base = order.count
        defer { order.removeLast(order.count - base) }
        if tree.nodes[node].hasNonASCIIKey {
            collectMergingEquivalentKeys(of: node)
        } else {
            collectLastOfEachKey(of: node)
        }
        output.append(UInt8(ascii: "{"))
        for position in base..<order.count {
            if position > base { output.append(UInt8(ascii: ",")) }
            let (keyEntry, valueEntry) = (tree.entries[order[position].key], order[position].value)
            let key = UnsafeBufferPointer(rebasing: keyBytes[keyEntry.keyStart..<keyEntry.keyEnd])
            if keyEntry.keyIsPlain {
                output.append(UInt8(ascii: "\""))
                output.append(contentsOf: key)
                output.append(UInt8(ascii: "\""))
            } else {
                output.appendJSONString(utf8: key)
            }
            output.append(UInt8(ascii: ":"))
            try write(tree.entries[valueEntry].value, depth: depth)
        }
        output.append(UInt8(ascii: "}"))
    }

    /// A key set twice keeps its last value, as assigning into JSONEncoder's dictionary does.
    private mutating func collectLastOfEachKey(of node: Int) {
        let base = order.count
        var entry = tree.nodes[node].firstEntry
        while entry >= 0 {
            order.append((entry, entry))
            entry = tree.entries[entry].next
        }
        let (entries, keys) = (tree.entries, keyBytes)
        let kept = order.withUnsafeMutableBufferPointer { all in
            var pairs = UnsafeMutableBufferPointer(rebasing: all[base...])
            // Entry indices grow with time, so among equal keys the last one set sorts last.
            pairs.sort { Self.compareKeys(entries[$0.key], entries[$1.key], in: keys) ?? ($0.key < $1.key) }
            var kept = 0
            for index in pairs.indices {
                let isOverwritten =
                    index + 1 < pairs.count
                    && Self.compareKeys(entries[pairs[index].key], entries[pairs[index + 1].key], in: keys) == nil
                if !isOverwritten {
                    pairs[kept] = pairs[index]
                    kept += 1
                }
            }
            return kept
        }
        order.removeLast(order.count - base - kept)
    }

    /// JSONEncoder keeps an object's keys in a `[String: …]`, where canonically equivalent keys
    /// ("é" as one scalar, or "e" and a combining accent) are one key: the first spelling stays,
    /// with the last value. Only non-ASCII keys can be equivalent without being equal bytes.
    private mutating func collectMergingEquivalentKeys(of node: Int) {
        let base = order.count
        var positions: [String: Int] = [:]
        var entry = tree.nodes[node].firstEntry
        while entry >= 0 {
            let key = String(
                decoding: UnsafeBufferPointer(
                    rebasing: keyBytes[tree.entries[entry].keyStart..<tree.entries[entry].keyEnd]),
                as: UTF8.self)
            if let position = positions[key] {
                order[position].value = entry
            } else {
                positions[key] = order.count
                order.append((entry, entry))
            }
            entry = tree.entries[entry].next
        }
        let (entries, keys) = (tree.entries, keyBytes)
        order.withUnsafeMutableBufferPointer { all in
            var pairs = UnsafeMutableBufferPointer(rebasing: all[base...])
            pairs.sort { Self.compareKeys(entries[$0.key], entries[$1.key], in: keys) ?? false }
        }
    }

    /// Whether the first key's bytes sort before the second's; nil when they are equal.
    private static func compareKeys(_ first: Entry, _ second: Entry, in keys: UnsafeBufferPointer<UInt8>) -> Bool? {
        if first.keyPrefix != second.keyPrefix { return first.keyPrefix < second.keyPrefix }
        let firstLength = first.keyEnd - first.keyStart
        let secondLength = second.keyEnd - second.keyStart
        // Equal prefixes: the first eight bytes match, or the shorter key ends in them (padding is 0).
        for offset in min(8, firstLength, secondLength)..<min(firstLength, secondLength) {
            let (a, b) = (keys[first.keyStart + offset], keys[second.keyStart + offset])
            if a != b { return a < b }
        }
        return firstLength == secondLength ? nil : firstLength < secondLength
    }
}
