import Foundation
import OrbitCoveInfra
import OrbitCoveModels

/// `JSONCoding.encoder` beside Foundation's `JSONEncoder` set up as the project says they are
/// equivalent (sorted keys, unescaped slashes, our timestamps), on two realistic responses: a
/// members page at the largest page size and a three-month calendar window through `Encodable`.
/// Rounds alternate the two encoders; each side of a round encodes for `--seconds` of CPU time. Prints one
/// line per round and payload, then the medians. `scripts/bench/json.sh` runs it in release mode.
@main
struct JSONBenchmark {
    static func main() throws {
        let arguments = CommandLine.arguments
        func option(_ name: String, _ fallback: Double) -> Double {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
            return Double(arguments[index + 1]) ?? fallback
        }
        let seconds = option("--seconds", 1)
        let rounds = Int(option("--rounds", 3))
        var random = BenchRandom(seed: 19)
        let payloads: [(name: String, encode: Encodes)] = [
            ("members-page-100", Encodes(Payloads.membersPage(&random))),
            ("calendar-window-120", Encodes(Payloads.calendarWindow(&random))),
        ]
        for payload in payloads { try payload.encode.checkSameBytes(payload.name) }
        var ratios: [String: [Double]] = [:]
        for round in 1...rounds {
            for payload in payloads {
                let ours = try rate(seconds: seconds, payload.encode.ours)
                let reference = try rate(seconds: seconds, payload.encode.reference)
                ratios[payload.name, default: []].append(ours.perSecond / reference.perSecond)
                print(
                    "round=\(round) payload=\(payload.name) bytes=\(ours.bytes)"
                        + " orbit_values_per_s=\(Int(ours.perSecond)) jsonencoder_values_per_s=\(Int(reference.perSecond))"
                        + " ratio=\(String(format: "%.2f", ours.perSecond / reference.perSecond))")
            }
        }
        for payload in payloads {
            let sorted = ratios[payload.name, default: []].sorted()
            print("median payload=\(payload.name) ratio=\(String(format: "%.2f", sorted[sorted.count / 2]))")
        }
    }

    /// Encodes per second of this thread's CPU time over about `seconds` of it, in batches so the
    /// clock is read rarely. CPU time, not wall time: the machine is shared, and time spent
    /// waiting for a core is neither encoder's.
    static func rate(seconds: Double, _ encode: () throws -> Int) throws -> (perSecond: Double, bytes: Int) {
        var bytes = try encode()  // warm up
        let start = threadCPUSeconds()
        var count = 0
        var elapsed = 0.0
        repeat {
            for _ in 0..<10 { bytes = try encode() }
            count += 10
            elapsed = threadCPUSeconds() - start
        } while elapsed < seconds
        return (Double(count) / elapsed, bytes)
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// One payload through each encoder; each returns the size written, so nothing is optimised away.
struct Encodes {
    let ours: () throws -> Int
    let reference: () throws -> Int
    let oursBytes: () throws -> [UInt8]
    let referenceBytes: () throws -> [UInt8]

    static let jsonEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(JSONCoding.formatTimestamp(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    init(_ value: some Encodable) {
        oursBytes = { try JSONCoding.encoder.encodeBytes(value) }
        referenceBytes = { Array(try Self.jsonEncoder.encode(value)) }
        ours = { try JSONCoding.encoder.encodeBytes(value).count }
        reference = { try Self.jsonEncoder.encode(value).count }
    }

    /// The benchmark means nothing if the two write different JSON (UUIDs aside).
    func checkSameBytes(_ name: String) throws {
        guard try oursBytes() == Self.lowerCasingUUIDs(try referenceBytes()) else {
            fatalError("\(name): the encoders wrote different JSON")
        }
    }

    /// Every quoted upper-case UUID (`"E621E1F8-…"`) in lower case, as ours writes them.
    static func lowerCasingUUIDs(_ json: [UInt8]) -> [UInt8] {
        var json = json
        let dashes: Set = [9, 14, 19, 24]
        var index = 0
        while index + 37 < json.count {
            let isUUID =
                json[index] == UInt8(ascii: "\"") && json[index + 37] == UInt8(ascii: "\"")
                && (1...36).allSatisfy { offset in
                    let byte = json[index + offset]
                    return dashes.contains(offset)
                        ? byte == UInt8(ascii: "-")
                        : (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
                }
            if isUUID {
                for offset in 1...36 where json[index + offset] >= UInt8(ascii: "A") { json[index + offset] += 32 }
                index += 38
            } else {
                index += 1
            }
        }
        return json
    }
}

enum Payloads {
    static let names = [
        "Ada Lovelace", "Grace Hopper", "Søren Kierkegaard", "Zoë Ångström", "李小龙", "Marie Curie",
        "José Álvarez", "Ngozi Okonjo", "O'Brien, Siobhán", "Anna \"Nan\" Smith",
    ]

    /// `GET /communities/{id}/members?limit=100`: the largest page.
    static func membersPage(_ random: inout BenchRandom) -> ListEnvelope<CommunityMember> {
        let members = (0..<100).map { index in
            CommunityMember(
                userId: random.uuid(), displayName: names[index % names.count] + " \(index)",
                avatarUrl: index % 3 == 0
                    ? nil : "https://media.orbitcove.app/avatars/\(random.uuid().lowercasedString).jpg",
                nickname: index % 4 == 0 ? "Coach \(index)" : nil, role: index < 3 ? .admin : .member,
                isCreator: index == 0, joinedAt: random.date())
        }
        return ListEnvelope(
            data: members, meta: ResponseMeta(requestId: "3f1c2a7e-bench"),
            pagination: CursorPagination(nextCursor: "eyJjcmVhdGVkQXQiOiIyMDI2In0", hasMore: true, limit: 100))
    }

    /// `GET /communities/{id}/events?from&to` over three months: three weekly series and some
    /// single events, each with the caller's answer, a dependant's, and the counts.
    static func calendarWindow(_ random: inout BenchRandom) -> DataEnvelope<[CalendarEvent]> {
        let community = random.uuid()
        let series = (0..<3).map { _ in random.uuid() }
        let events = (0..<120).map { index in
            let isSeries = index % 5 != 4
            let start = Date(timeIntervalSince1970: 1_790_000_000 + Double(index) * 18_000)
            var event = CalendarEvent(
                id: isSeries ? series[index % 3] : random.uuid(), communityId: community, createdBy: random.uuid(),
                title: isSeries ? "U12 practice — pitch 2" : "Away game vs. Lions",
                description:
                    "Bring water, shin pads and a light & dark shirt.\nParents: car-pool list in the app.",
                startsAt: start, endsAt: start + 5_400, allDay: false, startDate: nil, endDate: nil,
                timeZone: "Europe/London", locationName: "Riverside Park / Pitch 2", locationLat: 51.5007,
                locationLng: -0.1246, locationAddress: "Riverside Rd, London SE1",
                category: isSeries ? .practice : .game,
                attachments: [], rsvpDeadline: start - 86_400, capacity: index % 2 == 0 ? 18 : nil,
                recurrenceRule: isSeries ? "FREQ=WEEKLY;BYDAY=TU,TH" : nil, exceptionDates: [],
                recurrenceParentId: nil, recurrenceId: isSeries ? start : nil, cancelled: index % 17 == 0,
                sequence: 2, createdAt: random.date(), updatedAt: random.date())
            event.rsvp = EventRSVP(
                familyMemberId: nil, status: .yes, plusOnes: 1, note: nil, waitlisted: false, respondedAt: random.date()
            )
            event.dependantRsvps = [
                EventRSVP(
                    familyMemberId: random.uuid(), status: .maybe, plusOnes: 0, note: "might be late",
                    waitlisted: false, respondedAt: random.date())
            ]
            event.attendance = AttendanceCounts(
                going: 12, seats: 14, maybe: 3, declined: 2, waitlisted: 0, capacity: event.capacity)
            return event
        }
        return DataEnvelope(data: events, meta: ResponseMeta(requestId: "3f1c2a7e-bench"))
    }
}

/// SplitMix64, so every run encodes the same payloads.
struct BenchRandom: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func uuid() -> UUID {
        var bytes = (next(), next())
        return withUnsafeBytes(of: &bytes) { UUID(uuid: $0.load(as: uuid_t.self)) }
    }

    mutating func date() -> Date {
        Date(timeIntervalSince1970: 1_700_000_000 + Double(next() % 100_000_000_000) / 1000)
    }
}
