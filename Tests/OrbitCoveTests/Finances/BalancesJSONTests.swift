import Foundation
import OrbitCoveInfra
import OrbitCoveModels
import Testing

@testable import CoreService

/// `GET …/balances` is written straight to JSON; its bytes must be the encoder's for the same
/// balances, so clients cannot tell.
@Suite struct BalancesJSONTests {
    @Test func theWrittenBytesAreTheEncodersOverRandomLedgers() throws {
        var generator = SplitMix64(seed: 23)
        for round in 0..<50 {
            let currencies = ["EUR", "JPY", "USD"].prefix(Int(generator.next() % 4))
            let ledgers = currencies.map { code in
                CurrencyBalances(
                    currency: code,
                    members: (0..<Int(generator.next() % 8)).map { _ in
                        MemberBalance(userId: UUID(), net: Int64(bitPattern: generator.next()) / 3)
                    },
                    debts: (0..<Int(generator.next() % 12)).map { _ in
                        Debt(from: UUID(), to: UUID(), amount: Int64(generator.next() % 1_000_000_000_000_000) + 1)
                    })
            }
            let written = LedgerStore.json(Array(ledgers)).bytes
            let encoded = try JSONCoding.encoder.encodeBytes(Array(ledgers))
            #expect(written == encoded, "round \(round)")
        }
        #expect(LedgerStore.json([]).bytes == Array("[]".utf8))
    }
}
