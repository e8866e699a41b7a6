import Foundation

// Reads a JSON array of DumpCase from stdin and prints a JSON array of DumpResult; `--bench` times expansion.
if CommandLine.arguments.contains("--bench") {
    try Benchmark.run()
} else {
    let cases = try JSONDecoder().decode([DumpCase].self, from: FileHandle.standardInput.readDataToEndOfFile())
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    FileHandle.standardOutput.write(try encoder.encode(cases.map { $0.run() }))
}
