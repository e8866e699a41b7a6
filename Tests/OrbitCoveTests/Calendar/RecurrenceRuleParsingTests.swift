import OrbitCoveCalendar
import Testing

@Suite struct RecurrenceRuleParsingTests {
    private func failure(parsing text: String) -> RecurrenceRuleError? {
        do {
            _ = try RecurrenceRule(parsing: text)
            return nil
        } catch {
            return error
        }
    }

    @Test func parsesEverySupportedPart() throws {
        let rule = try RecurrenceRule(
            parsing: "FREQ=YEARLY;INTERVAL=2;UNTIL=20300630T000000Z;BYMONTH=3,11;BYMONTHDAY=-1,1;"
                + "BYDAY=2MO,-1FR;BYSETPOS=1,-1;WKST=SU")
        #expect(rule.frequency == .yearly)
        #expect(rule.interval == 2)
        #expect(
            rule.end
                == .until(
                    .utc(try #require(CivilDateTime(year: 2030, month: 6, day: 30, hour: 0, minute: 0, second: 0)))))
        #expect(rule.byMonth == [3, 11])
        #expect(rule.byMonthDay == [-1, 1])
        #expect(rule.byDay == [.init(.monday, ordinal: 2), .init(.friday, ordinal: -1)])
        #expect(rule.bySetPosition == [-1, 1])
        #expect(rule.weekStart == .sunday)
    }

    @Test func untilForms() throws {
        let date = try RecurrenceRule(parsing: "FREQ=DAILY;UNTIL=20260630")
        #expect(date.end == .until(.date(try #require(CivilDate(year: 2026, month: 6, day: 30)))))
        let floating = try RecurrenceRule(parsing: "FREQ=DAILY;UNTIL=20260630T180000")
        let time = try #require(CivilDateTime(year: 2026, month: 6, day: 30, hour: 18, minute: 0, second: 0))
        #expect(floating.end == .until(.floating(time)))
        #expect(try RecurrenceRule(parsing: "FREQ=DAILY;UNTIL=20260630T180000Z").end == .until(.utc(time)))
    }

    @Test(arguments: [
        ("byday=tu,mo;freq=weekly;wkst=mo;interval=1", "FREQ=WEEKLY;BYDAY=MO,TU"),
        ("FREQ=MONTHLY;BYDAY=+2MO,-1FR,MO,MO", "FREQ=MONTHLY;BYDAY=MO,2MO,-1FR"),
        ("COUNT=10;FREQ=DAILY;INTERVAL=3", "FREQ=DAILY;INTERVAL=3;COUNT=10"),
        ("FREQ=YEARLY;BYMONTHDAY=29,+1;BYMONTH=02", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=1,29"),
        ("FREQ=WEEKLY;UNTIL=20260630t000000z;WKST=SU", "FREQ=WEEKLY;UNTIL=20260630T000000Z;WKST=SU"),
    ])
    func serialisesCanonically(input: String, canonical: String) throws {
        let rule = try RecurrenceRule(parsing: input)
        #expect(rule.rfc5545Value == canonical)
        #expect(try RecurrenceRule(parsing: rule.rfc5545Value) == rule)
    }

    @Test(arguments: ["BYSECOND=0", "BYMINUTE=30", "BYHOUR=9", "BYYEARDAY=100", "BYWEEKNO=20"])
    func refusesUnsupportedParts(part: String) throws {
        let error = try #require(failure(parsing: "FREQ=YEARLY;" + part))
        let name = String(part.prefix { $0 != "=" })
        #expect(error.code == .unsupportedPart)
        #expect(error.part == name)
        #expect(error.message.contains(name))
    }

    @Test(arguments: ["HOURLY", "MINUTELY", "SECONDLY"])
    func refusesSubDailyFrequencies(frequency: String) throws {
        let error = try #require(failure(parsing: "FREQ=\(frequency);COUNT=3"))
        #expect(error.code == .unsupportedPart)
        #expect(error.part == "FREQ")
        #expect(error.message.contains(frequency))
    }

    @Test(arguments: [
        ("FREQ=DAILY;X-FOO=1", "X-FOO", RecurrenceRuleError.Code.unknownPart),
        ("FREQ=DAILY;RSCALE=GREGORIAN", "RSCALE", .unknownPart),
        ("FREQ=DAILY;FREQ=WEEKLY", "FREQ", .duplicatePart),
        ("FREQ=DAILY;BYDAY=MO;BYDAY=TU", "BYDAY", .duplicatePart),
        ("FREQ=DAILY;COUNT=3;UNTIL=20260101", "COUNT", .conflictingParts),
        ("COUNT=3", "FREQ", .missingPart),
        ("FREQ=FORTNIGHTLY", "FREQ", .invalidValue),
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL", .invalidValue),
        ("FREQ=DAILY;INTERVAL=-1", "INTERVAL", .invalidValue),
        ("FREQ=DAILY;INTERVAL=99999999999999999999", "INTERVAL", .invalidValue),
        ("FREQ=DAILY;COUNT=0", "COUNT", .invalidValue),
        ("FREQ=DAILY;COUNT=99999999999999999999999999999999", "COUNT", .invalidValue),
        ("FREQ=DAILY;BYMONTH=13", "BYMONTH", .invalidValue),
        ("FREQ=DAILY;BYMONTH=0", "BYMONTH", .invalidValue),
        ("FREQ=DAILY;BYMONTH=-1", "BYMONTH", .invalidValue),
        ("FREQ=MONTHLY;BYMONTHDAY=32", "BYMONTHDAY", .invalidValue),
        ("FREQ=MONTHLY;BYMONTHDAY=0", "BYMONTHDAY", .invalidValue),
        ("FREQ=MONTHLY;BYMONTHDAY=-99999999999999999999", "BYMONTHDAY", .invalidValue),
        ("FREQ=WEEKLY;BYMONTHDAY=1", "BYMONTHDAY", .conflictingParts),
        ("FREQ=WEEKLY;BYDAY=2MO", "BYDAY", .conflictingParts),
        ("FREQ=DAILY;BYDAY=-1FR", "BYDAY", .conflictingParts),
        ("FREQ=MONTHLY;BYDAY=6MO", "BYDAY", .invalidValue),
        ("FREQ=MONTHLY;BYDAY=0MO", "BYDAY", .invalidValue),
        ("FREQ=YEARLY;BYDAY=54MO", "BYDAY", .invalidValue),
        ("FREQ=YEARLY;BYMONTH=3;BYDAY=6MO", "BYDAY", .invalidValue),
        ("FREQ=YEARLY;BYDAY=99999999999999999999MO", "BYDAY", .invalidValue),
        ("FREQ=MONTHLY;BYDAY=MO,,TU", "BYDAY", .invalidValue),
        ("FREQ=MONTHLY;BYDAY=XX", "BYDAY", .invalidValue),
        ("FREQ=MONTHLY;BYDAY=MONDAY", "BYDAY", .invalidValue),
        ("FREQ=MONTHLY;BYDAY=+MO", "BYDAY", .invalidValue),
        ("FREQ=MONTHLY;BYDAY=MO;BYSETPOS=0", "BYSETPOS", .invalidValue),
        ("FREQ=MONTHLY;BYDAY=MO;BYSETPOS=32", "BYSETPOS", .invalidValue),
        ("FREQ=DAILY;BYDAY=MO;BYSETPOS=2", "BYSETPOS", .invalidValue),
        ("FREQ=YEARLY;BYDAY=MO;BYSETPOS=+99999999999999999999", "BYSETPOS", .invalidValue),
        ("FREQ=MONTHLY;BYSETPOS=1", "BYSETPOS", .conflictingParts),
        ("FREQ=DAILY;WKST=XX", "WKST", .invalidValue),
        ("FREQ=DAILY;UNTIL=20260230", "UNTIL", .invalidValue),
        ("FREQ=DAILY;UNTIL=20261301T000000Z", "UNTIL", .invalidValue),
        ("FREQ=DAILY;UNTIL=20260101T250000Z", "UNTIL", .invalidValue),
        ("FREQ=DAILY;UNTIL=20260101T235960Z", "UNTIL", .invalidValue),
        ("FREQ=DAILY;UNTIL=99999999T999999Z", "UNTIL", .invalidValue),
        ("FREQ=DAILY;UNTIL=2026-01-01", "UNTIL", .invalidValue),
        ("FREQ=DAILY;UNTIL=20260101X000000Z", "UNTIL", .invalidValue),
        ("FREQ=DAILY;UNTIL=00000101", "UNTIL", .invalidValue),
        ("FREQ=DAILY;COUNT=", "COUNT", .invalidValue),
        ("FREQ=DAILY;COUNT=1.5", "COUNT", .invalidValue),
        ("FREQ=DAILY;COUNT=١٢", "COUNT", .invalidValue),
    ])
    func refusesBadRules(rule: String, part: String, code: RecurrenceRuleError.Code) throws {
        let error = try #require(failure(parsing: rule))
        #expect(error.code == code, "\(rule): \(error.message)")
        #expect(error.message.contains(part), "\(rule): \(error.message)")
    }

    @Test(arguments: [
        "", "FREQ", "=", ";", ";;", "FREQ=DAILY;", ";FREQ=DAILY", "RRULE:FREQ=DAILY", "FREQ=DAILY COUNT=3",
        "FREQ==DAILY", "FREQ=DAILY;=3", "🎉", "FREQ=DAILY;BYDAY=🎉", "FREQ=DAILY;BYDAY=é", "\u{0}",
        String(repeating: "FREQ=DAILY;", count: 200),
    ])
    func refusesGarbageWithoutTrapping(text: String) {
        #expect(failure(parsing: text) != nil)
    }

    @Test func errorMessagesStayShortAndPrintable() throws {
        let error = try #require(failure(parsing: "FREQ=DAILY;" + String(repeating: "\u{7}Z", count: 300) + "=1"))
        #expect(error.message.count < 80)
        #expect(error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 })
    }

    /// Random splices of rule fragments: every input either parses and round-trips, or throws.
    @Test func fuzzedInputNeverTraps() {
        let fragments = [
            "FREQ=", "DAILY", "WEEKLY", "MONTHLY", "YEARLY", ";", ",", "=", "BYDAY=", "MO", "-1", "+5", "53",
            "99999999999999999999", "BYMONTHDAY=", "BYMONTH=", "BYSETPOS=", "COUNT=", "UNTIL=", "20260101",
            "T120000", "Z", "INTERVAL=", "WKST=", "SU", "0", "-", "+", "BYHOUR=", "é", "",
        ]
        var generator = SplitMix64(seed: 5545)
        for _ in 0..<20_000 {
            let text = (0..<Int.random(in: 1...9, using: &generator)).map { _ in
                fragments.randomElement(using: &generator) ?? ""
            }.joined()
            if let rule = try? RecurrenceRule(parsing: text) {
                #expect((try? RecurrenceRule(parsing: rule.rfc5545Value)) == rule, "\(text)")
            }
        }
    }
}

/// A seeded generator so fuzzing is reproducible.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
