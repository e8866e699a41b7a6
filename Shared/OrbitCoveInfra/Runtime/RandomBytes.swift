/// `count` bytes from the system's secure generator, taken eight at a time: each of its draws is
/// a `getrandom` call on Linux, so `UInt8.random` byte by byte made one system call a byte (24
/// for every request's trace context, a tenth of the services' HTTP plumbing's CPU;
/// BENCHMARKS.md, "The hot read path").
package func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + 7)
    while bytes.count < count {
        withUnsafeBytes(of: generator.next()) { bytes.append(contentsOf: $0) }
    }
    bytes.removeLast(bytes.count - count)
    return bytes
}
