import Foundation

/// A row's worth of random values for the row readers' tests: an id, integers of each width, a
/// moment, a flag and some text.
struct RandomValues {
    let id = UUID()
    let big: Int64
    let int: Int32
    let small: Int16
    /// Microseconds from 2000-01-01: any within some 6,300 years of it (inside PostgreSQL's
    /// range, and far past 2^53 microseconds, where the division rounds); in round 0, none.
    let microseconds: Int64
    let flag: Bool
    let text: String

    init(_ random: inout SplitMix64, round: Int) {
        big = Int64(bitPattern: random.next())
        int = Int32(truncatingIfNeeded: random.next())
        small = Int16(truncatingIfNeeded: random.next())
        microseconds = round == 0 ? 0 : Int64(bitPattern: random.next()) % 200_000_000_000_000_000
        flag = random.next() % 2 == 0
        text = Self.text(&random)
    }

    /// Text of up to 40 characters from ASCII, accented Latin, CJK and emoji.
    static func text(_ random: inout SplitMix64) -> String {
        let alphabet = Array("aZ 09\"\\'é ñ漢字カナ한글👩‍👧🎉\t")
        return String((0..<Int(random.next() % 41)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
    }
}
