import Foundation
import Hummingbird
import OrbitCoveInfra
import OrbitCoveModels

/// A post's body, read strictly: every problem is named by its field (`pollData.options`),
/// all at once, and nothing is stored while any remains.
struct PostInput: Sendable {
    var type: PostType = .text
    var content: Change<String> = .keep
    var mediaUrls: [String]?
    var mediaIds: [UUID]?
    var mentions: [UUID]?
    var linkedEventId: Change<UUID> = .keep
    var poll: PostRows.PollData?

    static let createFields: Set<String> = [
        "type", "content", "mediaUrls", "mediaIds", "mentions", "linkedEventId", "pollData",
    ]
    static let editFields: Set<String> = ["content", "mediaUrls", "mediaIds", "mentions", "linkedEventId"]

    static func read(_ request: Request, context: some RequestContext, creating: Bool) async throws -> PostInput {
        var reader = try await FieldReader.read(
            request, context: context, allowed: creating ? createFields : editFields, nullClears: !creating)
        var input = PostInput()
        if creating { input.type = reader.choice("type", as: PostType.self).value ?? .text }
        input.content = reader.text("content", maxLength: FeedLimits.postLength)
        input.mediaUrls = reader.urls("mediaUrls", maxCount: FeedLimits.mediaUrls)
        input.mediaIds = reader.ids("mediaIds", maxCount: FeedLimits.mediaUrls)
        input.mentions = reader.ids("mentions", maxCount: FeedLimits.mentions)
        input.linkedEventId = reader.id("linkedEventId")
        if creating { input.poll = reader.poll("pollData", now: Date()) }
        if creating {
            input.checkShape(
                &reader.problems, content: input.content.value,
                pictures: (input.mediaUrls ?? []).count + (input.mediaIds ?? []).count)
        }
        try reader.check()
        return input
    }

    /// What each type needs: a text or an announcement its text, a photo a picture, a poll its
    /// question (and no other type a poll), an event share its event.
    func checkShape(_ problems: inout [String: String], content: String?, pictures: Int) {
        switch type {
        case .text, .announcement:
            if content == nil, problems["content"] == nil {
                problems["content"] = "is required for a \(type.rawValue) post"
            }
        case .photo:
            if pictures == 0, problems["mediaUrls"] == nil, problems["mediaIds"] == nil {
                problems["mediaUrls"] = "needs at least one picture, here or in mediaIds"
            }
        case .poll:
            if poll == nil, problems["pollData"] == nil, problems["pollData.question"] == nil,
                problems["pollData.options"] == nil, problems["pollData.closesAt"] == nil,
                problems["pollData.allowMultiple"] == nil
            {
                problems["pollData"] = "is required for a poll"
            }
        case .eventShare:
            if linkedEventId.value == nil, problems["linkedEventId"] == nil {
                problems["linkedEventId"] = "is required to share an event"
            }
        }
        if type != .poll, poll != nil { problems["pollData"] = "is only for a poll" }
    }
}

extension FieldReader {
    /// A list of at most `maxCount` http(s) URLs (pictures, until media ids land).
    mutating func urls(_ key: String, maxCount: Int) -> [String]? {
        guard let value = fields[key] else { return nil }
        guard case .array(let items) = value, items.count <= maxCount else {
            problems[key] = "must be a list of at most \(maxCount) URLs"
            return nil
        }
        var urls: [String] = []
        for item in items {
            guard case .string(let raw) = item, raw.databaseLength <= 500,
                !raw.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }),
                let url = URL(string: raw),
                url.host != nil, ["http", "https"].contains(url.scheme?.lowercased() ?? "")
            else {
                problems[key] = "must hold http(s) URLs of at most 500 characters"
                return nil
            }
            urls.append(raw)
        }
        return urls
    }

    /// A list of at most `maxCount` distinct ids.
    mutating func ids(_ key: String, maxCount: Int) -> [UUID]? {
        guard let value = fields[key] else { return nil }
        guard case .array(let items) = value, items.count <= maxCount else {
            problems[key] = "must be a list of at most \(maxCount) user ids"
            return nil
        }
        var ids: [UUID] = []
        for item in items {
            guard case .string(let raw) = item, let id = UUID(uuidString: raw) else {
                problems[key] = "must hold user ids"
                return nil
            }
            if !ids.contains(id) { ids.append(id) }
        }
        return ids
    }

    /// A poll: a question, 2 to 20 distinct options, whether several may be chosen, and when it
    /// closes (in the future), each problem named `pollData.<field>`.
    mutating func poll(_ key: String, now: Date) -> PostRows.PollData? {
        guard let value = fields[key] else { return nil }
        guard case .object(let object) = value else {
            problems[key] = "must be an object with question, options, allowMultiple and closesAt"
            return nil
        }
        var inner = FieldReader(
            object, allowed: ["question", "options", "allowMultiple", "closesAt"], nullClears: false)
        let question = inner.line("question", maxLength: FeedLimits.pollQuestionLength, required: true).value
        var options: [String]?
        switch inner.fields["options"] {
        case .array(let items) where FeedLimits.pollOptions.contains(items.count):
            var texts: [String] = []
            for item in items {
                guard case .string(let raw) = item else { break }
                let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
                guard !text.isEmpty, text.databaseLength <= FeedLimits.pollOptionLength,
                    !text.unicodeScalars.contains("\u{0}"), !texts.contains(text)
                else { break }
                texts.append(text)
            }
            if texts.count == items.count, texts.allSatisfy(\.isOneLine) {
                options = texts
            } else if texts.count == items.count {
                inner.problems["options"] = FieldReader.notOneLine
            } else {
                inner.problems["options"] =
                    "must be distinct, non-empty texts of at most \(FeedLimits.pollOptionLength) characters"
            }
        default:
            inner.problems["options"] =
                "must be a list of \(FeedLimits.pollOptions.lowerBound) to \(FeedLimits.pollOptions.upperBound) choices"
        }
        let allowMultiple = inner.boolean("allowMultiple") ?? false
        let closesAt = inner.instant("closesAt").value
        if let closesAt, closesAt <= now, inner.problems["closesAt"] == nil {
            inner.problems["closesAt"] = "must be in the future"
        }
        for (field, problem) in inner.problems { problems["\(key).\(field)"] = problem }
        guard inner.problems.isEmpty, let question, let options else { return nil }
        return PostRows.PollData(question: question, options: options, allowMultiple: allowMultiple, closesAt: closesAt)
    }
}
