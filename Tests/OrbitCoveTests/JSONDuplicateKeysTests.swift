import OrbitCoveInfra
import Testing

/// A key named twice in one object is found and named by its path; the same key in different
/// objects, or text that is not JSON, is not a duplicate.
@Suite struct JSONDuplicateKeysTests {
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
        #expect(JSONDuplicateKeys.first(in: Array(json.utf8)) == path)
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
        #expect(JSONDuplicateKeys.first(in: Array(json.utf8)) == nil)
    }

    /// Hostile bodies: nesting past what the decoder takes is left to the decoder (the scan
    /// keeps no stack of a million containers), and a long repeated key is named by its first
    /// 100 characters, not echoed whole.
    @Test func hostileBodiesAreLeftToTheDecoderOrNamedShortly() {
        let deep = String(repeating: "[", count: 1_000_000)
        #expect(JSONDuplicateKeys.first(in: Array(deep.utf8)) == nil)
        let deepDuplicate = String(repeating: "[", count: 600) + #"{"a":1,"a":2}"#
        #expect(JSONDuplicateKeys.first(in: Array(deepDuplicate.utf8)) == nil)
        let longKey = String(repeating: "k", count: 100_000)
        let repeated = JSONDuplicateKeys.first(in: Array(#"{"\#(longKey)":1,"\#(longKey)":2}"#.utf8))
        #expect(repeated == String(repeating: "k", count: 100))
        let escapedValues = "[" + Array(repeating: #""\n\"\u00e9""#, count: 1_000).joined(separator: ",") + "]"
        #expect(JSONDuplicateKeys.first(in: Array(escapedValues.utf8)) == nil)
    }
}
