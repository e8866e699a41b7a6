import Foundation
import OrbitCoveInfra
import Testing

/// A key named twice in one object is found and named by its path; the same key in different
/// objects, or text that is not JSON, is not a duplicate. A trailing comma is found wherever it
/// is; a comma in a string is text.
@Suite struct StrictJSONTests {
    @Test(arguments: [
        (#"{"startsAt":"2027-07-01T10:00:00Z","startsAt":"nope"}"#, "startsAt"),
        (#"{"a":1,"b":{"c":2,"c":3}}"#, "b.c"),
        (#"{"items":[{"x":1},{"y":1,"y":2}]}"#, "items[1].y"),
        (#"[{"k":1},[],{"k":1,"k":2}]"#, "[2].k"),
        // The same key spelled with an escape is the same key.
        (#"{"name":"a","n\u0061me":"b"}"#, "name"),
        (#"{"quote\"d":1, "quote\"d" :2}"#, "quote\"d"),
        (#"{"\ud83d\ude00":1,"😀":2}"#, "😀"),
        (#"{"tab\there":1,"tab\u0009here":2}"#, "tab\there"),
        (#" { "a" : { "b" : [ 1 , { "a" : 1 } ] } , "a" : 2 } "#, "a"),
    ])
    func aRepeatedKeyIsNamed(json: String, path: String) {
        #expect(StrictJSON.problem(in: Array(json.utf8)) == .repeatedKey(path))
    }

    @Test(arguments: [
        #"{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}"#,
        #"{"text":"\"a\":1,\"a\":2","a":3}"#,
        #"["a","a",{"b":"b"}]"#,
        #"{}"#,
        #"{"a":{nope"#,
        #""#,
    ])
    func distinctKeysAndBrokenTextPass(json: String) {
        #expect(StrictJSON.problem(in: Array(json.utf8)) == nil)
    }

    @Test(arguments: [
        #"{"a":1,}"#, #"[1,2,]"#, #"{"a":[1,2 , ] }"#, "{\"a\":1,\n\t}", #"{"a":{"b":1,},"c":2}"#,
        #"[[],[{},],3]"#, #"{"a":1,"b":"x,}",}"#,
    ])
    func aTrailingCommaIsFound(json: String) {
        #expect(StrictJSON.problem(in: Array(json.utf8)) == .trailingComma)
    }

    @Test(arguments: [#"{"a":"1,}"}"#, #"["],","]"]"#, #"{"a\",}":1}"#, #"[1,2]"#, #"1,]"#])
    func commasInStringsOrOutsideAnyContainerAreNotTrailing(json: String) {
        #expect(StrictJSON.problem(in: Array(json.utf8)) == nil)
    }

    @Test(arguments: [
        (#"{"sizeBytes":1e400}"#, "sizeBytes"), (#"{"a":[1,-1E+400]}"#, "a[1]"), (#"{"a":{"b":1e-400}}"#, "a.b"),
        (#"{"a":"# + String(repeating: "9", count: 400) + "}", "a"), ("-1e999", ""), (#"[0.0000e-999,1e-400]"#, "[1]"),
    ])
    func aNumberNoDoubleHoldsIsNamed(json: String, path: String) {
        #expect(StrictJSON.problem(in: Array(json.utf8)) == .numberOutOfRange(path))
    }

    @Test(arguments: [
        #"{"a":05}"#, #"[-012]"#, #"{"a":-}"#, #"{"a":1.}"#, #"[1e]"#, #"{"a":-Infinity}"#, #"[1e+]"#, #"[-01]"#,
        #"{"a":+1}"#, #"{"a":.5}"#, "{\"a\":\"x\u{1}y\"}",
        "{\"k\u{7}\":1}", "[\"\t\"]",
    ])
    func aNumberOutsideRFC8259OrARawControlCharacterIsNotJSON(json: String) {
        #expect(StrictJSON.problem(in: Array(json.utf8)) == .notJSON)
    }

    @Test(arguments: [
        #"{"a":0}"#, #"{"a":-0}"#, #"{"a":0.5}"#, #"{"a":0e10}"#, #"{"a":1.7976931348623157e308}"#,
        #"{"a":5e-324}"#, #"[1E+2, 0.0e-0, -0.0, 0e05]"#, #"{"a":"05 1e400 \u0001"}"#, #"[10, -10, 0.01]"#,
    ])
    func numbersADoubleHoldsPass(json: String) {
        #expect(StrictJSON.problem(in: Array(json.utf8)) == nil)
    }

    /// Hostile bodies: nesting past what the decoder takes is left to the decoder (the scan
    /// keeps no stack of a million containers), and a long repeated key is named by its first
    /// 100 characters, not echoed whole.
    @Test func hostileBodiesAreLeftToTheDecoderOrNamedShortly() {
        let deep = String(repeating: "[", count: 1_000_000)
        #expect(StrictJSON.problem(in: Array(deep.utf8)) == nil)
        let deepDuplicate = String(repeating: "[", count: 600) + #"{"a":1,"a":2}"#
        #expect(StrictJSON.problem(in: Array(deepDuplicate.utf8)) == nil)
        let longKey = String(repeating: "k", count: 100_000)
        let repeated = StrictJSON.problem(in: Array(#"{"\#(longKey)":1,"\#(longKey)":2}"#.utf8))
        #expect(repeated == .repeatedKey(String(repeating: "k", count: 100)))
        let escapedValues = "[" + Array(repeating: #""\n\"\u00e9""#, count: 1_000).joined(separator: ",") + "]"
        #expect(StrictJSON.problem(in: Array(escapedValues.utf8)) == nil)
    }

    /// Over random JSON texts (nesting, keys once per object, strings full of commas, brackets,
    /// quotes and escapes, whitespace anywhere JSON allows it), which Foundation's parser reads:
    /// the scan finds nothing, and a comma put before any closing bracket of a non-empty
    /// container is found.
    @Test(arguments: 0..<40) func randomJSONPassesAndACommaBeforeAnyCloserIsFound(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed) &+ 7)
        var closers: [Int] = []
        var text = ""
        Self.value(depth: 0, into: &text, closers: &closers, &random)
        #expect(
            (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) != nil, "\(text)")
        #expect(StrictJSON.problem(in: Array(text.utf8)) == nil, "\(text)")
        for closer in closers {
            var broken = Array(text.utf8)
            broken.insert(contentsOf: Array(Self.space(&random).utf8) + [UInt8(ascii: ",")], at: closer)
            #expect(
                StrictJSON.problem(in: broken) == .trailingComma, "\(String(decoding: broken, as: UTF8.self))")
        }
    }

    /// Random JSON into `text`; `closers` gets the byte offset of each non-empty container's
    /// closing bracket.
    private static func value(
        depth: Int, into text: inout String, closers: inout [Int], _ random: inout SplitMix64
    ) {
        let kind = depth >= 4 ? random.next() % 4 : random.next() % 6
        switch kind {
        case 0: text += ["true", "false", "null", "0", "-12.5e3", "7"][Int(random.next() % 6)]
        case 1, 2, 3: text += Self.string(&random)
        case 4:
            text += "["
            let count = Int(random.next() % 4)
            for index in 0..<count {
                text += Self.space(&random) + (index > 0 ? "," + Self.space(&random) : "")
                Self.value(depth: depth + 1, into: &text, closers: &closers, &random)
            }
            text += Self.space(&random)
            if count > 0 { closers.append(text.utf8.count) }
            text += "]"
        default:
            text += "{"
            let count = Int(random.next() % 4)
            for index in 0..<count {
                text += Self.space(&random) + (index > 0 ? "," + Self.space(&random) : "")
                text +=
                    "\"k\(index)\(Self.string(&random).dropFirst())" + Self.space(&random) + ":" + Self.space(&random)
                Self.value(depth: depth + 1, into: &text, closers: &closers, &random)
            }
            text += Self.space(&random)
            if count > 0 { closers.append(text.utf8.count) }
            text += "}"
        }
    }

    /// A string literal of what a scan could mistake for structure.
    private static func string(_ random: inout SplitMix64) -> String {
        let pieces = [",", "]", "}", "[", "{", ":", "\\\"", "\\\\", "\\n", "\\u00e9", "é", "a", " ", ",]", ",}"]
        return "\""
            + (0..<Int(random.next() % 5)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
            + "\""
    }

    /// Whitespace JSON allows between tokens, often none.
    private static func space(_ random: inout SplitMix64) -> String {
        ["", "", " ", "\n", "\t ", "\r\n"][Int(random.next() % 6)]
    }
}
