import OrbitCoveInfra

/// The media service's errors, each with its stable code.
enum MediaErrors {
    static let notFound = APIError.notFound("MEDIA_NOT_FOUND", "No such media")
    static let uploadUsed = APIError(
        .conflict, code: "UPLOAD_ALREADY_USED", message: "This upload was already made; ask for a new upload URL")
    static let uploadInProgress = APIError(
        .conflict, code: "UPLOAD_IN_PROGRESS", message: "Another upload to this URL is under way")
    static let uploadExpired = APIError(
        .forbidden, code: "UPLOAD_URL_INVALID", message: "The upload URL is expired or its signature does not match")
    static let downloadInvalid = APIError(
        .forbidden, code: "DOWNLOAD_URL_INVALID", message: "The URL is expired or its signature does not match")
    static let notUploaded = APIError(
        .conflict, code: "UPLOAD_INCOMPLETE",
        message: "The upload has not arrived with the declared size and checksum")
    static func failed(_ reason: String) -> APIError {
        APIError(
            .unprocessableContent, code: "MEDIA_FAILED", message: "The file could not be processed: \(reason)",
            details: ["reason": .string(reason)])
    }
    static let noSuchVariant = APIError(
        .notFound, code: "VARIANT_NOT_FOUND", message: "This file has no such variant or format")
}
