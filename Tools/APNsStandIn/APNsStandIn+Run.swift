import Crypto
import Foundation
import Logging

extension APNsStandIn {
    /// What `orbitcove-apns-standin` is started with.
    package struct RunConfiguration: Sendable {
        package var port: Int
        package var certificateChain: String
        package var privateKey: String
        /// A PEM file with the P-256 public key that provider tokens are signed with.
        package var providerPublicKey: String
        package var teamId: String
        package var keyId: String
        /// Where to append one JSON line per answered request, if anywhere.
        package var log: String?

        package init(
            port: Int, certificateChain: String, privateKey: String, providerPublicKey: String, teamId: String,
            keyId: String, log: String?
        ) {
            self.port = port
            self.certificateChain = certificateChain
            self.privateKey = privateKey
            self.providerPublicKey = providerPublicKey
            self.teamId = teamId
            self.keyId = keyId
            self.log = log
        }
    }

    /// Runs a stand-in until SIGINT or SIGTERM, printing `listening on <port>` once it accepts connections.
    /// It keeps no records in memory: a benchmark's requests go to the log file only.
    package static func run(_ configuration: RunConfiguration) async throws {
        let logger = Logger(label: "orbitcove-apns-standin")
        let providerKey = try P256.Signing.PublicKey(
            pemRepresentation: String(contentsOfFile: configuration.providerPublicKey, encoding: .utf8))
        let log = try configuration.log.map(RequestLogFile.init(path:))
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let log { group.addTask { try await log.run() } }
            let standIn = try await start(
                port: configuration.port, certificateChain: configuration.certificateChain,
                privateKey: configuration.privateKey, providerKey: providerKey, teamId: configuration.teamId,
                keyId: configuration.keyId, logger: logger, keepsRecords: false, onAnswer: log.map { $0.append })
            // Unbuffered, so a script waiting for this line sees it at once.
            FileHandle.standardOutput.write(Data("listening on \(standIn.port)\n".utf8))
            await TerminationSignal.wait()
            try await standIn.shutdown()
            log?.finish()
            try await group.waitForAll()
        }
    }
}
