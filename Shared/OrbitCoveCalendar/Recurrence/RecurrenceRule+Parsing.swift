import Synchronization

extension RecurrenceRule {
    /// Parts of RFC 5545's grammar that this engine deliberately leaves out, so they get a clearer error
    /// than an unknown name. BYHOUR and friends would need several instances per day; BYWEEKNO and BYYEARDAY
    /// have no user interface in OrbitCove.
    static let unsupportedParts: Set<String> = ["BYSECOND", "BYMINUTE", "BYHOUR", "BYYEARDAY", "BYWEEKNO"]
    static let supportedParts: Set<String> = [
        "FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "BYMONTHDAY", "BYMONTH", "BYSETPOS", "WKST",
    ]
    /// Real rules are under 200 characters; the cap keeps error handling of hostile input cheap.
    static let maximumLength = 1024

    /// Parses an RRULE value without the `RRULE:` prefix, e.g. `FREQ=WEEKLY;BYDAY=TU,TH;UNTIL=20260630T000000Z`.
    ///
    /// Names and values are case-insensitive (RFC 5545 3.1) and parts may come in any order. Anything outside
    /// the supported subset is refused rather than ignored, because ignoring a part silently changes the
    /// schedule.
    package init(parsing text: String) throws(RecurrenceRuleError) {
        guard !text.isEmpty, text.utf8.count <= Self.maximumLength else {
            throw RecurrenceRuleError(
                .malformed, part: nil, "A recurrence rule must be 1 to \(Self.maximumLength) characters long")
        }
        let parts = try Self.splitParts(Self.asciiUppercased(text))
        guard let frequencyText = parts["FREQ"] else {
            throw RecurrenceRuleError(.missingPart, part: "FREQ", "FREQ is required, e.g. FREQ=WEEKLY")
        }
        if parts["COUNT"] != nil && parts["UNTIL"] != nil {
            throw RecurrenceRuleError(.conflictingParts, part: "UNTIL", "COUNT and UNTIL cannot both be given")
        }
        let end: End
        if let count = parts["COUNT"] {
            end = .count(try Self.parsePositive(count, part: "COUNT", range: Self.countRange))
        } else if let until = parts["UNTIL"] {
            end = .until(try Self.parseUntil(until))
        } else {
            end = .never
        }
        try self.init(
            frequency: try Self.parseFrequency(frequencyText),
            interval: try parts["INTERVAL"].map { value throws(RecurrenceRuleError) in
                try Self.parsePositive(value, part: "INTERVAL", range: Self.intervalRange)
            } ?? 1,
            end: end,
            byMonth: try Self.parseList(parts["BYMONTH"], part: "BYMONTH") { IntegerText.parse($0, signed: false) },
            byMonthDay: try Self.parseList(parts["BYMONTHDAY"], part: "BYMONTHDAY") {
                IntegerText.parse($0, signed: true)
            },
            byDay: try Self.parseList(parts["BYDAY"], part: "BYDAY", Self.parseWeekdayNumber),
            bySetPosition: try Self.parseList(parts["BYSETPOS"], part: "BYSETPOS") {
                IntegerText.parse($0, signed: true)
            },
            weekStart: try parts["WKST"].map { value throws(RecurrenceRuleError) in
                guard let day = Weekday(rfc5545Code: value) else {
                    throw Self.invalid("WKST", value, expected: "a weekday like MO or SU")
                }
                return day
            } ?? .monday
        )
    }

    private static func splitParts(_ text: String) throws(RecurrenceRuleError) -> [String: Substring] {
        var parts: [String: Substring] = [:]
        for item in text.split(separator: ";", omittingEmptySubsequences: false) {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw RecurrenceRuleError(
                    .malformed, part: nil,
                    "Expected NAME=VALUE parts separated by ';', got \(RecurrenceRuleError.quoted(item))")
            }
            let name = String(item[..<equals])
            let value = item[item.index(after: equals)...]
            if unsupportedParts.contains(name) {
                throw RecurrenceRuleError(.unsupportedPart, part: name, "\(name) is not supported")
            }
            guard supportedParts.contains(name) else {
                let quoted = RecurrenceRuleError.quoted(name)
                throw RecurrenceRuleError(.unknownPart, part: quoted, "Unknown rule part \(quoted)")
            }
            guard parts[name] == nil else {
                throw RecurrenceRuleError(.duplicatePart, part: name, "\(name) is given more than once")
            }
            guard !value.isEmpty else {
                throw RecurrenceRuleError(.invalidValue, part: name, "\(name) has no value")
            }
            parts[name] = value
        }
        return parts
    }

    private static func parseFrequency(_ text: Substring) throws(RecurrenceRuleError) -> Frequency {
        if let frequency = Frequency(rawValue: String(text)) { return frequency }
        if ["HOURLY", "MINUTELY", "SECONDLY"].contains(text) {
            throw RecurrenceRuleError(.unsupportedPart, part: "FREQ", "FREQ=\(text) is not supported")
        }
        throw invalid("FREQ", text, expected: "DAILY, WEEKLY, MONTHLY or YEARLY")
    }

    private static func parsePositive(
        _ text: Substring, part: String, range: ClosedRange<Int>
    ) throws(RecurrenceRuleError) -> Int {
        guard let value = IntegerText.parse(text, signed: false) else {
            throw invalid(part, text, expected: "a whole number")
        }
        guard range.contains(value) else {
            throw RecurrenceRuleError(
                .invalidValue, part: part, "\(part) must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }

    private static func parseList<Value>(
        _ text: Substring?, part: String, _ parseItem: (Substring) -> Value?
    ) throws(RecurrenceRuleError) -> [Value] {
        guard let text else { return [] }
        var values: [Value] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let value = parseItem(item) else {
                throw invalid(part, item, expected: part == "BYDAY" ? "a weekday like MO, 2MO or -1FR" : "a number")
            }
            values.append(value)
        }
        return values
    }

    private static func parseWeekdayNumber(_ text: Substring) -> WeekdayNumber? {
        // Bytes, not Characters: a stray multi-byte character must fail the match, not shift an index.
        let bytes = Array(text.utf8)
        guard bytes.count >= 2, let weekday = Weekday(rfc5545Code: String(decoding: bytes.suffix(2), as: UTF8.self))
        else { return nil }
        let ordinalBytes = bytes.dropLast(2)
        if ordinalBytes.isEmpty { return WeekdayNumber(weekday) }
        guard let ordinal = IntegerText.parse(Substring(decoding: ordinalBytes, as: UTF8.self), signed: true)
        else { return nil }
        return WeekdayNumber(weekday, ordinal: ordinal)
    }

    /// `YYYYMMDD`, `YYYYMMDDTHHMMSS` or `YYYYMMDDTHHMMSSZ`.
    private static func parseUntil(_ text: Substring) throws(RecurrenceRuleError) -> Until {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            IntegerText.parse(Substring(decoding: bytes[range], as: UTF8.self), signed: false)
        }
        let expected = "a date like 20260630 or a time like 20260630T170000Z"
        guard [8, 15, 16].contains(bytes.count), let year = number(0..<4), let month = number(4..<6),
            let day = number(6..<8)
        else { throw invalid("UNTIL", text, expected: expected) }
        guard let date = CivilDate(year: year, month: month, day: day) else {
            throw RecurrenceRuleError(.invalidValue, part: "UNTIL", "UNTIL is not a real date")
        }
        if bytes.count == 8 { return .date(date) }
        guard bytes[8] == UInt8(ascii: "T"), bytes.count == 15 || bytes[15] == UInt8(ascii: "Z"),
            let hour = number(9..<11), let minute = number(11..<13), let second = number(13..<15)
        else { throw invalid("UNTIL", text, expected: expected) }
        guard let time = CivilDateTime(date: date, hour: hour, minute: minute, second: second) else {
            throw RecurrenceRuleError(.invalidValue, part: "UNTIL", "UNTIL is not a real time of day")
        }
        return bytes.count == 16 ? .utc(time) : .floating(time)
    }

    private static func invalid(_ part: String, _ value: Substring, expected: String) -> RecurrenceRuleError {
        RecurrenceRuleError(
            .invalidValue, part: part, "\(part) value \(RecurrenceRuleError.quoted(value)) is not \(expected)")
    }

    private static func asciiUppercased(_ text: String) -> String {
        String(decoding: text.utf8.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
    }
}

/// Integer parsing that never traps: magnitudes past a billion saturate, so a range check rejects them.
enum IntegerText {
    static func parse(_ text: Substring, signed: Bool) -> Int? {
        var digits = text.utf8[...]
        var sign = 1
        if signed, let first = digits.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            sign = first == UInt8(ascii: "-") ? -1 : 1
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty else { return nil }
        var value = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = min(value * 10 + Int(byte - UInt8(ascii: "0")), 1_000_000_001)
        }
        return sign * value
    }
}

extension RecurrenceRule {
    /// ``init(parsing:)``, remembered per text: a calendar read parses the rule of every series
    /// it shows, and the same rules come back on every read. Refused texts are not remembered.
    package static func parsed(_ text: String) throws(RecurrenceRuleError) -> RecurrenceRule {
        if let known = knownRules.withLock({ $0[text] }) { return known }
        let rule = try RecurrenceRule(parsing: text)
        knownRules.withLock { known in
            if known.count >= knownRulesLimit { known.removeAll(keepingCapacity: true) }
            known[text] = rule
        }
        return rule
    }
}

/// Enough for every series of the communities one process serves; past it the memory starts over.
private let knownRulesLimit = 20_000
private let knownRules = Mutex<[String: RecurrenceRule]>([:])
