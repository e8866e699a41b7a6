import Foundation

// Reads a FeedSpec as JSON on stdin; prints {"ics": ..., "instances": [...]} for Compare/ics_compare.py.
let spec = try JSONDecoder().decode(FeedSpec.self, from: FileHandle.standardInput.readDataToEndOfFile())
let encoder = JSONEncoder()
encoder.outputFormatting = [.sortedKeys]
FileHandle.standardOutput.write(try encoder.encode(try spec.build()))
