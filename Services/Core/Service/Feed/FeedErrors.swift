import OrbitCoveInfra
import OrbitCoveModels

/// The feed's own errors, each with its stable code.
enum FeedErrors {
    static let postNotFound = APIError.notFound("POST_NOT_FOUND", "No such post in this community")
    static let commentNotFound = APIError.notFound("COMMENT_NOT_FOUND", "No such comment on this post")
    static let pollClosed = APIError(.conflict, code: "POLL_CLOSED", message: "This poll has closed")
    static let notAPoll = APIError(.conflict, code: "NOT_A_POLL", message: "This post is not a poll")
    static let pinLimit = APIError(
        .conflict, code: "PIN_LIMIT_REACHED",
        message: "A community pins at most \(FeedLimits.pins) posts at once; unpin one first")
    static let replyToReply = APIError.validation(["parentId": "is a reply; reply to the comment it answers"])
}
