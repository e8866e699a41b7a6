import Foundation

/// A published calendar feed (METHOD:PUBLISH) that Apple Calendar, Google Calendar and Outlook subscribe to.
package struct ICSCalendar: Sendable {
    package var name: String
    package var productID: String
    /// How often subscribers should poll (REFRESH-INTERVAL and X-PUBLISHED-TTL).
    package var refreshInterval: Duration
    /// Masters, then their overrides, in the order given; clients accept either order, some prefer this one.
    package var events: [ICSEvent]

    package init(
        name: String, productID: String = "-//OrbitCove//Calendar Feed//EN", refreshInterval: Duration = .seconds(3600),
        events: [ICSEvent] = []
    ) {
        self.name = name
        self.productID = productID
        self.refreshInterval = refreshInterval
        self.events = events
    }

    /// The whole feed as RFC 5545 text: CRLF line endings, lines folded at 75 octets.
    package func serialized() -> String {
        var lines = ICSContentLines()
        lines.append("BEGIN", "VCALENDAR")
        lines.append("VERSION", "2.0")
        lines.appendText("PRODID", productID)
        lines.append("CALSCALE", "GREGORIAN")
        lines.append("METHOD", "PUBLISH")
        lines.appendText("X-WR-CALNAME", name)
        let ttl = ICSDateText.duration(refreshInterval)
        lines.append("REFRESH-INTERVAL", [("VALUE", "DURATION")], ttl)
        lines.append("X-PUBLISHED-TTL", ttl)
        for zone in ICSTimeZoneCoverage.zones(for: events) {
            ICSTimeZoneComponent(timeZone: zone.timeZone, span: zone.span).write(into: &lines)
        }
        for event in events {
            ICSEventWriter(event: event).write(into: &lines)
        }
        lines.append("END", "VCALENDAR")
        return lines.rendered
    }
}
