import Foundation
import Testing

@testable import OrbitCoveCalendar

@Suite struct ICSEncodingTests {
    @Test func escapesText() {
        #expect(ICSText.escaped("a\\b;c,d\ne\r\nf\rg") == "a\\\\b\\;c\\,d\\ne\\nf\\ng")
        #expect(ICSText.escaped("tab\there\u{7}bell\u{0}nul\u{7F}") == "tab\therebellnul")
        #expect(ICSText.escaped("ünïcödé 🏟️") == "ünïcödé 🏟️")
    }

    @Test func quotesParameterValuesOnlyWhenNeeded() {
        #expect(ICSText.parameterValue("America/New_York") == "America/New_York")
        #expect(ICSText.parameterValue("Odd:Zone;Name") == "\"Odd:Zone;Name\"")
        #expect(ICSText.parameterValue("Bad\"Quote") == "BadQuote")
    }

    @Test(arguments: [
        String(repeating: "x", count: 300),
        "DESCRIPTION:" + String(repeating: "é", count: 100),
        "SUMMARY:" + String(repeating: "🏃‍♀️", count: 30),
        "SUMMARY:a" + String(repeating: "\u{301}", count: 60),  // one grapheme far longer than a line
        "SUMMARY:" + String(repeating: "日本語", count: 40),
        "SHORT:fits",
    ])
    func foldsAt75OctetsWithoutSplittingUTF8(line: String) throws {
        // Checked as bytes: Swift's String compares graphemes, and a continuation line may start with a space
        // followed by a combining mark, which String sees as one character.
        let folded = Array(ICSContentLines.folded(line).utf8)
        let physical = folded.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
        var unfolded: [UInt8] = []
        for (index, piece) in physical.enumerated() {
            let isLast = index == physical.count - 1
            let content = isLast ? piece : Array(piece.dropLast())  // the CR before each LF
            #expect(isLast || piece.last == UInt8(ascii: "\r"))
            #expect(content.count <= 75)
            #expect(index == 0 || content.first == UInt8(ascii: " "))
            // Splitting happens only between whole UTF-8 sequences: each piece is valid on its own.
            #expect(String(validating: content, as: UTF8.self) != nil)
            unfolded += index == 0 ? content : Array(content.dropFirst())
        }
        #expect(unfolded == Array(line.utf8))
    }

    @Test func formatsOffsets() {
        #expect(ICSDateText.offset(0) == "+0000")
        #expect(ICSDateText.offset(19_800) == "+0530")
        #expect(ICSDateText.offset(-12_600) == "-0330")
        #expect(ICSDateText.offset(45_900) == "+1245")
        #expect(ICSDateText.offset(-17_762) == "-045602")
    }

    @Test func formatsDurations() {
        #expect(ICSDateText.duration(.seconds(3600)) == "PT1H")
        #expect(ICSDateText.duration(.seconds(5400)) == "PT1H30M")
        #expect(ICSDateText.duration(.seconds(45)) == "PT45S")
        #expect(ICSDateText.duration(.zero) == "PT1S")
    }

    @Test func formatsGeoWithoutExponentsOrLocale() {
        #expect(ICSEventWriter.geoValue(.init(latitude: 52.520008, longitude: 13.404954)) == "52.520008;13.404954")
        #expect(ICSEventWriter.geoValue(.init(latitude: -0.000001, longitude: -179.5)) == "-0.000001;-179.500000")
        #expect(ICSEventWriter.geoValue(.init(latitude: 0.00000001, longitude: 0)) == "0.000000;0.000000")
        #expect(ICSEventWriter.geoValue(.init(latitude: 91, longitude: 0)) == nil)
        #expect(ICSEventWriter.geoValue(.init(latitude: .nan, longitude: 0)) == nil)
    }
}
