import OrbitCoveInfra
import Testing

/// `randomBytes`, which draws eight bytes at a time: the count asked for, every byte of it
/// random (the last ones too, which a draw's tail is cut from).
@Suite struct RandomBytesTests {
    @Test func eachCountIsGivenAndEveryPositionVaries() {
        for count in 0...40 {
            let draws = (0..<200).map { _ in randomBytes(count) }
            #expect(draws.allSatisfy { $0.count == count }, "\(count)")
            guard count > 0 else { continue }
            // Two hundred draws agreeing at a position would be a chance of 1 in 256^199.
            for position in 0..<count {
                #expect(Set(draws.map { $0[position] }).count > 1, "count \(count), position \(position)")
            }
            #expect(count < 8 || Set(draws).count == draws.count, "\(count)")
        }
    }

    @Test func everyByteValueComes() {
        // 16,384 bytes miss one of 256 values with a chance of about 256 · (255/256)^16384, 4e-26.
        #expect(Set(randomBytes(16_384)).count == 256)
    }
}
