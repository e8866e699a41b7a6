struct ArrayContainer: UnkeyedEncodingContainer {
    let state: EncodingState
    let node: Int
    /// The encoder this container (or the container it is nested in) came from: values encoded
    /// here extend its coding path, as in JSONEncoder (see `Tree.codingPath(of:)`).
    let encoderNode: Int

    var codingPath: [any CodingKey] { state.tree.codingPath(of: node) }
    var count: Int { state.tree.nodes[node].count }

    mutating func encodeNil() throws { state.tree.append(to: node) { $0.appendJSONNull() } }
    mutating func encode(_ value: Bool) throws { state.tree.append(to: node) { $0.appendJSONBool(value) } }
    mutating func encode(_ value: String) throws { state.tree.append(to: node) { $0.appendJSONString(value) } }

    mutating func encode(_ value: Double) throws { try encodeFloat(value) }
    mutating func encode(_ value: Float) throws { try encodeFloat(value) }

    mutating func encode(_ value: Int) throws { encodeInteger(value) }
    mutating func encode(_ value: Int8) throws { encodeInteger(value) }
    mutating func encode(_ value: Int16) throws { encodeInteger(value) }
    mutating func encode(_ value: Int32) throws { encodeInteger(value) }
    mutating func encode(_ value: Int64) throws { encodeInteger(value) }
    mutating func encode(_ value: Int128) throws { encodeInteger(value) }
    mutating func encode(_ value: UInt) throws { encodeInteger(value) }
    mutating func encode(_ value: UInt8) throws { encodeInteger(value) }
    mutating func encode(_ value: UInt16) throws { encodeInteger(value) }
    mutating func encode(_ value: UInt32) throws { encodeInteger(value) }
    mutating func encode(_ value: UInt64) throws { encodeInteger(value) }
    mutating func encode(_ value: UInt128) throws { encodeInteger(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let slot = try state.slot(for: value, owner: encoderNode, key: .index(count))
        state.tree.append(slot, to: node)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    )
        -> KeyedEncodingContainer<NestedKey>
    {
        let object = state.nestedContainer(.object, appendedTo: node)
        return KeyedEncodingContainer(ObjectContainer<NestedKey>(state: state, node: object, encoderNode: encoderNode))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        ArrayContainer(state: state, node: state.nestedContainer(.array, appendedTo: node), encoderNode: encoderNode)
    }

    /// JSONEncoder inserts the super value when its encoder is released; for the usual
    /// `super.encode(to: container.superEncoder())` that is the same place as appending it now.
    mutating func superEncoder() -> any Encoder {
        let superNode = state.tree.addNode(parent: encoderNode, key: .index(count))
        state.tree.append(.node(superNode), to: node)
        return ValueEncoder(state: state, node: superNode)
    }

    private func encodeInteger<Integer: FixedWidthInteger>(_ value: Integer) {
        state.tree.append(to: node) { $0.appendJSONInteger(value) }
    }

    private func encodeFloat<Number: BinaryFloatingPoint & CustomStringConvertible>(_ value: Number) throws {
        let index = count
        try state.checkFinite(value) { state.tree.codingPath(of: encoderNode) + [JSONKey(index: index)] }
        state.tree.append(to: node) { $0.appendJSONFloat(value) }
    }
}
