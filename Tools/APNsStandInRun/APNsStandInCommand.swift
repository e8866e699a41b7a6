import APNsStandIn
import ArgumentParser

@main
struct APNsStandInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orbitcove-apns-standin",
        abstract: "A local stand-in for Apple's push notification service (HTTP/2 over TLS, provider tokens).")

    @Option(help: "The port to listen on, on 127.0.0.1 (0: any free port).")
    var port = 0
    @Option(help: "PEM file with the server's certificate chain.")
    var certificateChain: String
    @Option(help: "PEM file with the server's private key.")
    var privateKey: String
    @Option(help: "PEM file with the P-256 public key provider tokens are signed with.")
    var providerPublicKey: String
    @Option(help: "The team id provider tokens must carry as iss.")
    var teamId: String
    @Option(help: "The key id provider tokens must carry as kid.")
    var keyId: String
    @Option(help: "A file to append one JSON line to per answered request.")
    var log: String?

    func run() async throws {
        try await APNsStandIn.run(
            .init(
                port: port, certificateChain: certificateChain, privateKey: privateKey,
                providerPublicKey: providerPublicKey, teamId: teamId, keyId: keyId, log: log))
    }
}
