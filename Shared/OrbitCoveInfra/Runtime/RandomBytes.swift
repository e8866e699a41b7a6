/// `count` bytes from the system's secure generator, taken eight at a time: each of its draws is
/// a `getrandom` call on Linux, so `UInt8.random` byte by byte made one system call a byte (24
/// for a request's trace context when it came without a 32-hex request id, 8 behind the gateway;
/// BENCHMARKS.md, "The hot read path").
package func randomBytes(_ count: Int) -> [UInt8] {
    precondition(count >= 0, "a negative count of random bytes")
    var generator = SystemRandomNumberGenerator()
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + 7)
    while bytes.count < count {
        withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
    }
    bytes.removeLast(bytes.count - count)
    return bytes
}
