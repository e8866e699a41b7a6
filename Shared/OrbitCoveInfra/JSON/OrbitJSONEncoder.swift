import Foundation

/// OrbitCove's JSON: the same bytes as a `JSONEncoder` set to `[.sortedKeys, .withoutEscapingSlashes]`
/// with a custom date strategy that writes one string, except that every `UUID` is written in
/// lower case, as RFC 9562 asks. `UUID.encode(to:)` writes `uuidString`, which is upper case, and
/// that conformance is Foundation's; so this encoder recognises `UUID` values itself, as JSONEncoder
/// recognises `Date`, `Data` and `URL`, wherever they are: properties, array elements, dictionary
/// values and keys (`[UUID: V]` is an array of alternating keys and values), optionals, enums.
///
/// A UUID only escapes it when some `encode(to:)` writes `uuidString` itself, or calls
/// `uuid.encode(to: encoder)` directly instead of encoding the UUID into a container.
package struct OrbitJSONEncoder: Sendable {
    private let formatDate: @Sendable (Date) -> String

    /// - Parameter formatDate: the text of every `Date`, as the date strategy's closure would encode it.
    package init(formattingDatesWith formatDate: @escaping @Sendable (Date) -> String) {
        self.formatDate = formatDate
    }

    /// - Throws: `EncodingError.invalidValue` where JSONEncoder throws it (NaN or infinity, a top-level
    ///   value that encodes nothing, nesting 512 deep), and where JSONEncoder would trap on a misused
    ///   container; any error a value's `encode(to:)` throws.
    package func encodeBytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        let state = EncodingState(formatDate: formatDate)
        let root = state.tree.addNode(parent: -1, key: nil)
        try state.encodeTopLevel(value, into: root)
        if let misuse = state.misuse {
            throw EncodingError.invalidValue(
                value, .init(codingPath: misuse.codingPath, debugDescription: misuse.message))
        }
        do {
            return try TreeWriter.json(of: state.tree, root: .node(root))
        } catch is TreeWriter.TooDeep {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "Unable to encode the given top-level value to JSON."))
        } catch is TreeWriter.OutputBoundExceeded {
            // A bug in `Tree.outputBound`; failing this one response beats writing past the buffer.
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "OrbitJSONEncoder misjudged the size of its output."))
        }
    }

    /// As `JSONEncoder.encode(_:)`, for code written against it.
    package func encode<T: Encodable>(_ value: T) throws -> Data {
        Data(try encodeBytes(value))
    }
}

extension EncodingState {
    /// The top level differs from a nested value in one way: encoding nothing there is an error.
    func encodeTopLevel<T: Encodable>(_ value: T, into root: Int) throws {
        let start = tree.scratch.count
        switch tree.appendSpecial(value, formatDate: formatDate) {
        case .written:
            tree.nodes[root].content = .bytes(start: start, end: tree.scratch.count)
        case .nonFinite(let error):
            throw error.encodingError(codingPath: [])
        case .notSpecial:
            try value.encode(to: ValueEncoder(state: self, node: root))
            if tree.nodes[root].content == .empty {
                throw EncodingError.invalidValue(
                    value, .init(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
            }
        }
    }
}
