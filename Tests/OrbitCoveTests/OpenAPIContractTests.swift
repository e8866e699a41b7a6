import AuthService
import CoreService
import Crypto
import Foundation
import Hummingbird
import JWTKit
import MediaService
import NotificationsService
import OrbitCoveInfra
import OrbitCoveModels
import RemindersService
import Testing
import Yams

/// The public API document and the routes the services register must name the same
/// operations: a route the document lacks, or an operation no service serves, fails here.
@Suite struct OpenAPIContractTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let documentPath = repository.appendingPathComponent("deploy/openapi/openapi.yaml")
    static let gatewayRoutesPath = repository.appendingPathComponent("deploy/nginx/routes.conf")
    static let methods = ["get", "put", "post", "delete", "patch", "head", "options"]

    struct Operation: Hashable, CustomStringConvertible {
        let method: String
        let path: String
        var description: String { "\(method) \(path)" }
    }

    /// `(operation, tag)` for every operation in the document.
    func documentedOperations() throws -> [Operation: String] {
        let text = try String(contentsOf: Self.documentPath, encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        var operations: [Operation: String] = [:]
        for (path, item) in paths {
            for (method, operation) in (item as? [String: Any]) ?? [:] where Self.methods.contains(method) {
                let tags = (operation as? [String: Any])?["tags"] as? [String] ?? []
                operations[Operation(method: method.uppercased(), path: path)] = tags.first ?? ""
            }
        }
        return operations
    }

    /// The public routes each service registers (everything behind the gateway).
    func servedOperations() async throws -> [Operation: String] {
        let extra = [
            "ORBITCOVE_AUTH_DEV_LOGIN": "true", "ORBITCOVE_AUTH_SIGNING_KEY": ES256PrivateKey().pemRepresentation,
        ]
        let routers: [(String, Router<AppRequestContext>)] = [
            ("auth", try await AuthApplication.parts(runtime: runtime("auth"), environment: Environment(extra)).router),
            ("core", try CoreApplication.parts(runtime: runtime("core")).router),
            ("notifications", try NotificationsApplication.parts(runtime: runtime("notifications")).router),
            ("media", try MediaApplication.parts(runtime: runtime("media")).router),
            ("reminders", try RemindersApplication.parts(runtime: runtime("reminders")).router),
        ]
        var operations: [Operation: String] = [:]
        for (service, router) in routers {
            for route in router.routes {
                let path = Self.openAPIPath(route.path.description)
                guard path.hasPrefix("/api/") || path.hasPrefix("/.well-known/") else { continue }
                operations[Operation(method: route.method.rawValue, path: path)] = service
            }
        }
        return operations
    }

    func runtime(_ name: String) throws -> ServiceRuntime { try TestEnvironment.runtime(name: "orbitcove-\(name)") }

    /// Hummingbird writes parameters as `:name`, OpenAPI as `{name}`.
    static func openAPIPath(_ path: String) -> String {
        "/"
            + path.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }
            .joined(separator: "/")
    }

    @Test func everyServedRouteIsDocumentedAndEveryDocumentedRouteIsServed() async throws {
        let documented = try documentedOperations()
        let served = try await servedOperations()
        let gateway = Set(documented.filter { $0.value == "gateway" }.keys)
        let undocumented = Set(served.keys).subtracting(documented.keys)
        let unserved = Set(documented.keys).subtracting(served.keys).subtracting(gateway)
        #expect(
            undocumented.isEmpty,
            "served but not in openapi.yaml: \(undocumented.sorted { $0.description < $1.description })")
        #expect(
            unserved.isEmpty,
            "in openapi.yaml but served by nobody: \(unserved.sorted { $0.description < $1.description })")
        for (operation, service) in served {
            #expect(
                documented[operation] == service,
                "\(operation) is tagged \(documented[operation] ?? "-"), served by \(service)")
        }
    }

    @Test func gatewayOperationsAreServedByTheGatewayConfig() throws {
        let routes = try String(contentsOf: Self.gatewayRoutesPath, encoding: .utf8)
        for operation in try documentedOperations().filter({ $0.value == "gateway" }).keys {
            #expect(routes.contains("location = \(operation.path)"), "\(operation) missing from routes.conf")
        }
    }

    /// The enums clients switch on: every value the service can send is documented, and no more.
    @Test func documentedEnumsMatchTheModels() throws {
        let text = try String(contentsOf: Self.documentPath, encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        func values(_ schema: String, _ property: String) -> Set<String> {
            let properties = (schemas[schema] as? [String: Any])?["properties"] as? [String: Any]
            let field = properties?[property] as? [String: Any]
            // A response's enum is open (`anyOf`: the known values, then any string): read the known ones.
            let known = (field?["anyOf"] as? [[String: Any]])?.first ?? field
            return Set((known?["enum"] as? [String]) ?? [])
        }
        #expect(values("Notification", "type") == Set(NotificationType.allCases.map(\.rawValue)))
        #expect(values("CommunityMember", "role") == Set(MemberRole.allCases.map(\.rawValue)))
        for schema in ["CalendarEvent", "CreateEventRequest"] {
            #expect(values(schema, "category") == Set(EventCategory.allCases.map(\.rawValue)), "\(schema)")
        }
        for schema in ["EventRSVP", "AttendanceEntry", "RSVPRequest"] {
            #expect(values(schema, "status") == Set(RSVPStatus.allCases.map(\.rawValue)), "\(schema)")
        }
        for schema in ["Post", "CreatePostRequest"] {
            #expect(values(schema, "type") == Set(PostType.allCases.map(\.rawValue)), "\(schema)")
        }
        #expect(values("ReactionRequest", "type") == Set(ReactionType.allCases.map(\.rawValue)))
        for schema in ["LedgerTransaction", "TransferReason"] {
            #expect(values(schema, "type") == Set(TransactionType.allCases.map(\.rawValue)), "\(schema)")
        }
        for schema in ["LedgerTransaction", "CreateExpenseRequest", "UpdateTransactionRequest"] {
            #expect(values(schema, "category") == Set(ExpenseCategory.allCases.map(\.rawValue)), "\(schema)")
        }
        #expect(values("SplitRequest", "method") == Set(SplitMethod.allCases.map(\.rawValue)))
        for schema in ["CreateSettlementRequest", "UpdateTransactionRequest", "DuesPayment", "DuesPaymentRequest"] {
            #expect(values(schema, "method") == Set(PaymentMethod.allCases.map(\.rawValue)), "\(schema)")
        }
        for schema in ["Dues", "CreateDuesRequest"] {
            #expect(values(schema, "recurrence") == Set(DuesRecurrence.allCases.map(\.rawValue)), "\(schema)")
        }
        #expect(values("DuesMemberStatus", "status") == Set(DuesStatus.allCases.map(\.rawValue)))
        for schema in ["Media", "CreateMediaUploadRequest"] {
            #expect(values(schema, "purpose") == Set(MediaPurpose.allCases.map(\.rawValue)), "\(schema)")
        }
        #expect(values("Media", "status") == Set(MediaStatus.allCases.map(\.rawValue)))
        #expect(values("CareOccurrence", "status") == Set(CareOccurrenceStatus.allCases.map(\.rawValue)))
        // A request marks an occurrence: it never asks for one to be pending again.
        #expect(
            values("UpdateCareOccurrenceRequest", "status")
                == Set(CareOccurrenceStatus.allCases.filter { $0 != .pending }.map(\.rawValue)))
        let languages = (schemas["CommunitySettingsRequest"] as? [String: Any]).flatMap {
            (($0["properties"] as? [String: Any])?["searchLanguage"] as? [String: Any])?["enum"] as? [String]
        }
        #expect(languages == CommunitySettings.searchLanguages)
        let parameters = (document["components"] as? [String: Any])?["parameters"] as? [String: Any]
        func parameterValues(_ name: String) -> Set<String> {
            Set((((parameters?[name] as? [String: Any])?["schema"] as? [String: Any])?["enum"] as? [String]) ?? [])
        }
        #expect(parameterValues("EditScope") == Set(EditScope.allCases.map(\.rawValue)))
        #expect(parameterValues("TransactionCategoryFilter") == Set(ExpenseCategory.allCases.map(\.rawValue)))
        #expect(parameterValues("TransactionTypeFilter") == Set(TransactionType.allCases.map(\.rawValue)))
    }
}
