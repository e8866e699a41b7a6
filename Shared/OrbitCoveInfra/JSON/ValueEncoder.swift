/// The `Encoder` handed to each value's `encode(to:)`: a position in the tree, nothing more,
/// so that passing it as `any Encoder` needs no allocation.
struct ValueEncoder: Encoder {
    let state: EncodingState
    let node: Int

    var codingPath: [any CodingKey] { state.tree.codingPath(of: node) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object = state.openContainer(.object, at: node)
        return KeyedEncodingContainer(ObjectContainer<Key>(state: state, node: object, encoderNode: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        ArrayContainer(state: state, node: state.openContainer(.array, at: node), encoderNode: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(state: state, node: node)
    }
}
