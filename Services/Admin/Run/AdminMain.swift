import AdminCommands
import ArgumentParser

@main
struct AdminMain: AsyncParsableCommand {
    static let configuration = AdminCommand.configuration
}
