import Foundation

/// DATE, DATE-TIME, UTC-OFFSET and DURATION values (RFC 5545 3.3.4, 3.3.5, 3.3.14, 3.3.6).
enum ICSDateText {
    static func utc(_ date: Date) -> String {
        CivilDateTime.clamped(date, in: .gmt).description + "Z"
    }

    /// A wall-clock reading for use with a TZID parameter.
    static func local(_ date: Date, in timeZone: TimeZone) -> String {
        CivilDateTime.clamped(date, in: timeZone).description
    }

    static func day(_ date: Date, in timeZone: TimeZone) -> String {
        CivilDateTime.clamped(date, in: timeZone).date.description
    }

    /// `+HHMM`, or `+HHMMSS` for the odd historical offset; zero is `+0000` (`-0000` is not allowed).
    static func offset(_ seconds: Int) -> String {
        let magnitude = abs(seconds)
        let text = pad(magnitude / 3600) + pad(magnitude / 60 % 60) + (magnitude % 60 == 0 ? "" : pad(magnitude % 60))
        return (seconds < 0 ? "-" : "+") + text
    }

    /// `PT1H`, `PT1H30M`, ... rounded to whole seconds, at least one second.
    static func duration(_ duration: Duration) -> String {
        let total = max(1, duration.components.seconds)
        var text = "PT"
        if total >= 3600 { text += "\(total / 3600)H" }
        if total % 3600 >= 60 { text += "\(total % 3600 / 60)M" }
        if total % 60 != 0 { text += "\(total % 60)S" }
        return text
    }

    private static func pad(_ value: Int) -> String {
        value < 10 ? "0\(value)" : String(value)
    }
}
